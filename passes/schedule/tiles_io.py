"""Operands of the tile kernel: how each global reference is loaded under a configuration, and the expression
translator (canonical operator-layer expressions -> compute on this thread's registers).

A reference is loaded at the *block* level (it depends on no walked team axis and no in-team axis), the *team*
level (once per team point) or in the *sweeps* over the in-team axes. Along the tile axis it is a *tile* (its
last index is the tile axis: one region, a vector when allowed), an *element* gather (the tile axis elsewhere:
a scalar load per element), or a *scalar* broadcast over the tile. References that differ only by a constant
last index inside a small tile axis (RoPE's `x[..., 0]` and `x[..., 1]`) share one tile load.
"""
from __future__ import annotations

from gir import ir
from gir.passes.builtin.exprs import refs, var_names
from gir.passes.schedule.emit import C, V, add, fx, tile


def translate(e: ir.Expr, on_ref, on_var) -> ir.Expr:
    """Rebuild `e` top-down: references go to `on_ref` whole (their indices untouched), variables to `on_var`."""
    if isinstance(e, ir.Ref):
        return on_ref(e)
    if isinstance(e, ir.Var):
        return on_var(e)
    if isinstance(e, ir.BinOp):
        return ir.BinOp(e.op, translate(e.lhs, on_ref, on_var), translate(e.rhs, on_ref, on_var))
    if isinstance(e, ir.UnOp):
        return ir.UnOp(e.op, translate(e.operand, on_ref, on_var))
    if isinstance(e, ir.Call):
        return ir.Call(e.fn, tuple(translate(a, on_ref, on_var) for a in e.args))
    return e


def value_vars(e: ir.Expr) -> set[str]:
    """Variables used as values (not inside tensor indices)."""
    out: set[str] = set()
    translate(e, lambda r: r, lambda v: out.add(v.name) or v)
    return out


class Operand:
    """One global reference of the group under a configuration (see the module docstring)."""

    def __init__(self, k: int, ref: ir.Ref, kern, members: list[ir.Ref]):
        self.k, self.ref, self.kern, self.members = k, ref, kern, members
        a, cfg = kern.a, kern.c
        axes = var_names(ref) & set(a.axes)
        self.axes = axes
        sweep_axes = axes & set(a.inner) - ({cfg.tile} if cfg.tile and cfg.tile != cfg.lane else set())
        if sweep_axes:
            self.level = "sweep"
        elif axes & set(cfg.tloop):
            self.level = "team"
        else:
            self.level = "block" if cfg.tloop else "team"
        self.block_cached = bool(cfg.cache and cfg.tloop and self.level == "sweep" and not axes & set(cfg.tloop))
        last = ref.index[-1] if ref.index else None
        self.mode = "scalar"
        if cfg.tile is not None and cfg.tw > 1 and cfg.tile in axes:
            if isinstance(last, ir.Var) and last.name == cfg.tile and \
                    all(cfg.tile not in var_names(i) for i in ref.index[:-1]):
                self.mode = "tile"
            else:
                self.mode = "elem"

    @property
    def dtype(self) -> ir.DType:
        return self.kern.a.types[self.ref.name].dtype

    def width(self) -> int:
        return self.kern.c.tw if self.mode in ("tile", "elem") else 1

    def slots(self) -> int:
        cfg = self.kern.c
        if not cfg.cache or self.level != "sweep":
            return 1
        n = 1
        for _, trips in cfg.caps:
            n *= trips
        return n

    def used_in(self, exprs) -> bool:
        return any(m == x for e in exprs for x in refs(e) for m in self.members)

    def reg(self) -> str:
        return f"{self.kern.px}i{self.k}"

    def load(self, slot: ir.Expr) -> None:
        kern = self.kern
        B, w = kern.B, self.width()
        dst = f"{self.reg()}[{fx(slot)}, 0:{w}]"
        if self.mode == "tile" and kern.c.skew:
            kern.skew_load(self, slot)
        elif self.mode == "tile":
            text, _ = kern.region(self.ref.name, self.ref.index, w)
            vec = kern.vector_width(w, self.dtype)
            B(f"load {dst} <- {text} with {f'vec={vec}, ' if vec > 1 else ''}mask, other=0")
        elif self.mode == "elem":
            tx = kern.c.tile
            B.open(f"for _e in 0..{w}")
            saved = kern.pos[tx]
            kern.pos[tx] = add(saved, V("_e"))
            text, _ = kern.region(self.ref.name, self.ref.index, 1)
            kern.pos[tx] = saved
            B(f"load {self.reg()}[{fx(slot)}, _e:_e + 1] <- {text} with mask, other=0")
            B.close()
        else:
            text, _ = kern.region(self.ref.name, self.ref.index, 1)
            B(f"load {dst} <- {text}")

    def value(self, ref: ir.Ref) -> ir.Ref:
        """The register region standing for `ref` (this operand or one of the constant-index members)."""
        kern = self.kern
        slot = kern.slot_index if (kern.c.cache and self.level == "sweep") else C(0)
        if ref != self.ref and isinstance(ref.index[-1], ir.Const):  # one element of the shared tile
            c = ref.index[-1].value
            return tile(self.reg(), [slot, (C(c), 1)])
        return tile(self.reg(), [slot, (C(0), self.width())])


def operands(kern) -> list[Operand]:
    """The operands of the group under `kern`'s configuration, constant-index references merged into tiles."""
    a, cfg = kern.a, kern.c
    groups: dict = {}
    order: list = []
    for r in a.inputs:
        key = (r, )
        last = r.index[-1] if r.index else None
        shape = a.types[r.name].shape
        small = cfg.tile is not None and cfg.tile != cfg.lane and cfg.tw > 1 and shape and shape[-1] == cfg.tw
        const = isinstance(last, ir.Const) and isinstance(last.value, int) and not isinstance(last.value, bool) \
            and 0 <= last.value < cfg.tw
        whole = isinstance(last, ir.Var) and last.name == cfg.tile
        if small and (const or whole) and all(cfg.tile not in var_names(i) for i in r.index[:-1]):
            key = (r.name, r.index[:-1])
            if key not in groups:
                groups[key] = (ir.Ref(r.name, r.index[:-1] + (ir.Var(cfg.tile),)), [])
                order.append(key)
            groups[key][1].append(r)
            continue
        if key not in groups:
            groups[key] = (r, [r])
            order.append(key)
    out = []
    for key in order:
        ref, members = groups[key]
        if ref not in members:  # a merged tile: its own (tile-index) reference serves as well
            members = members + [ref]
        out.append(Operand(len(out), ref, kern, members))
    return out
