"""The held kernel of the tile recipe (passes/schedule_mlu/tiles.py; planned by tiles_kernel.py):

    held (a unit's whole [T, W] slab is one tile; the loop over units is software-pipelined by the emitter
    through the one-trip loops that decode a unit, `with pipeline=units`):
      for it_ in 0..units of this core {                   # unit u = it_ * 32 + task_
        for b_ in u / chunks..u / chunks + 1 { for c_ in u % chunks..u % chunks + 1 {
          load x_t[0:T, 0:W] <- x[b_, 0:T, c_ * W:c_ * W + W]     # every operand of the unit
          ...three-address computes (column reductions for T, row reductions for the lanes)...
          store y[b_, 0:T, c_ * W:c_ * W + W] <- y_t[0:T, 0:W]
      } } }
      (a second loop for the units of the last, narrower lane chunk)

Small per-unit operands of 2-D tensors are loaded whole once per core; per-unit scalar results of a 1-D tensor
are kept per core and stored once (a 4-byte DMA per unit costs 500 cycles of the core's IO pipe).
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.tiles import COL, ROW, SCAL, Tiles
from gir.passes.schedule_mlu.tiles_builder import (F32, TASKS, KernelBuilder, Plan, _core_part, _kernel, _prod,
                                                   _unit_loop, decode_loops)


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
