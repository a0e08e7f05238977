"""The slab kernel of the tile recipe (passes/schedule_mlu/tiles.py; planned by tiles_kernel.py):

    slab (the [T, W] slab fits NRAM once, not in three pipeline slots): per unit, a pipelined loop loads the
    slab in sub-tiles of S rows (the first statistics computed as they land), the passes over the slab the
    reductions need run on chip, and a pipelined loop computes and stores the results in sub-tiles.

`levels` gives the pass over the slab that computes each value (with the online softmax rewrite).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.tiles import COL, CONST, FULL, ROW, SCAL, Op, Tiles, Val, _has
from gir.passes.schedule_mlu.longrows import ONLINE_MAX_START
from gir.passes.schedule_mlu.tiles_axes import PlanRefused
from gir.passes.schedule_mlu.tiles_kept import block_row, kept_exp, kept_exps, record
from gir.passes.schedule_mlu.tiles_cluster import CORE, CORES, Combine, cluster_kernel, shared_rows, sub_tiles
from gir.passes.schedule_mlu.tiles_builder import (F32, IDENT, TASKS, Buffers, KernelBuilder, Plan, _core_part,
                                                   _kernel, _prod, _unit_loop, decode_loops, op_value, region,
                                                   rounding_tile)


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


def slab_kernel(t: Tiles, plan: Plan, name: str, tasks: int = TASKS, span: tuple | None = None) -> list:
    """Items of the slab schedule: per unit, the [T, W] slab in NRAM once, passes over it in sub-tiles of S rows:
    pass 0 loads (pipelined), the last stores (pipelined). `plan.head`: two kernels, the first `head` units one
    per core, then the rest in slabs a cluster shares (`{name}_rest`); `span`: (first, end) of the units this
    kernel does (whole lane chunks only)."""
    if plan.head:
        return slab_kernel(t, dataclasses.replace(plan, parts=1, head=0), name, tasks, (0, plan.head)) + \
            slab_kernel(t, dataclasses.replace(plan, head=0), f"{name}_rest", tasks, (plan.head, None))
    kb = KernelBuilder(t, plan, name, tasks)
    sc = kb.scope
    S, W, nt = plan.R, plan.W, kb.nt
    D = S * plan.q   # rows per DMA: blocks of q sub-tiles (the computes stay sub-tile by sub-tile)
    cores = plan.parts   # > 1: the cores of a cluster (all cores: `grid`) share a unit's slab (tiles_cluster.py)
    grid = cores == tasks
    # the number of a core among those sharing a unit (grid: the task's, cl_ * cores + co_)
    cvar = B.add(B.mul(B.v("cl_"), CORES), B.v(CORE)) if grid else B.v(CORE)
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
    # online sums whose exponentials A's slab keeps for the last pass (tiles_kept.py): `d = A - m` not computed
    kept = kept_exps(ops, online, lv, npass, slab, set(t.outputs)) if plan.q == 1 else {}
    kept_e = {k.e: k for k in kept.values()}
    dropped = {k.d for k in kept.values()}
    accs = {op.dst.name: op for op in ops if op.fn in TRED}
    # buffers: core values (own), unit-level T-free values (own), slab values (slab tiles by pass liveness),
    # sub-tile values (per pass, by liveness)
    bufs = kb.bufs
    # whole sub-tiles (a tail sub-tile's ops stay inside the slab); shared: this core's sub-tiles
    slabs = Buffers(t, shared_rows(nt, D, cores) if cores > 1 else L.round_up(nt, D), W)
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
    for k in kept.values():   # e in A's slab; the running maxima, a row per sub-tile of the slab
        bufs.of[k.e] = bufs.of[k.a]
        rows = shared_rows(nt, D, cores) if cores > 1 else L.round_up(nt, D)
        bufs.allocs[k.hist] = B.alloc(k.hist, F32, (rows // S, max(2, W)), "nram")
        bufs.kind[k.hist] = FULL
    for op in ops:
        d = op.dst
        if not _has(d.kind)[0] and d.name not in core and d.name not in bufs.of:
            bufs.of[d.name] = bufs.new(f"{d.name}_t", d.kind)
    for n, op in accs.items():
        bufs.new(f"{n}_p", op.dst.kind)
    slab_bufs = set(slabs.allocs)
    pinned = set(bufs.of)
    for p in range(npass):
        # the ops pass p runs, in order (its reductions and slab values too: a value they read is live until
        # then -- `select(x > 1.5, -1.0, x)` into a slab had the comparison computed into x's tile); buffers for
        # the sub-tile values among them
        run = [op for op in ops if op.dst.name not in dropped and
               ((op.fn in TRED and lv[op.dst.name] - 1 == p and op.dst.name not in skip) or
                (_has(op.dst.kind)[0] and lv[op.dst.name] == p and op.fn not in TRED))]
        seq = [op for op in run if _has(op.dst.kind)[0] and op.fn not in TRED and op.dst.name not in pinned]
        seq_keep = {n for n in t.outputs if lv.get(n) == p}
        _lend_slabs(bufs, ops, seq, slab_bufs, last_read, when)
        bufs.assign(run, pinned=pinned - {n for n in pinned if n in t.inputs and n not in slab}, keep=seq_keep,
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

    def loads(p, idx, k0, nr, l0, nw, g0) -> tuple[list, list]:
        """(moves, computes) of pass p's loads of a block of `nr` rows at row k0 of the slab (g0 of the tensors):
        16-bit inputs land in a tile of their own and are widened."""
        moves, comps = [], []
        for n in t.inputs if p == 0 else ():
            if sc[n] != "tile" or n in whole:
                continue
            dt = t.dtype(n)
            dst = raw(n, k0, nr, nw)
            src = kb.gregion(n, idx, g0, nr, l0, nw)
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
        return moves, comps

    def computes(p, k0, nr, nw) -> list:
        """Pass p's computes over the sub-tile of `nr` rows at row k0 of the slab."""
        comps = []
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
                    a_name = online[s_name][1]
                    k = kept.get(s_name)
                    comps += _online_step(kb, bufs, t, n, s_name, a_name, part, acc, arg, nr, nw,
                                          raw(a_name, k0, nr, nw) if k else None)
                    if k:
                        comps.append(record(k.hist, block_row(k0, S), acc, nw))
                else:
                    comps.append(ir.Assign(acc, ir.BinOp("+", acc, part) if red == "sum"
                                           else ir.Call(red, (acc, part))))
            elif _has(op.dst.kind)[0] and lv[n] == p and op.fn not in TRED and n not in dropped:
                if op.fn == "copy" and op.args[0].kind != CONST and arg(op.args[0]) == reg(n, k0, nr, nw):
                    continue
                if n in kept_e:
                    k = kept_e[n]
                    comps += kept_exp(k, block_row(k0, S), reg(k.m, k0, nr, nw), raw(k.a, k0, nr, nw),
                                      reg(n, k0, nr, nw), region(bufs.new(f"{k.m}_c", COL), COL, nr, nw), nw)
                    continue
                comps += _compute_at(kb, op, arg, reg(n, k0, nr, nw), nr, nw)
        for n in sorted(row_slabs(p, False)):   # [R, 1] values computed here, into their slab rows
            comps.append(ir.Assign(raw(n, k0, nr, nw), reg(n, k0, nr, nw)))
        return comps

    def stores(p, idx, k0, nr, l0, nw, g0) -> tuple[list, list]:
        """(computes, moves) of pass p's stores of a block of `nr` rows (16-bit results narrowed first)."""
        comps, moves = [], []
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
                moves.append(B.move("store", kb.gregion(n, idx, g0, nr, l0, nw), src))
        return comps, moves

    def step(p, idx, k0, nr, l0, nw, g0=None) -> list:
        """Pass p over the block of `nr` rows at row k0 of the slab (row g0 of the tensors; default k0): its
        loads, its computes sub-tile by sub-tile (S rows each), its stores."""
        g0 = k0 if g0 is None else g0
        moves, pre = loads(p, idx, k0, nr, l0, nw, g0)
        post, out = stores(p, idx, k0, nr, l0, nw, g0)
        comps = [c for r in range(0, nr, S) for c in computes(p, B.add(k0, r) if r else k0, min(S, nr - r), nw)]
        return moves + pre + comps + post + out

    full, tail = nt // D, nt % D

    # f32 inputs of one value per slab row (a per-channel gamma of a group's slab): the unit's whole column in one
    # DMA before the passes, not a DMA of S elements per sub-tile (each pays the GDRAM latency)
    whole = {n for n in t.inputs if sc[n] == "tile" and n in bufs.of and bufs.of[n] in slab_bufs and
             bufs.kind[bufs.of[n]] == ROW and t.dtype(n) == F32 and cores == 1}
    if D > S and not all(t.dtype(n) == F32 and bufs.of.get(n) in slab_bufs and bufs.kind[bufs.of[n]] == FULL
                         for n, kind in list(t.inputs.items()) + list(t.outputs.items())
                         if _has(kind)[0] and (n in t.outputs or (sc[n] == "tile" and n not in whole))):
        # (a block's loads and stores go straight between GDRAM and the slab: f32 [R, W] values held there)
        raise PlanRefused("blocks of sub-tiles: a tensor moved per row is not an f32 slab value")
    comb = Combine(bufs, cores, W, name if grid else None)
    online_max = {m for m, _ in online.values()}

    def unit(idx, l0, nw) -> list:
        out = []
        for n in t.inputs:
            if sc[n] == "unit":
                m, c = kb.load(n, idx, B.c(0), S, l0, nw)
                out += m + c
        for n in sorted(whole):
            out.append(B.move("load", raw(n, B.c(0), nt, nw), kb.gregion(n, idx, B.c(0), nt, l0, nw)))
        for n, op in accs.items():
            start = ONLINE_MAX_START if n in online_max else IDENT[op.fn[1:]]   # (a sub-tile of -inf only)
            out.append(ir.Assign(reg(n, 0, S, nw), B.c(start)))
        for p in range(npass):
            out += between(p, nw)
            if cores > 1:
                out += sub_tiles(full, tail, D, cores, lambda k0, g0, nr: step(p, idx, k0, nr, l0, nw, g0), cvar)
                done = {n: op.fn[1:] for n, op in accs.items() if lv[n] - 1 == p}
                out += comb.stmts(done, {s: m for s, (m, _) in online.items() if s in done},
                                  lambda n: reg(n, 0, S, nw), nw, {n for n in done if accs[n].dst.kind == SCAL})
                continue
            if full:
                kv = f"k{p}_"
                out.append(ir.For(kv, B.c(0), B.c(full), tuple(step(p, idx, B.mul(B.v(kv), D), D, l0, nw))))
            if tail:
                out += step(p, idx, B.c(nt - tail), tail, l0, nw)
        out += between(npass, nw)
        stores = []
        for n in t.outputs:
            if not _has(t.outputs[n])[0]:
                c, m = kb.store(n, idx, B.c(0), S, l0, nw)
                stores += c + m
        if cores > 1 and stores:   # every core of the cluster holds the combined values: one stores them
            stores = [ir.If(ir.BinOp("==", cvar, B.c(0)), tuple(stores), ())]
        return out + stores

    radix = [(a, t.axes.ext[a]) for a in t.units]
    nu = _prod([e for _, e in radix])
    cm, wl = t.n_lanes // W, t.n_lanes % W
    workers, task = (1, None) if grid else (tasks // cores, "cl_") if cores > 1 else (tasks, "task_")
    first, end = span or (0, None)
    end = nu * cm if end is None else end
    assert not (span and wl), "a slab kernel doing a span of the units has whole lane chunks"
    loops = _unit_loop("it_", end - first, workers, first, lambda u: decode_loops(
        kb, B.add(u, first), radix + [("chunk", cm)], lambda idx: unit(idx, B.mul(idx["chunk"], W), W)), task)
    if wl:
        loops += _unit_loop("iu_", nu, workers, nu * cm, lambda u: decode_loops(
            kb, u, radix, lambda idx: unit(idx, B.c(cm * W), wl)), task)
    body = core_moves + core_comps + loops
    if cores > 1:
        return list(comb.exchange.values()) + [cluster_kernel(name, tasks, min(cores, CORES), list(comb.sram.values()),
                                                              list(bufs.allocs.values()), body, plan.dense)]
    return [_kernel(name, tasks, list(bufs.allocs.values()), core_moves + core_comps + loops, plan.dense)]


def _lend_slabs(bufs: Buffers, ops: list[Op], seq: list[Op], slab_bufs: set, last_read: dict, when) -> None:
    """Sub-tile values of one pass computed in the slab of a value read there for the last time (and the values
    computed from them in place, while they die in turn): a softmax's `y = exp(x - m) * r` in x's slab, sub-tile
    by sub-tile. The pass then needs no sub-tile tiles (two pipeline slots each) for them: the NRAM they took
    goes to larger sub-tiles, fewer DMAs and their 500-cycle latencies (4,097 x 1,023 column softmax: sub-tiles
    of 4 rows -> 16). The store of sub-tile k - 1 reads slab rows the compute of sub-tile k does not write."""
    index = {id(op): i for i, op in enumerate(ops)}
    owners: dict[str, set] = {}
    for n, b in bufs.of.items():
        owners.setdefault(b, set()).add(n)
    never = (1 << 30,)
    for op in seq:
        d = op.dst
        if d.kind != FULL or d.name in bufs.of or op.fn in ("r16", "rbf16"):
            continue
        here = when(index[id(op)], op)
        for a in op.args:
            buf = bufs.of.get(a.name) if a.kind == FULL else None
            # every value in that slab (its own, those lent it before) read for the last time by now
            if buf in slab_bufs and last_read.get(a.name) == here and \
                    all(last_read.get(v, never) <= here for v in owners[buf]):
                bufs.of[d.name] = buf
                owners[buf].add(d.name)
                break


def _compute_at(kb: KernelBuilder, op: Op, arg, dst, nr: int, nw: int) -> list:
    """`op` on a sub-tile whose operands and destination regions `arg` / `dst` give (16-bit rounding: through
    a 16-bit tile)."""
    if op.fn in ("r16", "rbf16"):
        dt = ir.DType.f16 if op.fn == "r16" else ir.DType.bf16
        h = kb.bufs.new(rounding_tile(dt, op.dst.kind), op.dst.kind, dt)
        hreg = region(h, op.dst.kind, nr, nw)
        src = arg(op.args[0])
        pre = []
        if op.args[0].kind != op.dst.kind:
            pre, src = [ir.Assign(dst, src)], dst
        return pre + [ir.Assign(hreg, ir.Call(dt.value, (src,))), ir.Assign(dst, ir.Call("f32", (hreg,)))]
    if op.fn in ("lsum", "lmax", "lmin"):
        return [ir.Assign(dst, ir.Reduce(op.fn[1:], arg(op.args[0]), (1,) if op.args[0].kind == FULL else (0,)))]
    return [ir.Assign(dst, op_value(op, arg))]


def _online_step(kb, bufs, t, m: str, s: str, a: str, part, acc, arg, nr, nw, into=None) -> list:
    """The running max m and the rescaled running sum s of exp(A - m) after one more sub-tile (`part` holds the
    sub-tile's max): m_new = max(m, part); s = s * exp(m - m_new) + sum(exp(A_k - m_new)); m = m_new. `into`:
    the region exp(A_k - m_new) is computed in (A's own, when the slab keeps it: tiles_kept.py), else a scratch
    tile."""
    kind = t.outputs.get(m) or next(op.dst.kind for op in t.ops if op.dst.name == m)
    mn = region(bufs.new(f"{m}_n", kind), kind, nr, nw)
    scale = region(bufs.new(f"{m}_c", kind), kind, nr, nw)
    e = into if into is not None else region(bufs.new("onl_e", FULL), FULL, nr, nw)
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
