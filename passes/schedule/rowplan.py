"""Analysis of a row group for the fused row kernel (passes/schedule/rows.py emits it).

Full-rank intermediates are inlined; reductions become *slots* (accumulators), and a slot whose argument
needs an earlier row statistic goes to a later *phase*. Input references are classified per lane
access: `vec` (consecutive along the innermost column), `inv` (independent of it) or `elem` (gathers),
and `broadcast` when independent of the row dims (gamma[j]).
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.affine import free_vars, to_affine
from gir.shapes import FuncInfo, _walk
from gir.passes.schedule import halo
from gir.passes.schedule.emit import V, prod_expr, subst
from gir.passes.schedule.groups import Group, cvar
from gir.passes.schedule.kinds import BOOL, F32, kind_of


@dataclass(frozen=True)
class RowConfig:
    threads: int          # threads per row team (a multiple of the warp size)
    rows_per_block: int   # > 1: one warp per row, this many warps per block
    vec: int              # elements per lane access
    cached: int           # chunks of the row kept in registers (0: re-read every phase)
    persistent: int = 0   # > 0: this many blocks loop over the rows (grid-stride)
    split: int = 0        # > 0: each row is split across this many blocks (partials kernel + final kernel)
    inner: int = 0        # rows with two column dims (C0, C1) cached: chunks per C1 row (cached = C0 cap x inner)
    shift: int = 0        # > 0: lanes shifted back by the row's skew mod `shift` elements (passes/schedule/shift.py)
    residues: tuple = ()  # ((size, residue mod shift), ...): the specialisation guards of a shifted kernel
    halo: bool = False    # stage tensors read at several column offsets through shared memory (halo.py)
    outer: bool = False   # split: the blocks share the outermost of several column dims (grid-stride), each walking
                          # whole innermost rows, instead of chunks of the innermost one


def staged_rows(cfg: RowConfig, warp: int) -> bool:
    """Whether per-row scalar operands (label[i]) go through shared memory: block teams of several warps
    load them once per row (one thread, one sector) instead of once per warp."""
    return cfg.rows_per_block == 1 and cfg.threads // warp > 1 and not cfg.split


@dataclass
class ColRef:
    ref: ir.Ref
    mode: str             # vec | inv | elem
    dtype: ir.DType
    broadcast: bool       # independent of the row dims (gamma[j])
    align_ext: ir.Dim | None  # the tensor's last extent (vector alignment needs ext % vec == 0)
    aligned_offset: bool


class RowAnalysis:
    """What a row group computes: inlined full values, reduction slots and their phases, inputs."""

    def __init__(self, group: Group, info: FuncInfo, stores: set[str], warp: int):
        self.g, self.info, self.warp = group, info, warp
        self.types = info.types
        self.cin = cvar(len(group.C) - 1)
        self.cin_ext = group.C[-1]
        self.count = prod_expr(group.C)
        self.full: dict[str, ir.Expr] = {}
        self.rowdefs: list[tuple[str, ir.Expr]] = []
        for st, ren in zip(group.stmts, group.renames):
            env = {v: V(c) for v, c in ren.items()}
            val = subst(st.stmt.value, env)
            if len(st.out_vars) == len(group.R) + len(group.C):
                self.full[st.stmt.target.name] = val
            else:
                self.rowdefs.append((st.stmt.target.name, val))
        self.full_stores = [n for n in self.full if n in stores]
        self.row_stores = [n for n, _ in self.rowdefs if n in stores]
        self.slots: list[tuple[str, ir.Expr, ir.DType]] = []
        self.rowexprs: dict[str, ir.Expr] = {}
        self.rowdeps: dict[str, set[str]] = {}
        rownames = {n for n, _ in self.rowdefs}
        self.rownames = rownames
        for name, val in self.rowdefs:
            self.rowexprs[name] = self._slotify(val)
        # phases
        self.slot_phase: list[int] = []
        ready: dict[str, int] = {}
        slot_deps = [self._rowrefs(a) for _, a, _ in self.slots]
        for name, _ in self.rowdefs:
            e = self.rowexprs[name]
            r = 0
            for x in _walk(e):
                if isinstance(x, ir.Ref) and x.name.startswith("@a"):
                    s = int(x.name[2:])
                    while len(self.slot_phase) <= s:
                        k = len(self.slot_phase)
                        self.slot_phase.append(max([ready[d] for d in slot_deps[k]], default=0))
                    r = max(r, self.slot_phase[s] + 1)
                elif isinstance(x, ir.Ref) and x.name in rownames:
                    r = max(r, ready[x.name])
            ready[name] = r
        self.ready = ready
        self.nphases = max(self.slot_phase, default=-1) + 1
        # input references
        self.colrefs: list[ColRef] = []
        self.rowrefs: list[ir.Ref] = []
        exprs = [a for _, a, _ in self.slots] + [self._inline(self.full[n]) for n in self.full_stores] + \
            list(self.rowexprs.values())
        for e in exprs:
            for x in _walk(e):
                if isinstance(x, ir.Ref) and x.name in self.types and x.name not in rownames \
                        and x.name not in self.full and not x.name.startswith("@"):
                    self._add_input(x)
        self.halos = halo.groups(self)

    # ---------------------------------------------------------------- analysis
    def _inline(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Ref) and e.name in self.full:
            return self._inline(self.full[e.name])
        if isinstance(e, ir.Ref):
            return e
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, self._inline(e.lhs), self._inline(e.rhs))
        if isinstance(e, ir.UnOp):
            return ir.UnOp(e.op, self._inline(e.operand))
        if isinstance(e, ir.Call):
            return ir.Call(e.fn, tuple(self._inline(a) for a in e.args))
        if isinstance(e, ir.Reduce):
            return ir.Reduce(e.op, self._inline(e.arg), e.axes)
        return e

    def _slotify(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Reduce):
            arg = self._inline(e.arg)
            if any(isinstance(x, ir.Reduce) for x in _walk(arg)):
                raise _Unsupported("nested reduction")
            acc = kind_of(e, self.types)
            acc = F32 if acc == BOOL else acc
            self.slots.append((e.op, arg, acc))
            ref = ir.Ref(f"@a{len(self.slots) - 1}", ())
            return ir.BinOp("/", ref, self.count) if e.op == "mean" else ref
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, self._slotify(e.lhs), self._slotify(e.rhs))
        if isinstance(e, ir.UnOp):
            return ir.UnOp(e.op, self._slotify(e.operand))
        if isinstance(e, ir.Call):
            return ir.Call(e.fn, tuple(self._slotify(a) for a in e.args))
        return e

    def _rowrefs(self, e: ir.Expr) -> set[str]:
        return {x.name for x in _walk(e) if isinstance(x, ir.Ref) and x.name in self.rownames}

    def _add_input(self, x: ir.Ref) -> None:
        names = set().union(*[free_vars(i) for i in x.index]) if x.index else set()
        cvars = {v for v in names if v.startswith("_c")}
        dt = self.types[x.name].dtype
        if not cvars:
            if x not in self.rowrefs:
                self.rowrefs.append(x)
            return
        if any(c.ref == x for c in self.colrefs):
            return
        last = to_affine(x.index[-1])
        others = set().union(*[free_vars(i) for i in x.index[:-1]]) if len(x.index) > 1 else set()
        mode = "elem"
        aligned = False
        if self.cin not in names:
            mode = "inv"
        elif last is not None and last.coeffs.get(self.cin) == 1 and self.cin not in others:
            mode = "vec"
            rest = last - ir_aff(self.cin)
            aligned = rest.const == 0 and not rest.coeffs
        broadcast = not any(v.startswith("_r") for v in names)
        self.colrefs.append(ColRef(x, mode, dt, broadcast, self.types[x.name].shape[-1], aligned))

    def uses_cin_value(self, e: ir.Expr) -> bool:
        """Whether the innermost column variable is used as a value (not only as a tensor index)."""
        def walk(x):
            if isinstance(x, ir.Var):
                return x.name == self.cin
            if isinstance(x, ir.Ref):
                return False
            kids = [x.lhs, x.rhs] if isinstance(x, ir.BinOp) else [x.operand] if isinstance(x, ir.UnOp) else \
                list(x.args) if isinstance(x, ir.Call) else [x.arg] if isinstance(x, ir.Reduce) else []
            return any(walk(k) for k in kids)
        return walk(e)

    def reg_words(self, cfg: RowConfig) -> int:
        """32-bit registers per thread for the row cache (the dominant term)."""
        n = max(cfg.cached, 1)
        words = 0
        for c in self.colrefs:
            w = 1 if c.mode == "inv" else cfg.vec
            k = cfg.cached // cfg.inner if (c.mode == "inv" and cfg.inner) else n
            words += k * max(1, w * c.dtype.nbytes // 4)
        return words + 4 * len(self.slots) + 2 * cfg.vec + 16

    # ---------------------------------------------------------------- emission
class _Unsupported(Exception):
    pass


def ir_aff(name: str):
    from gir.affine import Affine
    return Affine({name: 1}, 0)
