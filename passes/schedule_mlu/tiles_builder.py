"""Shared parts of the tile recipe's kernels (passes/schedule_mlu/tiles.py): the `Plan` a kernel is built for,
the scope of every value, its NRAM tiles, the `KernelBuilder` (GDRAM regions, loads, stores, computes) and the
loops over a core's work units. The kernels: tiles_held.py, tiles_slab.py, tiles_stream.py; the planning that
picks one: tiles_kernel.py.

Values live in NRAM tiles by kind: full [R, W], row [R, 1], col [W], scalar [1]; temporaries share tiles by
liveness, computed in place where an operand dies. Lane chunks of 32 f32 elements use `with layout=dense` (rows
not padded to 64 elements: a [4096, 32] slab is 512 KiB, not 1 MiB). Region starts are affine in loop variables
(points may be quasi-affine); every size is static, so tails take their exact size. Small per-unit operands of
2-D tensors are loaded whole once per core; per-unit scalar results of a 1-D tensor are kept per core and
stored once (a 4-byte DMA per unit costs 500 cycles of the core's IO pipe).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.tiles import COL, CONST, FULL, ROW, SCAL, Op, Tiles, Val, _has

F32 = ir.DType.f32
CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
IDENT = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}
TASKS = 32


@dataclass(frozen=True)
class Plan:
    mode: str          # held | stream | slab
    W: int             # lanes per tile (chunk)
    R: int             # rows per tile (held: all of T; slab: rows per sub-tile)
    parts: int = 1     # stream: parts of T per (unit point, chunk); slab: cores sharing a unit (4 or all)
    dense: bool = False   # NRAM tiles without row padding (kernel attribute layout=dense)
    head: int = 0      # slab shared by a cluster: the first `head` units (whole rounds) one per core in a kernel
    #                    before the slabs the clusters share (tiles_slab.py)
    q: int = 1         # slab: sub-tiles per DMA (a block of q * R rows loaded and stored at once, computed by R)


# ------------------------------------------------------------------------------------------------ scopes
def scopes(t: Tiles, chunks: int) -> dict[str, str]:
    """value name -> 'core' (once per core), 'unit' (per unit, before the rows), 'tile' (per tile of rows) or
    'acc' (stream: accumulated over the rows, and what is computed from accumulated values)."""
    out: dict[str, str] = {}
    for name, kind in t.inputs.items():
        out[name] = _scope(t, name, kind, chunks)
    accs = {op.dst.name for op in t.accumulated}
    for op in t.ops:
        d = op.dst
        if d.name in accs or any(out.get(a.name) == "acc" for a in op.args if a.kind != CONST):
            out[d.name] = "acc"
        else:
            out[d.name] = _scope(t, d.name, d.kind, chunks)
            inner = [out[a.name] for a in op.args if a.kind != CONST]
            if out[d.name] == "core" and any(s != "core" for s in inner):
                out[d.name] = "unit"
    return out


def _scope(t: Tiles, name: str, kind: str, chunks: int) -> str:
    ht, hl = _has(kind)
    if ht:
        return "tile"
    if t.vals.get(name) or (hl and chunks > 1):
        return "unit"
    return "core"


# ------------------------------------------------------------------------------------------------ buffers
def rounding_tile(dt: ir.DType, kind: str) -> str:
    """The 16-bit tile a value is rounded through (`f16(...)` inside an expression), one per element type and
    tile kind: a program rounding a full tile and a column vector needs two (one name with two shapes was a
    rank error)."""
    return f"r{dt.value}_" if kind == FULL else f"r{dt.value}_{kind}_"


# ------------------------------------------------------------------------------------------------ buffers
class Buffers:
    """NRAM tiles of one kernel: one buffer per (scope, value), temporaries of a scope shared by liveness."""

    def __init__(self, t: Tiles, R: int, W: int):
        self.t, self.R, self.W = t, R, W
        self.allocs: dict[str, ir.Alloc] = {}
        self.of: dict[str, str] = {}          # value name -> buffer name
        self.kind: dict[str, str] = {}        # buffer name -> kind

    def shape(self, kind: str) -> tuple:
        return {FULL: (self.R, max(2, self.W)), ROW: (self.R, 1), COL: (max(2, self.W),), SCAL: (1,)}[kind]

    def new(self, name: str, kind: str, dt: ir.DType = F32) -> str:
        if name not in self.allocs:
            self.allocs[name] = B.alloc(name, dt, self.shape(kind), "nram")
            self.kind[name] = kind
        return name

    def assign(self, ops: list[Op], pinned: set[str], keep: set[str], loaded: set[str]) -> None:
        """Buffers for the values of `ops` (in order): `pinned` values get their own buffer; the others reuse
        the tiles of values that died (in place when an operand dies at the op); `keep`: values live to the
        end of the sequence (results to store, values read later)."""
        last: dict[str, int] = {}
        for k, op in enumerate(ops):
            for a in op.args:
                if a.kind != CONST:
                    last[a.name] = k
        free: dict[str, list[str]] = {}
        for k, op in enumerate(ops):
            d = op.dst
            dying = []
            for a in sorted({x.name for x in op.args if x.kind != CONST}):
                if last.get(a) == k and a not in keep and a not in pinned and a in self.of and a != d.name:
                    buf = self.of[a]
                    if buf not in [self.of.get(x) for x in keep | pinned]:
                        free.setdefault(self.kind[buf], []).append(buf)
                        if self.kind[buf] == d.kind:
                            dying.append(buf)
            if d.name in self.of:
                continue
            pool = free.get(d.kind, [])
            if d.name in pinned or d.kind in (SCAL,):
                self.of[d.name] = self.new(f"{d.name}_t", d.kind)
            elif dying and op.fn not in ("r16", "rbf16"):
                self.of[d.name] = dying[0]
                pool.remove(dying[0])
            elif pool:
                pick = next((b for b in pool if b in loaded), pool[-1]) if d.name in keep else pool[-1]
                self.of[d.name] = pick
                pool.remove(pick)
            else:
                self.of[d.name] = self.new(f"b{len(self.allocs)}_", d.kind)

    def region(self, name: str, nr: int, nw: int) -> ir.Ref:
        """The region of value `name` for a tile of `nr` rows and `nw` lanes."""
        buf = self.of[name]
        return region(buf, self.kind[buf], nr, nw)


def region(buf: str, kind: str, nr: int, nw: int, r0=0) -> ir.Ref:
    if kind == FULL:
        return B.ref(buf, B.sl(r0, nr), B.sl(0, nw))
    if kind == ROW:
        return B.ref(buf, B.sl(r0, nr), B.sl(0, 1))
    if kind == COL:
        return B.ref(buf, B.sl(0, nw))
    return B.ref(buf, B.sl(0, 1))


def op_value(op: Op, arg) -> ir.Expr:
    """The explicit-layer expression of `op` over operand regions (`arg(Val)`)."""
    args = [arg(a) for a in op.args]
    fn = op.fn
    if fn == "copy":
        return args[0]
    if fn in ARITH:
        return ir.BinOp(ARITH[fn], *args)
    if fn in CMP:
        return ir.BinOp(CMP[fn], *args)
    if fn in ("max", "min", "pow"):
        return ir.Call(fn, tuple(args))
    if fn == "neg":
        return ir.UnOp("-", args[0])
    return ir.Call(fn, tuple(args))


# ------------------------------------------------------------------------------------------------ builder
class KernelBuilder:
    def __init__(self, t: Tiles, plan: Plan, name: str, tasks: int = TASKS):
        self.t, self.p, self.name, self.tasks = t, plan, name, tasks
        self.nl, self.nt = t.n_lanes, t.n_rows
        self.chunks = -(-self.nl // plan.W)
        self.wl = self.nl - (self.chunks - 1) * plan.W
        self.scope = scopes(t, self.chunks)
        self.bufs = Buffers(t, plan.R, plan.W)

    # ------------------------------------------------------------ gdram regions
    def gregion(self, name: str, idx: dict, t0, nr: int, l0, nw: int) -> ir.Ref:
        out = []
        for a in self.t.axes.dims[name]:
            if a == self.t.row:
                out.append(B.sl(t0, nr))
            elif a == self.t.lane:
                out.append(B.sl(l0, nw))
            else:
                out.append(idx[a])
        return ir.Ref(name, tuple(out))

    def decode(self, unit, radix: list) -> dict:
        return decode(unit, radix)

    # ------------------------------------------------------------ loads / stores / computes
    def load(self, name: str, idx: dict, t0, nr: int, l0, nw: int) -> tuple[list, list]:
        """(moves, computes) that bring input `name` into its tile (16-bit: landing tile + widening)."""
        kind = self.t.inputs[name]
        buf = self.bufs.of[name]
        dst = region(buf, kind, nr, nw)
        src = self.gregion(name, idx, t0, nr, l0, nw)
        dt = self.t.dtype(name)
        if dt == F32:
            return [B.move("load", dst, src)], []
        land = self.bufs.new(f"{name}_h", kind, dt)
        lreg = region(land, kind, nr, nw)
        return [B.move("load", lreg, src)], [ir.Assign(dst, ir.Call("f32", (lreg,)))]

    def store(self, name: str, idx: dict, t0, nr: int, l0, nw: int, value: str | None = None) -> tuple[list, list]:
        """(computes, moves) that store result `name` from the tile of value `value` (default: itself)."""
        kind = self.t.outputs[name]
        src = self.bufs.region(value or name, nr, nw)
        dt = self.t.dtype(name)
        pre = []
        if dt != F32:
            h = self.bufs.new(f"{name}_o", kind, dt)
            hreg = region(h, kind, nr, nw)
            pre.append(ir.Assign(hreg, ir.Call(dt.value, (src,))))
            src = hreg
        if kind == ROW:
            src = B.ref(src.name, B.sl(0, nr), B.c(0))
        return pre, [B.move("store", self.gregion(name, idx, t0, nr, l0, nw), src)]

    def compute(self, op: Op, nr: int, nw: int) -> list:
        """Explicit computes of `op` on tiles of `nr` rows, `nw` lanes (tile-level reductions included)."""
        def arg(a: Val):
            return B.c(a.const) if a.kind == CONST else self.bufs.region(a.name, nr, nw)
        dst = self.bufs.region(op.dst.name, nr, nw)
        fn = op.fn
        if fn == "copy" and op.args[0].kind != CONST and arg(op.args[0]) == dst:
            return []
        if fn in ("r16", "rbf16"):
            dt = ir.DType.f16 if fn == "r16" else ir.DType.bf16
            h = self.bufs.new(rounding_tile(dt, op.dst.kind), op.dst.kind, dt)
            hreg = region(h, op.dst.kind, nr, nw)
            src = arg(op.args[0])
            if op.args[0].kind != op.dst.kind:
                pre = [ir.Assign(dst, src)]
                src = dst
            else:
                pre = []
            return pre + [ir.Assign(hreg, ir.Call(dt.value, (src,))), ir.Assign(dst, ir.Call("f32", (hreg,)))]
        if fn[1:] in IDENT and fn[0] in "lt":
            axis = 1 if fn[0] == "l" and op.args[0].kind == FULL else 0
            return [ir.Assign(dst, ir.Reduce(fn[1:], arg(op.args[0]), (axis,)))]
        return [ir.Assign(dst, op_value(op, arg))]


def _prod(xs) -> int:
    return math.prod(xs) if xs else 1


# ------------------------------------------------------------------------------------------------ units
def _unit_loop(var: str, units: int, tasks: int, offset: int, body_of, task: str | ir.Expr | None = "task_") -> list:
    """A loop over this core's units among `units` (cyclic, continuing after `offset` units assigned before):
    `body_of(unit_expr)` gives its body. `task`: the variable (or expression) numbering the `tasks` workers (a
    cluster's `cl_` when a unit is shared by the cores of a cluster; None: every core walks every unit)."""
    if units <= 0:
        return []
    if task is None:
        return [ir.For(var, B.c(0), B.c(units), tuple(body_of(B.v(var))))]
    off = offset % tasks
    task = B.v(task) if isinstance(task, str) else task
    core = task if off == 0 else ir.BinOp("%", B.add(task, tasks - off), B.c(tasks))
    unit = B.add(B.mul(B.v(var), tasks), core)
    trips = ir.BinOp("//", B.add(ir.BinOp("-", B.c(units), core), tasks - 1), B.c(tasks))
    return [ir.For(var, B.c(0), trips, tuple(body_of(unit)))]


def decode(unit, radix: list) -> dict:
    """{axis or tag: index expression} of unit number `unit` over `radix` [(key, extent)], last fastest."""
    out, div, total = {}, 1, 1
    for _, e in radix:
        total *= e
    for key, e in reversed(radix):
        x = unit if div == 1 else ir.BinOp("//", unit, B.c(div))
        if div * e < total:
            x = ir.BinOp("%", x, B.c(e))
        out[key] = x if e > 1 else B.c(0)
        div *= e
    return out


def decode_loops(kb, unit, radix: list, make_body) -> list:
    """`make_body(idx)` inside one-trip loops that decode unit number `unit` over `radix` [(key, extent)] (last
    fastest): idx maps each key to its loop variable (affine in region starts), or 0 for extents of 1."""
    exprs = decode(unit, radix)
    idx, loops = {}, []
    for k, (key, e) in enumerate(radix):
        if e == 1:
            idx[key] = B.c(0)
        else:
            idx[key] = B.v(f"u{k}_")
            loops.append((f"u{k}_", exprs[key]))
    body = make_body(idx)
    for var, x in reversed(loops):
        body = [ir.For(var, x, B.add(x, 1), tuple(body))]
    return body


def _kernel(name: str, tasks: int, allocs, body, dense: bool, units: bool = False) -> ir.Kernel:
    """`dense`: 2-D tiles without row padding (`layout=dense`); `units`: the loops over work units are pipelined
    through their decoding one-trip loops (`pipeline=units`; codegen/mlu/emit.py)."""
    par = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(allocs) + tuple(body))
    attrs = (("task_dim", str(tasks)),) + ((("layout", "dense"),) if dense else ()) + \
        ((("pipeline", "units"),) if units else ())
    return ir.Kernel(name, (par,), attrs)


def _core_part(kb: KernelBuilder) -> tuple[list, list, set]:
    """Loads and computes of the core-scope values (once per core, before any loop); their value names."""
    t, sc = kb.t, kb.scope
    # in program order (inputs, then ops): buffers are declared in this order, the same in every process
    names = list(dict.fromkeys([n for n in t.inputs if sc[n] == "core"] +
                               [op.dst.name for op in t.ops if sc[op.dst.name] == "core"]))
    for n in names:
        kind = t.inputs.get(n) or next(op.dst.kind for op in t.ops if op.dst.name == n)
        kb.bufs.of[n] = kb.bufs.new(f"{n}_t", kind)
    moves, comps = [], []
    zero = {a: B.c(0) for a in t.units}
    for n in t.inputs:
        if sc[n] == "core":
            m, c = kb.load(n, zero, B.c(0), kb.p.R, B.c(0), kb.nl if kb.chunks == 1 else kb.p.W)
            moves += m
            comps += c
    for op in t.ops:
        if sc[op.dst.name] == "core":
            comps += kb.compute(op, kb.p.R, kb.p.W if kb.chunks > 1 else kb.nl)
    return moves, comps, set(names)
