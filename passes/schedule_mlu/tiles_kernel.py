"""Explicit MLU GIR for the tile recipe (passes/schedule_mlu/tiles.py): the kernels of a `Tiles` analysis.

    held (a unit's whole [T, W] slab is one tile; the loop over units is software-pipelined by the emitter
    through the one-trip loops that decode a unit, `with pipeline=units`):
      for it_ in 0..units of this core {                   # unit u = it_ * 32 + task_
        for b_ in u / chunks..u / chunks + 1 { for c_ in u % chunks..u % chunks + 1 {
          load x_t[0:T, 0:W] <- x[b_, 0:T, c_ * W:c_ * W + W]     # every operand of the unit
          ...three-address computes (column reductions for T, row reductions for the lanes)...
          store y[b_, 0:T, c_ * W:c_ * W + W] <- y_t[0:T, 0:W]
      } } }
      (a second loop for the units of the last, narrower lane chunk)

    stream (T walked in tiles of R rows; reductions over T accumulate in NRAM):
      for it_ in 0..units of this core {
        (unit operands loaded, accumulators set to the identity)
        for k_ in 0..tiles of the part { load; compute; accumulate; store }     # software-pipelined
        (the T % R tail tile with its exact size)
        store the accumulated results (or, with parts, their partials: a combine kernel finishes them)
      }

    slab (the [T, W] slab fits NRAM once, not in three pipeline slots): per unit, a pipelined loop loads the
    slab in sub-tiles of S rows (the first statistics computed as they land), the passes over the slab the
    reductions need run on chip, and a pipelined loop computes and stores the results in sub-tiles.

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
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.tiles import COL, CONST, FULL, ROW, SCAL, NotTile, Op, Tiles, Val, _has

F32 = ir.DType.f32
CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
IDENT = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}
NRAM_BUDGET = 720 * 1024        # of 768 KiB: what the emitter declares for the kernel (scratch tiles included)
LAT = 500e-9                    # one GDRAM DMA's latency (serialised on its core's IO pipe)
GDRAM_BW, CORE_BW = 307e9, 64e9
TASKS = 32


@dataclass(frozen=True)
class Plan:
    mode: str          # held | stream | slab
    W: int             # lanes per tile (chunk)
    R: int             # rows per tile (held: all of T; slab: rows per sub-tile)
    parts: int = 1     # stream: parts of T per (unit point, chunk)
    dense: bool = False   # NRAM tiles without row padding (kernel attribute layout=dense)


def _es(dt: ir.DType) -> int:
    return dt.nbytes


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
            h = self.bufs.new(f"r{dt.value}_", op.dst.kind, dt)
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


# ------------------------------------------------------------------------------------------------ held
def _unit_loop(var: str, units: int, tasks: int, offset: int, body_of) -> list:
    """A loop over this core's units among `units` (cyclic, continuing after `offset` units assigned before):
    `body_of(unit_expr)` gives its body."""
    if units <= 0:
        return []
    off = offset % tasks
    core = B.v("task_") if off == 0 else ir.BinOp("%", B.add(B.v("task_"), tasks - off), B.c(tasks))
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
    names = {n for n in t.inputs if sc[n] == "core"} | {op.dst.name for op in t.ops if sc[op.dst.name] == "core"}
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
    return moves, comps, names


def held_kernel(t: Tiles, plan: Plan, name: str, tasks: int = TASKS) -> list:
    """Items of the held schedule: one kernel, a unit's whole [T, W] slab per pipelined iteration."""
    kb = KernelBuilder(t, plan, name, tasks)
    sc = kb.scope
    cmoves, ccomps, core = _core_part(kb)
    ops = [op for op in t.ops if sc[op.dst.name] != "core"]
    ins = [n for n in t.inputs if sc[n] != "core"]
    for n in ins:
        kb.bufs.of[n] = kb.bufs.new(f"{n}_t", t.inputs[n])
    hoist = _hoisted(kb, ins)
    loaded = {kb.bufs.of[n] for n in ins if n not in hoist}
    kb.bufs.assign(ops, pinned=set(core), keep=set(t.outputs), loaded=loaded)
    nt = kb.nt
    gather = _gathered(kb)
    pre: list = []
    for n in hoist:   # small per-unit operands: the whole tensor once per core
        shape = tuple(t.axes.ext[x] for x in t.axes.dims[n])
        whole = (B.sl(0, shape[0]), B.sl(0, shape[1]))
        kb.bufs.allocs[f"{n}_a"] = B.alloc(f"{n}_a", t.dtype(n), shape, "nram")
        pre.append(B.move("load", B.ref(f"{n}_a", *whole), B.ref(n, *whole)))
        if t.dtype(n) != F32:
            kb.bufs.allocs[f"{n}_aw"] = B.alloc(f"{n}_aw", F32, shape, "nram")
            pre.append(ir.Assign(B.ref(f"{n}_aw", *whole), ir.Call("f32", (B.ref(f"{n}_a", *whole),))))

    def body(idx, l0, nw):
        moves, comps, stores = [], [], []
        for n in ins:
            if n in hoist:
                comps += _unhoist(kb, n, hoist[n], idx, nt, nw)
                continue
            m, c = kb.load(n, idx, B.c(0), nt, l0, nw)
            moves += m
            comps += c
        for op in ops:
            comps += kb.compute(op, nt, nw)
        for n in t.outputs:
            if n in gather:   # into the core's results, at this unit's position (stored after the loop)
                comps.append(ir.Assign(B.ref(f"{n}_g", B.v("it_"), B.c(0)), kb.bufs.region(n, nt, nw)))
                continue
            c, m = kb.store(n, idx, B.c(0), nt, l0, nw)
            comps += c
            stores += m
        return moves + comps + stores

    loops = unit_loops(kb, body)
    post: list = []
    for n, count in gather.items():   # one strided store per result: elements task_, task_ + 32, ...
        buf = kb.bufs.allocs.setdefault(f"{n}_g", B.alloc(f"{n}_g", F32, (max(2, count), 1), "nram")).name
        src = B.ref(buf, B.sl(0, count), B.c(0))
        dt = t.dtype(n)
        if dt != F32:
            h = kb.bufs.allocs.setdefault(f"{n}_gh", B.alloc(f"{n}_gh", dt, (max(2, count), 1), "nram")).name
            post.append(ir.Assign(B.ref(h, B.sl(0, count), B.sl(0, 1)),
                                  ir.Call(dt.value, (B.ref(buf, B.sl(0, count), B.sl(0, 1)),))))
            src = B.ref(h, B.sl(0, count), B.c(0))
        task = B.v("task_")
        post.append(B.move("store", B.ref(n, ir.Slice(task, B.add(task, tasks * (count - 1) + 1), tasks)), src))
    return [_kernel(name, tasks, list(kb.bufs.allocs.values()), cmoves + ccomps + pre + loops + post,
                    plan.dense, True)]


