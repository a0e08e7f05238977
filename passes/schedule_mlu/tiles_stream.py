"""The stream kernel of the tile recipe (passes/schedule_mlu/tiles.py; planned by tiles_kernel.py), and the
combine kernel that finishes the partial results when T is cut into parts:

    stream (T walked in tiles of R rows; reductions over T accumulate in NRAM):
      for it_ in 0..units of this core {
        (unit operands loaded, accumulators set to the identity)
        for k_ in 0..tiles of the part { load; compute; accumulate; store }     # software-pipelined
        (the T % R tail tile with its exact size)
        store the accumulated results (or, with parts, their partials: a combine kernel finishes them)
      }
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.tiles import COL, CONST, ROW, Tiles
from gir.passes.schedule_mlu.tiles_axes import PlanRefused
from gir.passes.schedule_mlu.tiles_builder import (F32, IDENT, TASKS, KernelBuilder, Plan, _core_part, _kernel,
                                                   _prod, _unit_loop, decode_loops, region)


UNIT_ROWS = 4096   # per-row inputs of a unit up to this many rows are loaded once per unit (16 KiB of NRAM each)


def stream_kernel(t: Tiles, plan: Plan, name: str, tasks: int = TASKS, unit_inputs: bool = True) -> list:
    """Items of the stream schedule: T walked in tiles of R rows per unit, row reductions accumulated.
    `unit_inputs`: per-row inputs loaded once per unit (below); False: per tile (tiles_kernel.build's retry when
    their buffers keep the plan from fitting NRAM)."""
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
    own = persistent - set(core) - set(unit_ins)
    for n in dict.fromkeys(op.dst.name for op in t.ops if op.dst.name in own):   # program order (not set order)
        kind = next(op.dst.kind for op in t.ops if op.dst.name == n)
        kb.bufs.of[n] = kb.bufs.new(f"{n}_t", kind)
    for n in accs:
        kb.bufs.new(f"{n}_p", accs[n].dst.kind)
    kb.bufs.assign(tile_ops, pinned=persistent, keep={n for n in t.outputs if sc[n] == "tile"},
                   loaded={kb.bufs.of[n] for n in tile_ins})
    ntiles = -(-nt // R)
    full, tail = nt // R, nt % R
    tp = -(-ntiles // P)
    # per-row inputs (along T only) whose unit range is small: loaded once per unit into `<x>_u`, each tile copies
    # its rows on chip (an NRAM move of 30 cycles instead of a GDRAM load of 500: layernorm_bwd's mu and rstd)
    span = min(nt, tp * R)   # rows of T one unit walks (its part)
    whole = [n for n in tile_ins if unit_inputs and t.inputs[n] == ROW and t.dtype(n) == F32 and span <= UNIT_ROWS]
    for n in whole:
        kb.bufs.allocs[f"{n}_u"] = B.alloc(f"{n}_u", F32, (span, 1), "nram")
    parts_out = P > 1

    def tile_step(idx, t0, nr, l0, nw, u0=None) -> list:
        """One tile at row t0 (`u0`: its row within the unit's part, default t0)."""
        moves, comps, stores = [], [], []
        for n in tile_ins:
            if n in whole:
                moves.append(B.move("copy", region(kb.bufs.of[n], ROW, nr, nw), B.ref(
                    f"{n}_u", B.sl(t0 if u0 is None else u0, nr), B.sl(0, 1))))
                continue
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

        def whole_loads(rows: int) -> list:   # the part's rows of the per-row inputs
            base = B.mul(pv, tp * R) if P > 1 else B.c(0)
            return [B.move("load", B.ref(f"{n}_u", B.sl(0, rows), B.sl(0, 1)),
                           kb.gregion(n, idx, base, rows, l0, nw)) for n in whole]
        for op in unit_ops:
            out += kb.compute(op, R, nw)
        for n, op in accs.items():
            out.append(ir.Assign(kb.bufs.region(n, R, nw), B.c(IDENT[op.fn[1:]])))

        def loop(count):
            t0 = B.mul(B.add(B.mul(pv, tp), B.v("k_")), R) if P > 1 else B.mul(B.v("k_"), R)
            return [ir.For("k_", B.c(0), B.c(count), tuple(tile_step(idx, t0, R, l0, nw, B.mul(B.v("k_"), R))))] \
                if count else []
        rest = nt - (P - 1) * tp * R   # rows of the last part
        last = whole_loads(rest) + loop(full - (P - 1) * tp) + (tile_step(
            idx, B.c(nt - tail), tail, l0, nw, B.c(rest - tail)) if tail else [])
        if P == 1:
            out += last
        else:
            out.append(ir.If(ir.BinOp("==", pv, B.c(P - 1)), tuple(last), tuple(whole_loads(tp * R) + loop(tp))))
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
    PlanRefused otherwise (the rows are not split then)."""
    accs = {op.dst.name for op in t.accumulated}
    scale, name = 1.0, out
    defs = {op.dst.name: op for op in t.ops}
    while name not in accs:
        op = defs.get(name)
        if op is None:
            raise PlanRefused("a partial result is not a reduction")
        if op.fn == "copy" and op.args[0].kind != CONST:
            name = op.args[0].name
        elif op.fn == "mul" and op.args[1].kind == CONST:
            scale *= op.args[1].const
            name = op.args[0].name
        elif name == out and op.fn in ("r16", "rbf16") and \
                t.dtype(out) == (ir.DType.f16 if op.fn == "r16" else ir.DType.bf16):
            name = op.args[0].name   # rounding to the result's own type: the combine's store rounds it
        else:
            raise PlanRefused("a result computed from a reduction over split rows")
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