HOIST_BYTES = 16 * 1024


def _hoisted(kb: KernelBuilder, ins: list) -> dict:
    """{input: its unit axis}: per-unit [T, 1] / [W] operands of 2-D tensors [unit axis, T or lanes] small
    enough to load whole once per core (a unit's rows are then copied on chip: no 500-cycle DMA per unit)."""
    t = kb.t
    out = {}
    for n in ins:
        kind, dims = t.inputs[n], t.axes.dims[n]
        if len(dims) != 2 or dims[0] not in t.units:
            continue
        size = t.axes.ext[dims[0]] * t.axes.ext[dims[1]] * 4
        if size > HOIST_BYTES:
            continue
        if (kind == ROW and dims[1] == t.row and kb.nt <= 64) or (kind == COL and dims[1] == t.lane and kb.chunks == 1):
            out[n] = dims[0]
    return out


def _unhoist(kb: KernelBuilder, n: str, axis, idx: dict, nt: int, nw: int) -> list:
    """This unit's rows of hoisted input `n` (its unit axis index idx[axis]) into the input's tile."""
    t = kb.t
    src = f"{n}_aw" if t.dtype(n) != F32 else f"{n}_a"
    dst = kb.bufs.of[n]
    if t.inputs[n] == COL:
        return [ir.Assign(B.ref(dst, B.sl(0, nw)), B.ref(src, idx[axis], B.sl(0, nw)))]
    r = B.v("r_")   # [T, 1] from a row of the [U, T] tile: element copies
    return [ir.For("r_", B.c(0), B.c(nt), (ir.Assign(B.ref(dst, B.sl(r, 1), B.sl(0, 1)),
                                                      B.ref(src, idx[axis], B.sl(r, 1))),))]


def _gathered(kb: KernelBuilder) -> dict:
    """{result: units per core}: per-unit scalar results of a 1-D tensor over the one unit axis, when every
    core has the same number of units: kept in NRAM and stored once per core (elements task_, task_ + 32, ...)
    instead of one 4-byte DMA (500 cycles) per unit."""
    t = kb.t
    units = _prod([t.axes.ext[a] for a in t.units])
    if kb.chunks != 1 or len(t.units) != 1 or units % kb.tasks or t.n_lanes % kb.p.W:
        return {}
    return {n: units // kb.tasks for n, k in t.outputs.items() if k == SCAL and t.axes.dims[n] == (t.units[0],)}


def unit_loops(kb: KernelBuilder, body) -> list:
    """The loops over this core's units of a held schedule; `body(idx, l0, nw)` is one unit's loads, computes and
    stores (idx: unit axis -> index, l0: first lane, nw: lanes). Units (a point of the unit axes, a chunk of
    lanes) go cyclically to the cores; one-trip loops decode a unit's indices, so region starts stay affine, and
    the emitter pipelines the loop over units through them (codegen/mlu/emit.py). The narrower last chunk of
    lanes (lanes % W) has a loop of its own, its units cyclic after the others'."""
    t, W, tasks = kb.t, kb.p.W, kb.tasks
    radix = [(a, t.axes.ext[a]) for a in t.units]
    nu = _prod([e for _, e in radix])
    cm, tail = t.n_lanes // W, t.n_lanes % W

    def main(unit):
        return decode_loops(kb, unit, radix + [("chunk", cm)],
                            lambda idx: body(idx, B.mul(idx["chunk"], W), W))

    def narrow(unit):
        return decode_loops(kb, unit, radix, lambda idx: body(idx, B.c(cm * W), tail))
    return _unit_loop("it_", nu * cm, tasks, 0, main) + (_unit_loop("iu_", nu, tasks, nu * cm, narrow) if tail else [])


# ------------------------------------------------------------------------------------------------ stream
def stream_kernel(t: Tiles, plan: Plan, name: str, tasks: int = TASKS) -> list:
    """Items of the stream schedule: T walked in tiles of R rows per unit, row reductions accumulated."""
    kb = KernelBuilder(t, plan, name, tasks)
    sc = kb.scope
    cmoves, ccomps, core = _core_part(kb)
    R, W, P, nt = plan.R, plan.W, plan.parts, kb.nt
    unit_ops = [op for op in t.ops if sc[op.dst.name] == "unit"]
    tile_ops = [op for op in t.ops if sc[op.dst.name] == "tile" or op in t.accumulated]   # in program order
    acc_ops = [op for op in t.ops if sc[op.dst.name] == "acc"]
    accs = {op.dst.name: op for op in t.accumulated}
    unit_ins = [n for n in t.inputs if sc[n] == "unit"]
    tile_ins = [n for n in t.inputs if sc[n] == "tile"]
    persistent = set(core) | set(unit_ins) | {op.dst.name for op in unit_ops + acc_ops}
    for n in unit_ins + tile_ins:
        kb.bufs.of[n] = kb.bufs.new(f"{n}_t", t.inputs[n])
    for n in persistent - set(core) - set(unit_ins):
        kind = next(op.dst.kind for op in t.ops if op.dst.name == n)
        kb.bufs.of[n] = kb.bufs.new(f"{n}_t", kind)
    for n in accs:
        kb.bufs.new(f"{n}_p", accs[n].dst.kind)
    kb.bufs.assign(tile_ops, pinned=persistent, keep={n for n in t.outputs if sc[n] == "tile"},
                   loaded={kb.bufs.of[n] for n in tile_ins})
    ntiles = -(-nt // R)
    full, tail = nt // R, nt % R
    tp = -(-ntiles // P)
    parts_out = P > 1

    def tile_step(idx, t0, nr, l0, nw) -> list:
        moves, comps, stores = [], [], []
        for n in tile_ins:
            m, c = kb.load(n, idx, t0, nr, l0, nw)
            moves += m
            comps += c
        for op in tile_ops:
            if op.dst.name not in accs:
                comps += kb.compute(op, nr, nw)
                continue
            n = op.dst.name     # accumulated: reduce this tile, combine with the unit's running value
            src = kb.bufs.region(op.args[0].name, nr, nw)
            part = region(f"{n}_p", op.dst.kind, nr, nw)
            acc = kb.bufs.region(n, nr, nw)
            red = op.fn[1:]
            comps.append(ir.Assign(part, ir.Reduce(red, src, (0,))))
            comps.append(ir.Assign(acc, ir.BinOp("+", acc, part) if red == "sum" else ir.Call(red, (acc, part))))
        for n in t.outputs:
            if sc[n] == "tile":
                c, m = kb.store(n, idx, t0, nr, l0, nw)
                comps += c
                stores += m
        return moves + comps + stores

    def unit_body(unit, nw, chunk) -> list:
        radix = [(a, t.axes.ext[a]) for a in t.units] + [("chunk", chunk[0]), ("part", P)]
        return decode_loops(kb, unit, radix, lambda idx: unit_steps(idx, nw, chunk))

    def unit_steps(idx, nw, chunk) -> list:
        l0 = B.mul(idx["chunk"], W) if chunk[0] > 1 else B.c(chunk[1] * W)
        pv = idx["part"]
        out: list = []
        for n in unit_ins:
            m, c = kb.load(n, idx, B.c(0), R, l0, nw)
            out += m + c
        for op in unit_ops:
            out += kb.compute(op, R, nw)
        for n, op in accs.items():
            out.append(ir.Assign(kb.bufs.region(n, R, nw), B.c(IDENT[op.fn[1:]])))

        def loop(count):
            t0 = B.mul(B.add(B.mul(pv, tp), B.v("k_")), R) if P > 1 else B.mul(B.v("k_"), R)
            return [ir.For("k_", B.c(0), B.c(count), tuple(tile_step(idx, t0, R, l0, nw)))] if count else []
        last = loop(full - (P - 1) * tp) + (tile_step(idx, B.c(nt - tail), tail, l0, nw) if tail else [])
        if P == 1:
            out += last
        else:
            out.append(ir.If(ir.BinOp("==", pv, B.c(P - 1)), tuple(last), tuple(loop(tp))))
        for op in acc_ops:
            if op.dst.name not in accs:
                out += kb.compute(op, R, nw)
        for n in t.outputs:
            if sc[n] == "tile":
                continue
            if parts_out:
                out.append(B.move("store", B.ref(f"{name}_{n}_part", pv, B.sl(l0, nw) if t.outputs[n] == COL
                                                 else B.sl(0, 1)),
                                  region(kb.bufs.of[_accum_of(t, n)], t.outputs[n], R, nw)))
            else:
                c, m = kb.store(n, idx, B.c(0), R, l0, nw)
                out += c + m
        return out

    nu = _prod([t.axes.ext[a] for a in t.units])
    full_chunks = kb.chunks if kb.wl == W else kb.chunks - 1
    loops = _unit_loop("it_", nu * full_chunks * P, tasks, 0, lambda u: unit_body(u, W, (full_chunks, 0)))
    if kb.wl != W:
        loops += _unit_loop("iu_", nu * P, tasks, nu * full_chunks * P,
                            lambda u: unit_body(u, kb.wl, (1, kb.chunks - 1)))
    items: list = []
    if parts_out:
        for n in t.outputs:
            if sc[n] != "tile":
                x = kb.nl if t.outputs[n] == COL else 1
                items.append(B.alloc(f"{name}_{n}_part", F32, (P, x), "gdram"))
    allocs = list(kb.bufs.allocs.values())
    items.append(_kernel(name, tasks, allocs, cmoves + ccomps + loops, plan.dense))
    if parts_out:
        for n in t.outputs:
            if sc[n] != "tile":
                items.append(_combine(t, n, name, P, tasks))
    return items


def _accum_of(t: Tiles, out: str) -> str:
    """The accumulator a partial result `out` is: the reduction itself (its scale is applied by the combine)."""
    return _chain(t, out)[0]


def _chain(t: Tiles, out: str) -> tuple[str, float]:
    """(accumulator, scale) with out = scale * accumulator through copies and constant multiplications;
    NotTile otherwise."""
    accs = {op.dst.name for op in t.accumulated}
    scale, name = 1.0, out
    defs = {op.dst.name: op for op in t.ops}
    while name not in accs:
        op = defs.get(name)
        if op is None:
            raise NotTile("a partial result is not a reduction")
        if op.fn == "copy" and op.args[0].kind != CONST:
            name = op.args[0].name
        elif op.fn == "mul" and op.args[1].kind == CONST:
            scale *= op.args[1].const
            name = op.args[0].name
        else:
            raise NotTile("a result computed from a reduction over split rows")
    return name, scale


def _combine(t: Tiles, out: str, name: str, P: int, tasks: int) -> ir.Kernel:
    """Combines the P partials of result `out` (a reduction over T, split in parts) per chunk of lanes."""
    acc, scale = _chain(t, out)
    red = next(op.fn[1:] for op in t.accumulated if op.dst.name == acc)
    kind = t.outputs[out]
    x = t.n_lanes if kind == COL else 1
    dc = min(x, max(L.PITCH, min(L.round_up(-(-x // tasks), L.PITCH), (64 * 1024) // (P * 4) // L.PITCH * L.PITCH)))
    chunks = -(-x // dc)
    dl = x - (chunks - 1) * dc
    dt = t.dtype(out)
    part = f"{name}_{out}_part"

    def steps(c0, w):
        pt = B.ref("p_t", B.sl(0, P), B.sl(0, w))
        o = B.ref("o_t", B.sl(0, w))
        res = [B.move("load", pt, B.ref(part, B.sl(0, P), B.sl(c0, w))), ir.Assign(o, ir.Reduce(red, pt, (0,)))]
        if scale != 1.0:
            res.append(ir.Assign(o, ir.BinOp("*", o, B.c(scale))))
        src = o
        if dt != F32:
            h = B.ref("o_h", B.sl(0, w))
            res.append(ir.Assign(h, ir.Call(dt.value, (o,))))
            src = h
        dst = ir.Ref(out, (B.sl(c0, w),)) if kind == COL else ir.Ref(out, ())
        return res + [B.move("store", dst, src)]

    def body(unit):
        if chunks == 1:
            return steps(B.c(0), x)
        c0 = B.mul(unit, dc)
        if dl == dc:
            return steps(c0, dc)
        return [ir.If(ir.BinOp("==", unit, B.c(chunks - 1)), tuple(steps(c0, dl)), tuple(steps(c0, dc)))]
    allocs = [B.alloc("p_t", F32, (P, max(2, dc)), "nram"), B.alloc("o_t", F32, (max(2, dc),), "nram")]
    if dt != F32:
        allocs.append(B.alloc("o_h", dt, (max(2, dc),), "nram"))
    return _kernel(f"{name}_{out}_combine", tasks, allocs, _unit_loop("it_", chunks, tasks, 0, body), False)


# ------------------------------------------------------------------------------------------------ planning
def _lane_reduced(t: Tiles) -> bool:
    return any(op.fn in ("lsum", "lmax", "lmin") for op in t.ops)


def lane_candidates(t: Tiles) -> list[int]:
    nl = t.n_lanes
    if _lane_reduced(t) or nl <= 32:
        return [nl]
    return sorted({32} | {w for w in range(64, min(nl, 8192) + 1, 64)} | ({nl} if nl <= 8192 else set()))


def _bytes(t: Tiles, kinds, nr: int, nw: int) -> tuple[int, int]:
    """(GDRAM bytes, DMA count) of moving the tensors of the given kinds for a tile of nr rows and nw lanes."""
    total, count = 0, 0
    for name, kind in list(t.inputs.items()) + list(t.outputs.items()):
        if kind not in kinds:
            continue
        ht, hl = _has(kind)
        n = (nr if ht else 1) * (nw if hl else 1) * _es(t.dtype(name))
        total += max(n, 64)
        count += 1
    return total, count


def estimate(t: Tiles, plan: Plan, tasks: int = TASKS) -> float:
    """Seconds of the busiest core: its GDRAM bytes at its share of the bandwidth plus its DMA latencies."""
    nu = _prod([t.axes.ext[a] for a in t.units])
    chunks = -(-t.n_lanes // plan.W)
    units = nu * chunks * plan.parts
    active = min(tasks, units)
    bw = min(CORE_BW, GDRAM_BW / active)
    per_core = -(-units // tasks)
    if plan.mode == "held":
        b, n = _bytes(t, (FULL, ROW, COL, SCAL), t.n_rows, plan.W)
        return per_core * (b / bw + n * LAT)
    if plan.mode == "slab":   # the sub-tiles' DMAs, and per unit two sub-tiles' compute not hidden by IO
        b, n = _bytes(t, (FULL, ROW, COL, SCAL), t.n_rows, plan.W)
        ft, _ = _bytes(t, (FULL, ROW), plan.R, plan.W)
        subs = -(-t.n_rows // plan.R)
        tiles = sum(1 for k in list(t.inputs.values()) + list(t.outputs.values()) if _has(k)[0])
        return per_core * (b / bw + (n + (subs - 1) * tiles) * LAT + 2 * ft / bw) * 1.05
    rows = -(-t.n_rows // plan.parts)
    tiles = -(-rows // plan.R)
    bt, nt = _bytes(t, (FULL, ROW), plan.R, plan.W)
    bu, nu_ = _bytes(t, (COL, SCAL), plan.R, plan.W)
    return per_core * (tiles * (bt / bw + nt * LAT) + bu / bw + nu_ * LAT + 2e-6)


def footprint(t, items: list) -> int:
    """The largest NRAM bytes per core of the kernels of `items`, laid out as the BANG-C emitter does
    (codegen/mlu/emit.py; passes do not import it): every @nram tile times its pipeline slots, 128-byte
    aligned, plus the float scratch tiles the vector forms of its computes use. tests/mlu_compile/
    test_mlu_tiles.py checks that this is never below what the emitter declares."""
    return max((_kernel_nram(k) for k in items if isinstance(k, ir.Kernel)), default=0)


def _kernel_nram(k: ir.Kernel) -> int:
    attrs = dict(k.attrs)
    dense, through = attrs.get("layout") == "dense", attrs.get("pipeline") == "units"
    allocs: dict[str, ir.Alloc] = {}
    slots: dict[str, int] = {}
    assigns: list = []

    def walk(stmts):
        for x in stmts:
            if isinstance(x, ir.Alloc) and x.level == ir.Level.nram:
                allocs[x.name] = x
            elif isinstance(x, ir.Parallel):
                walk(x.body)
            elif isinstance(x, ir.For):
                body = _unwrapped(x, through)
                if _pipelinable(x, body):
                    for name, d in _slot_depths(x.var, body).items():
                        slots[name] = max(slots.get(name, 1), d)
                walk(x.body)
            elif isinstance(x, ir.If):
                walk(x.then + x.orelse)
            elif isinstance(x, ir.Assign):
                assigns.append(x)
    walk(k.body)

    def shape(name):
        return tuple(allocs[name].type.shape)

    def is_dense(name):
        sh = shape(name)
        return dense and len(sh) == 2 and not L.is_rowvec(sh)

    def phys(name):
        sh = shape(name)
        return L.round_up(sh[0] * sh[1], L.PITCH) if is_dense(name) else L.phys_elems(sh)

    def pitch(name):
        return shape(name)[-1] if is_dense(name) else L.pitch(shape(name))

    def opd(e):
        """(kind, length, cols, pitch) of an operand as the emitter classifies it."""
        if not isinstance(e, ir.Ref) or e.name not in allocs:
            return ("const", 0, 0, 0)
        sh = shape(e.name)
        lens = [_slice_len(i) if isinstance(i, ir.Slice) else 1 for i in e.index]
        if len(sh) == 1 and sh[0] == 1 or (all(n == 1 for n in lens) and len(sh) == 1 and sh[0] == 1):
            return ("scalar", 1, 1, 1)
        if L.is_rowvec(sh):
            return ("row", phys(e.name), 1, 1)
        if len(sh) == 1:
            return ("col", phys(e.name), lens[0], 1)
        if not isinstance(e.index[0], ir.Slice):
            return ("col", pitch(e.name), lens[1], 1)
        start = e.index[0].start
        if not (isinstance(start, ir.Const) and start.value == 0):
            return ("full", L.round_up(lens[0] * pitch(e.name), L.PITCH), lens[1], pitch(e.name))
        return ("full", phys(e.name), lens[1], pitch(e.name))

    scratch: set = set()
    vec = ("full", "row", "col")
    for a in assigns:
        dst = opd(a.target)
        v = a.value
        if isinstance(v, ir.Reduce):
            src = opd(v.arg)
            if src[0] == "full" and v.axes == (1,) and src[2] != src[3]:
                scratch |= {(0, src[1]), (1, src[1]), ("mask", src[1]), ("maskrow", src[3])}
        elif isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3:
            ops = [opd(x) for x in v.args]
            zero = isinstance(v.args[2], ir.Const) and float(v.args[2].value) == 0.0 and ops[1][0] != "const"
            for j, o in enumerate(ops):
                if not zero and o[0] != dst[0]:
                    scratch.add((j, dst[1]))
        elif isinstance(v, (ir.BinOp, ir.Call)) and len(getattr(v, "args", (0, 0))) == 2 and \
                (isinstance(v, ir.BinOp) or v.fn in ("max", "min", "pow")):
            x, y = (v.lhs, v.rhs) if isinstance(v, ir.BinOp) else v.args
            ka, kb = opd(x)[0], opd(y)[0]
            fn = v.op if isinstance(v, ir.BinOp) else v.fn
            if ka in vec and kb in vec and not (ka == kb == dst[0]):
                pair = {ka, kb}
                cyc = fn in ("+", "-", "*", "/", "max", "min")
                if not ((pair == {"full", "col"} and cyc) or (pair == {"full", "row"} and fn != "pow")):
                    scratch.add((0, dst[1]))
            elif fn == "pow":
                scratch.add((0, dst[1]))
        elif isinstance(v, ir.Call) and v.fn == "reverse":
            scratch.add((0, opd(v.args[0])[1]))
    total = sum(L.round_up(phys(n) * slots.get(n, 1) * L.device_nbytes(a.type.dtype), L.VECTOR_ALIGN)
                for n, a in allocs.items())
    return total + sum(L.round_up(n * 4, L.VECTOR_ALIGN) for _, n in scratch)


def _slice_len(i: ir.Slice) -> int:
    from gir.affine import to_affine
    a, b = to_affine(i.start), to_affine(i.stop)
    n = (b - a).const if a is not None and b is not None else 1
    return -(-n // i.step)


def _unwrapped(f: ir.For, through: bool):
    body = f.body
    while through and len(body) == 1 and isinstance(body[0], ir.For) and _is_one_trip(body[0]):
        body = body[0].body
    return body


def _is_one_trip(f: ir.For) -> bool:
    return isinstance(f.hi, ir.BinOp) and f.hi.op == "+" and f.hi.lhs == f.lo and \
        isinstance(f.hi.rhs, ir.Const) and f.hi.rhs.value == 1


def _pipelinable(f: ir.For, body) -> bool:
    """What the emitter pipelines: loads (and copies of loaded tiles), then computes, then stores."""
    phase, loaded, moved = 0, set(), False
    for x in body:
        if isinstance(x, ir.Move) and x.kind == "load":
            p, moved = 0, True
            loaded.add(x.dst.name)
        elif isinstance(x, ir.Move) and x.kind == "copy" and x.src.name in loaded:
            p = 0
        elif isinstance(x, ir.Assign) or (isinstance(x, ir.For) and x.body and
                                          all(isinstance(y, ir.Assign) for y in x.body)):
            p = 1
        elif isinstance(x, ir.Move) and x.kind == "store":
            p, moved = 2, True
        else:
            return False
        if p < phase:
            return False
        phase = p
    return moved and f.step == 1 and isinstance(f.lo, ir.Const) and f.lo.value == 0


def _slot_depths(var: str, body) -> dict:
    from gir.affine import to_affine

    def advancing(ref):
        if not ref.index or not isinstance(ref.index[0], ir.Slice):
            return False
        a = to_affine(ref.index[0].start)
        return a is not None and a.coeffs.get(var, 0) >= _slice_len(ref.index[0])
    moves = [(x.dst if x.kind in ("load", "copy") else x.src, x.kind) for x in body
             if isinstance(x, ir.Move) and x.kind in ("load", "copy", "store")]
    fixed = {r.name for r, _ in moves if not advancing(r)}
    loaded = {r.name for r, k in moves if k in ("load", "copy")} & fixed
    stored = {r.name for r, k in moves if k == "store"} & fixed
    return {n: 3 if n in loaded and n in stored else 2 for n in loaded | stored}


def build(t: Tiles, name: str, tasks: int = TASKS, nram: int = NRAM_BUDGET) -> tuple[list, Plan]:
    """The items (kernels, GDRAM temporaries) of the cheapest plan whose tiles fit NRAM."""
    cands: list[Plan] = []
    nu = _prod([t.axes.ext[a] for a in t.units])
    for w in lane_candidates(t):
        if t.held:
            cands.append(Plan("held", w, t.n_rows, dense=w % 64 == 32))
            for sub in (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048):
                if sub < t.n_rows and sub * w >= 2048:   # sub-tiles of 8 KiB and more (DMA latencies)
                    cands.append(Plan("slab", w, sub, dense=w % 64 == 32))
            continue
        chunks = -(-t.n_lanes // w)
        split = not t.units and all(t.outputs[n] in (COL, SCAL) for n in t.outputs if _scope_out(t, n) != "tile")
        rs = sorted({min(t.n_rows, 1 << k) for k in range(0, 13)} | {t.n_rows})
        for r in rs:
            ntiles = -(-t.n_rows // r)
            p = 1
            if split and t.accumulated and nu * chunks < tasks:
                p = min(ntiles, -(-tasks // (nu * chunks)))
                p = -(-ntiles // -(-ntiles // p))
            if not t.accumulated or split or p == 1:
                cands.append(Plan("stream", w, r, p, dense=w % 64 == 32))
    cands = [pl for pl in cands if _lower_bound(t, pl) <= nram]
    cands.sort(key=lambda pl: (estimate(t, pl, tasks), -pl.W, -pl.R))
    tried = 0
    for pl in cands:
        items = {"held": held_kernel, "stream": stream_kernel, "slab": slab_kernel}[pl.mode](t, pl, name, tasks)
        tried += 1
        if footprint(t, items) <= nram:
            return items, pl
        if tried > 60:
            break
    raise NotTile("no tile of the recipe fits NRAM")


def _lower_bound(t: Tiles, pl: Plan) -> int:
    """NRAM bytes any kernel of the plan needs at least: its largest tile (held: in two pipeline slots)."""
    pitch = pl.W if pl.dense or pl.W % L.PITCH == 0 else L.round_up(pl.W, L.PITCH)
    rows = t.n_rows if pl.mode in ("held", "slab") else pl.R
    return rows * pitch * 4 * (2 if pl.mode == "held" else 1)


def _scope_out(t: Tiles, n: str) -> str:
    return "tile" if _has(t.outputs[n])[0] else "unit"


# ------------------------------------------------------------------------------------------------ slab
TRED = ("tsum", "tmax", "tmin")


def levels(t: Tiles) -> tuple[dict, dict]:
    """(value -> pass, op dst -> online partner): the pass over the slab that computes each value (inputs 0; a
    reduction over the rows finishes after its operand's pass, so its result is one pass later), with the online
    softmax rewrite: s = sum(exp(A - m)) with m = max(A) over the rows accumulates in m's pass, rescaled when
    m grows (s = s * exp(m_old - m_new) + sum(exp(A_k - m_new)) per sub-tile)."""
    defs = {op.dst.name: op for op in t.ops}
    online: dict = {}
    for op in t.ops:
        if op.fn != "tsum" or op.args[0].kind != FULL:
            continue
        e = defs.get(op.args[0].name)
        d = defs.get(e.args[0].name) if e is not None and e.fn == "exp" and e.args[0].kind == FULL else None
        m = defs.get(d.args[1].name) if d is not None and d.fn == "sub" and d.args[1].kind != CONST else None
        if m is not None and m.fn == "tmax" and m.args[0] == d.args[0] and m.dst.kind == op.dst.kind:
            online[op.dst.name] = (m.dst.name, d.args[0].name)
    lv: dict = {n: 0 for n in t.inputs}
    for op in t.ops:
        args = [lv[a.name] for a in op.args if a.kind != CONST]
        lv[op.dst.name] = max(args, default=0) + (1 if op.fn in TRED else 0)
        if op.dst.name in online:
            lv[op.dst.name] = lv[online[op.dst.name][0]]
    return lv, online


def slab_kernel(t: Tiles, plan: Plan, name: str, tasks: int = TASKS) -> list:
    """Items of the slab schedule: per unit, the [T, W] slab in NRAM once, passes over it in sub-tiles of S rows:
    pass 0 loads (pipelined), the last stores (pipelined)."""
    kb = KernelBuilder(t, plan, name, tasks)
    sc = kb.scope
    S, W, nt = plan.R, plan.W, kb.nt
    lv, online = levels(t)
    core_moves, core_comps, core = _core_part(kb)
    # ops whose values are needed (the online sum recomputes its operand in the pass of the max)
    needed = set(t.outputs)
    for op in reversed(t.ops):
        if op.dst.name in needed and op.dst.name not in online:
            needed |= {a.name for a in op.args if a.kind != CONST}
        if op.dst.name in needed and op.dst.name in online:
            needed.add(online[op.dst.name][1])
    ops = [op for op in t.ops if op.dst.name in needed]
    tdep = {n for n, k in list(t.inputs.items()) + [(op.dst.name, op.dst.kind) for op in ops] if _has(k)[0]}
    # which pass reads each value (T-dependent values read in a later pass than their own live in the slab)
    passes: dict[str, set] = {}
    for op in ops:
        if op.dst.name in online:
            continue
        p = lv[op.dst.name] - (1 if op.fn in TRED else 0)
        for a in op.args:
            if a.kind != CONST:
                passes.setdefault(a.name, set()).add(p)
    for n in t.outputs:
        passes.setdefault(n, set()).add(lv[n])
    npass = 1 + max((lv[n] for n in tdep), default=0)
    slab = {n for n in tdep if max(passes.get(n, {0}), default=0) > lv[n]}
    skip = set(online)   # accumulated online, in the pass of their max
    accs = {op.dst.name: op for op in ops if op.fn in TRED}
    # buffers: core values (own), unit-level T-free values (own), slab values (slab tiles by pass liveness),
    # sub-tile values (per pass, by liveness)
    bufs = kb.bufs
    slabs = Buffers(t, L.round_up(nt, S), W)   # whole sub-tiles: a tail sub-tile's ops stay inside the slab
    for n in t.inputs:
        if sc[n] == "core":
            continue
        if n in slab:
            bufs.of[n] = slabs.new(f"{n}_s", t.inputs[n])
        else:
            bufs.of[n] = bufs.new(f"{n}_t", t.inputs[n])
    free_slabs: list = []
    last_pass = {n: max(passes.get(n, {lv.get(n, 0)})) for n in slab}
    # execution order: (pass, op index); a slab value computed by the op that reads another for the last time
    # takes its slab (in place, sub-tile by sub-tile)
    def when(i, op):
        return (lv[op.dst.name] - (1 if op.fn in TRED else 0), i)
    last_read: dict = {}
    for i, op in enumerate(ops):
        if op.dst.name in online:
            continue
        for a in op.args:
            if a.kind != CONST:
                last_read[a.name] = max(last_read.get(a.name, (-1, -1)), when(i, op))
    for n in t.outputs:
        last_read[n] = (npass + 1, 0)
    defs = {op.dst.name: (i, op) for i, op in enumerate(ops)}
    for p in range(npass):
        for n in sorted(n for n in slab if n not in bufs.of and lv[n] == p):
            kind = next(op.dst.kind for op in ops if op.dst.name == n)
            i, op = defs[n]
            inplace = [a.name for a in op.args if a.kind == kind and a.name in slab and a.name in bufs.of and
                       last_read.get(a.name) == when(i, op) and bufs.of[a.name] not in free_slabs]
            pool = [b for b in free_slabs if slabs.kind[b] == kind]
            if inplace:
                bufs.of[n] = bufs.of[inplace[0]]
                last_pass[inplace[0]] = -1   # (its slab now holds n)
            elif pool:
                bufs.of[n] = pool[0]
                free_slabs.remove(pool[0])
            else:
                bufs.of[n] = slabs.new(f"{n}_s", kind)
        for n in slab:
            if n in bufs.of and last_pass[n] == p and n not in t.outputs and bufs.of[n] not in free_slabs:
                free_slabs.append(bufs.of[n])
    for n in slabs.allocs:
        bufs.allocs[n] = slabs.allocs[n]
        bufs.kind[n] = slabs.kind[n]
    for op in ops:
        d = op.dst
        if not _has(d.kind)[0] and d.name not in core and d.name not in bufs.of:
            bufs.of[d.name] = bufs.new(f"{d.name}_t", d.kind)
    for n, op in accs.items():
        bufs.new(f"{n}_p", op.dst.kind)
    slab_bufs = set(slabs.allocs)
    pinned = set(bufs.of)
    for p in range(npass):
        seq = [op for op in ops if _has(op.dst.kind)[0] and lv[op.dst.name] == p and op.dst.name not in pinned]
        seq_keep = {n for n in t.outputs if lv.get(n) == p}
        bufs.assign(seq, pinned=pinned - {n for n in pinned if n in t.inputs and n not in slab}, keep=seq_keep,
                    loaded={bufs.of[n] for n in t.inputs if n in bufs.of and n not in slab})
        pinned |= {op.dst.name for op in seq if op.dst.name in slab}

    def raw(n, k0, nr, nw):
        buf = bufs.of[n]
        return region(buf, bufs.kind[buf], nr, nw, k0 if buf in slab_bufs else 0)

    def reg(n, k0, nr, nw):
        """Operand / destination region: [R, 1] slab values go through a sub-tile copy (`{buf}_r`): vector forms
        read row vectors from their start only."""
        buf = bufs.of[n]
        if buf in slab_bufs and bufs.kind[buf] == ROW:
            return region(bufs.new(f"{buf}_r", ROW), ROW, nr, nw)
        return raw(n, k0, nr, nw)

    def row_slabs(p, reads: bool) -> set:
        """[R, 1] slab values read (or computed) by pass p's ops."""
        out = set()
        for op in ops:
            if reads:
                here = (op.fn in TRED and lv[op.dst.name] - 1 == p and op.dst.name not in skip) or \
                    (_has(op.dst.kind)[0] and lv[op.dst.name] == p and op.fn not in TRED)
                names = [a.name for a in op.args if a.kind != CONST] if here else []
            else:
                names = [op.dst.name] if _has(op.dst.kind)[0] and lv[op.dst.name] == p and op.fn not in TRED else []
            out |= {x for x in names if x in bufs.of and bufs.of[x] in slab_bufs and bufs.kind[bufs.of[x]] == ROW}
        if reads:
            out |= {n for n in t.outputs if lv[n] == p and n in bufs.of and bufs.of[n] in slab_bufs and
                    bufs.kind[bufs.of[n]] == ROW}
        return out

    def arg_of(k0, nr, nw):
        return lambda a: B.c(a.const) if a.kind == CONST else reg(a.name, k0, nr, nw)

    def between(p, nw) -> list:
        """T-free computes finishing pass p - 1's reductions (and the prologue's for p == 0)."""
        out = []
        for op in ops:
            if _has(op.dst.kind)[0] or op.dst.name in core or lv[op.dst.name] != p or op.fn in TRED:
                continue
            if op.dst.name in accs:
                continue
            out += kb.compute(op, S, nw)
        return out

    def step(p, idx, k0, nr, l0, nw) -> list:
        moves, comps, stores = [], [], []
        if p == 0:
            for n in t.inputs:
                if sc[n] != "tile":
                    continue
                dt = t.dtype(n)
                dst = raw(n, k0, nr, nw)
                src = kb.gregion(n, idx, k0, nr, l0, nw)
                if dt == F32:
                    moves.append(B.move("load", dst, src))
                else:
                    land = bufs.new(f"{n}_h", t.inputs[n], dt)
                    lreg = region(land, t.inputs[n], nr, nw)
                    moves.append(B.move("load", lreg, src))
                    wide = reg(n, k0, nr, nw)   # an [R, 1] slab: widened in a sub-tile tile, then copied
                    comps.append(ir.Assign(wide, ir.Call("f32", (lreg,))))
                    if wide != dst:
                        comps.append(ir.Assign(dst, wide))
        arg = arg_of(k0, nr, nw)
        for n in sorted(row_slabs(p, True)):   # this sub-tile's rows of [R, 1] slab values, into sub-tile tiles
            comps.append(ir.Assign(reg(n, k0, nr, nw), raw(n, k0, nr, nw)))
        for op in ops:
            n = op.dst.name
            if op.fn in TRED and lv[n] - 1 == p and n not in skip:
                part = region(f"{n}_p", op.dst.kind, nr, nw)
                acc = reg(n, k0, nr, nw)
                red = op.fn[1:]
                comps.append(ir.Assign(part, ir.Reduce(red, arg(op.args[0]), (0,))))
                if n in [m for m, _ in online.values()]:
                    s_name = next(s for s, (m, _) in online.items() if m == n)
                    comps += _online_step(kb, bufs, t, n, s_name, online[s_name][1], part, acc, arg, nr, nw)
                else:
                    comps.append(ir.Assign(acc, ir.BinOp("+", acc, part) if red == "sum"
                                           else ir.Call(red, (acc, part))))
            elif _has(op.dst.kind)[0] and lv[n] == p and op.fn not in TRED:
                if op.fn == "copy" and op.args[0].kind != CONST and arg(op.args[0]) == reg(n, k0, nr, nw):
                    continue
                comps += _compute_at(kb, op, arg, reg(n, k0, nr, nw), nr, nw)
        for n in sorted(row_slabs(p, False)):   # [R, 1] values computed here, into their slab rows
            comps.append(ir.Assign(raw(n, k0, nr, nw), reg(n, k0, nr, nw)))
        for n in t.outputs:
            if _has(t.outputs[n])[0] and lv[n] == p:
                src = raw(n, k0, nr, nw)
                dt = t.dtype(n)
                if dt != F32:
                    h = bufs.new(f"{n}_o", t.outputs[n], dt)
                    hreg = region(h, t.outputs[n], nr, nw)
                    comps.append(ir.Assign(hreg, ir.Call(dt.value, (src,))))
                    src = hreg
                if t.outputs[n] == ROW:
                    src = B.ref(src.name, src.index[0], B.c(0))
                stores.append(B.move("store", kb.gregion(n, idx, k0, nr, l0, nw), src))
        return moves + comps + stores

    full, tail = nt // S, nt % S

    def unit(idx, l0, nw) -> list:
        out = []
        for n in t.inputs:
            if sc[n] == "unit":
                m, c = kb.load(n, idx, B.c(0), S, l0, nw)
                out += m + c
        for n, op in accs.items():
            out.append(ir.Assign(reg(n, 0, S, nw), B.c(IDENT[op.fn[1:]])))
        for p in range(npass):
            out += between(p, nw)
            if full:
                kv = f"k{p}_"
                out.append(ir.For(kv, B.c(0), B.c(full), tuple(step(p, idx, B.mul(B.v(kv), S), S, l0, nw))))
            if tail:
                out += step(p, idx, B.c(nt - tail), tail, l0, nw)
        out += between(npass, nw)
        for n in t.outputs:
            if not _has(t.outputs[n])[0]:
                c, m = kb.store(n, idx, B.c(0), S, l0, nw)
                out += c + m
        return out

    radix = [(a, t.axes.ext[a]) for a in t.units]
    nu = _prod([e for _, e in radix])
    cm, wl = t.n_lanes // W, t.n_lanes % W
    loops = _unit_loop("it_", nu * cm, tasks, 0, lambda u: decode_loops(
        kb, u, radix + [("chunk", cm)], lambda idx: unit(idx, B.mul(idx["chunk"], W), W)))
    if wl:
        loops += _unit_loop("iu_", nu, tasks, nu * cm, lambda u: decode_loops(
            kb, u, radix, lambda idx: unit(idx, B.c(cm * W), wl)))
    return [_kernel(name, tasks, list(bufs.allocs.values()), core_moves + core_comps + loops, plan.dense)]


def _compute_at(kb: KernelBuilder, op: Op, arg, dst, nr: int, nw: int) -> list:
    """`op` on a sub-tile whose operands and destination regions `arg` / `dst` give (16-bit rounding: through
    a 16-bit tile)."""
    if op.fn in ("r16", "rbf16"):
        dt = ir.DType.f16 if op.fn == "r16" else ir.DType.bf16
        h = kb.bufs.new(f"r{dt.value}_", op.dst.kind, dt)
        hreg = region(h, op.dst.kind, nr, nw)
        src = arg(op.args[0])
        pre = []
        if op.args[0].kind != op.dst.kind:
            pre, src = [ir.Assign(dst, src)], dst
        return pre + [ir.Assign(hreg, ir.Call(dt.value, (src,))), ir.Assign(dst, ir.Call("f32", (hreg,)))]
    if op.fn in ("lsum", "lmax", "lmin"):
        return [ir.Assign(dst, ir.Reduce(op.fn[1:], arg(op.args[0]), (1,) if op.args[0].kind == FULL else (0,)))]
    return [ir.Assign(dst, op_value(op, arg))]


def _online_step(kb, bufs, t, m: str, s: str, a: str, part, acc, arg, nr, nw) -> list:
    """The running max m and the rescaled running sum s of exp(A - m) after one more sub-tile (`part` holds the
    sub-tile's max): m_new = max(m, part); s = s * exp(m - m_new) + sum(exp(A_k - m_new)); m = m_new."""
    kind = t.outputs.get(m) or next(op.dst.kind for op in t.ops if op.dst.name == m)
    mn = region(bufs.new(f"{m}_n", kind), kind, nr, nw)
    scale = region(bufs.new(f"{m}_c", kind), kind, nr, nw)
    e = region(bufs.new("onl_e", FULL), FULL, nr, nw)
    ps = region(f"{s}_p", kind, nr, nw)
    sacc = region(bufs.of[s], bufs.kind[bufs.of[s]], nr, nw)
    return [ir.Assign(mn, ir.Call("max", (acc, part))),
            ir.Assign(scale, ir.BinOp("-", acc, mn)),
            ir.Assign(scale, ir.Call("exp", (scale,))),
            ir.Assign(sacc, ir.BinOp("*", sacc, scale)),
            ir.Assign(e, ir.BinOp("-", arg(Val(FULL, a)), mn)),
            ir.Assign(e, ir.Call("exp", (e,))),
            ir.Assign(ps, ir.Reduce("sum", e, (0,))),
            ir.Assign(sacc, ir.BinOp("+", sacc, ps)),
            ir.Assign(acc, mn)]
