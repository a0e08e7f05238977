"""Candidates (Roller-style) and the cost model of the tile kernel.

Candidates: the lane axis is the innermost axis of the largest tensors (or, when that is a small constant
axis such as RoPE's pair, the one before it, with the small axis as each thread's tile); row tiles when it is an
in-team axis, column tiles when it is a team axis; 1..32 warps; 8/16/32 lanes along a team lane axis; vectors
of 16 bytes when the hinted extent allows; the warp axis any in-team axis; team axes on the grid or walked by a
block (those some operand does not depend on, so it is loaded once per block), grid-stride over persistent
blocks; inputs cached in registers when they are reused and fit.

Cost = global bytes in 32-byte sectors per warp access (the simulator's count: coalescing, broadcasts, reloads
per sweep and per team point, partials of cross-team reductions) over the bandwidth the occupancy reaches,
plus barrier latency per team point, an instruction term and launches.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from gir import ir
from passes.builtin.exprs import var_names
from passes.schedule.tiles import TileKernel
from passes.schedule.tiles_plan import TileAnalysis, TileConfig, Unsupported

SECTOR = 32
REG_WORDS = 128        # registers per thread the cache and accumulators may take
REG_OVERHEAD = 40      # registers a tile kernel needs besides them (addresses, loop counters, temporaries)
WARPS = (1, 2, 4, 8, 16, 32)


@dataclass
class TileEstimate:
    config: TileConfig
    seconds: float
    dram_bytes: float
    compulsory: float
    blocks: int
    regs: int
    smem: int
    notes: dict = field(default_factory=dict)


def _h(d, hints) -> int:
    return d if isinstance(d, int) else int(hints.get(d, 4096))


def lane_choices(a: TileAnalysis, hints) -> list[tuple[str, str | None, int]]:
    """(lane axis, tile axis, tile width) from the innermost dimensions of the largest tensors."""
    tensors = [(r.name, r.index) for r in a.inputs]
    for n in a.full_stores:
        st = next(s for s in a.unit.stmts if s.target == n)
        vm = a.unit.group.varmap[st.id]
        tensors.append((n, tuple(ir.Var(vm[v]) for v in st.out_vars)))
    sized = []
    for name, idx in tensors:
        t = a.types[name]
        n = t.dtype.nbytes
        for d in t.shape:
            n *= _h(d, hints)
        sized.append((n, name, idx))
    sized.sort(key=lambda x: -x[0])
    out: list[tuple[str, str | None, int]] = []
    big = sized[0][0] if sized else 0
    for n, name, idx in sized:
        if n < big / 4 or not idx:
            continue
        last = idx[-1]
        if not (isinstance(last, ir.Var) and last.name in a.axes):
            continue
        ext = a.axes[last.name]
        if isinstance(ext, int) and ext <= 8 and len(idx) > 1 and isinstance(idx[-2], ir.Var) and \
                idx[-2].name in a.axes and ext > 1:
            out.append((idx[-2].name, last.name, ext))
        out.append((last.name, last.name, 1))
    if not out:
        for ax in reversed(list(a.axes)):
            out.append((ax, ax, 1))
            break
    return list(dict.fromkeys(out))


def candidates(a: TileAnalysis, m, hints) -> list[TileEstimate]:
    out: list[TileEstimate] = []
    elem = max([a.types[r.name].dtype.nbytes for r in a.inputs] or [4])
    for lane, tile_ax, tw0 in lane_choices(a, hints):
        col = lane in a.team
        ext_l = _h(a.axes[lane], hints)
        tws = [tw0] if tile_ax != lane else sorted({1, max(1, 16 // elem)})
        for tw in tws:
            if tile_ax == lane and tw > 1 and ext_l % tw:
                continue
            tile = tile_ax if (tile_ax != lane or tw > 1) else None
            inner = [x for x in a.inner if x not in (lane, tile)]
            for warp_axis in ([None] + inner) if col else ([None] + inner):
                lls = [32] if (not col or warp_axis is None) else \
                    [ll for ll in (8, 16, 32) if ll * (tw if tile == lane else 1) * elem >= SECTOR or ll == 32]
                for ll in lls:
                    for nw in WARPS:
                        if col and warp_axis is None and nw > 1 and a.slots:
                            continue  # warps without a split axis would all hold the same team points
                        for grid, tloop, pers in _team_splits(a, lane, tile, col, m, hints):
                            cfg = TileConfig(lane, tile, tw if tile else 1, ll, warp_axis, nw, grid, tloop, pers)
                            for c in _cache_variants(a, cfg, hints):
                                est = estimate(a, c, m, hints)
                                if est is not None:
                                    out.append(est)
    return out


def _team_splits(a: TileAnalysis, lane: str, tile: str | None, col: bool, m, hints):
    """(grid, tloop, persistent): team axes on the grid or walked by each block."""
    team = [t for t in a.team if t not in (lane, tile)]
    reuse = [t for t in team if any(t not in var_names(r) for r in a.inputs)]
    opts: list[tuple[tuple[str, ...], int]] = []
    if a.cross:  # one partial per block: every team axis is walked, by persistent blocks
        if col:
            return []
        for k in (1, 2, 4):
            opts.append((tuple(team), m.sms * k))
    else:
        opts.append(((), 0))
        if reuse:
            opts.append((tuple(reuse), 0))
            for r in reuse:  # r walked grid-stride by P blocks, the other reuse axes by each of them
                rest = tuple(x for x in reuse if x != r)
                for p in (2, 4, 8, 16, 32, m.sms, 2 * m.sms):
                    if p < _h(a.axes[r], hints):
                        opts.append(((r,) + rest, p))
                opts.append(((r,), 0))
    out = []
    for tloop, pers in opts:
        grid = [t for t in team if t not in tloop]
        if col:
            grid.append(lane)
        while len(grid) + bool(pers) > 3:  # at most three grid dimensions: walk the outermost ones
            tloop = (grid.pop(0),) + tuple(tloop)
        if pers and not tloop:
            continue
        ordered = tuple(t for t in a.axes if t in tloop)
        if pers:
            ordered = tuple(tloop)  # the persistent axis is the outermost one given
        out.append((tuple(grid), ordered, pers))
    return list(dict.fromkeys(out))


def _cache_variants(a: TileAnalysis, cfg: TileConfig, hints):
    """Streaming, and (when inputs are reused: several sweeps, or walked team axes) cached with the hinted
    trip counts of the sweep loops."""
    yield cfg
    reused = a.nphases + bool(a.final) > 1 or (cfg.tloop and a.inputs)
    has_cross_rows = any(c.out_axes for c in a.cross)
    if not (reused or has_cross_rows):
        return
    k = TileKernel.__new__(TileKernel)
    k.a, k.cfg, k.col = a, cfg, cfg.lane in a.team
    caps = tuple((ax, max(1, math.ceil(_h(a.axes[ax], hints) / k.span(cfg, ax)))) for ax in k.sweep_axes(cfg))
    if caps:
        from dataclasses import replace
        yield replace(cfg, caps=caps)


def estimate(a: TileAnalysis, cfg: TileConfig, m, hints) -> TileEstimate | None:
    try:
        kern = TileKernel(a, cfg)
    except Unsupported:
        return None
    col = kern.col
    twl = kern.twl(cfg)
    w = cfg.tw if cfg.tile else 1
    ext = {ax: _h(d, hints) for ax, d in a.axes.items()}
    threads = cfg.threads
    if threads > m.max_threads_per_block:
        return None
    # blocks and per-block work
    blocks = 1
    for ax in cfg.grid:
        blocks *= math.ceil(ext[ax] / (cfg.lanes_l * twl)) if ax == cfg.lane else ext[ax]
    if cfg.persistent:
        blocks *= cfg.persistent
    team_iters = 1  # team points a block walks
    for k, ax in enumerate(cfg.tloop):
        team_iters *= math.ceil(ext[ax] / cfg.persistent) if (k == 0 and cfg.persistent) else ext[ax]
    sweep_trips = 1
    lane_util = 1.0
    for ax in kern.sweep_axes(cfg):
        span = kern.span(cfg, ax)
        trips = math.ceil(ext[ax] / span)
        sweep_trips *= trips
        lane_util *= ext[ax] / (trips * span)
    if col:
        tiles = math.ceil(ext[cfg.lane] / (cfg.lanes_l * twl))
        lane_util *= ext[cfg.lane] / (tiles * cfg.lanes_l * twl)
    nsweeps = a.nphases + bool(a.final)
    warps_per_block = cfg.warps
    # registers
    words = 0
    cache = cfg.cache
    for r in a.inputs:
        dep_sweep = bool(var_names(r) & set(a.inner) - ({cfg.tile} if cfg.tile != cfg.lane else set()))
        slots = sweep_trips if (cache and dep_sweep) else 1
        words += slots * w * max(1, a.types[r.name].dtype.nbytes // 4)
    words += 4 * len(a.slots) * max(1, w) + 2 * len(a.teamdefs) * max(1, kern.twt(cfg))
    for c in a.cross:
        words += (sweep_trips if (c.out_axes and cache) else 1) * twl
    regs = words + REG_OVERHEAD
    budget = min(m.max_regs_per_thread, m.regs_per_sm // threads)  # __launch_bounds__(threads, 1)
    if regs > budget or (cache and words > REG_WORDS):
        return None
    smem = (cfg.warps * cfg.lanes_l * kern.twt(cfg) * 4 * len(a.slots)) if kern.exchanges() else 0
    if smem > m.smem_per_block_default:
        return None
    # traffic: sectors per warp access x warp accesses
    dram = 0.0
    from passes.schedule.tiles_io import operands
    for op in operands(kern):
        dram += _op_bytes(a, kern, cfg, op.ref, ext, blocks, team_iters, sweep_trips, nsweeps, hints, op.members)
    for n in a.full_stores + a.team_stores:
        st = next(s for s in a.unit.stmts if s.target == n)
        vm = a.unit.group.varmap[st.id]
        idx = tuple(ir.Var(vm[v]) for v in st.out_vars)
        full = n in a.full_stores
        dram += _access_bytes(a, kern, cfg, n, idx, ext, blocks, team_iters,
                              sweep_trips if full else 1, 1, hints, store=True, team_store=not full)
    for c in a.cross:
        o = 1
        for ax in c.out_axes:
            o *= ext[ax]
        part = blocks * o * c.dtype.nbytes
        dram += 2 * part
        if c.out_axes and not cache:
            dram += 2 * part * team_iters
    compulsory = a.unit.compulsory(a.g, hints)
    # time
    resident = max(1, min(m.max_threads_per_sm // threads, 32, m.regs_per_sm // max(1, max(32, regs) * threads)))
    in_flight = min(blocks, resident * m.sms) * threads
    util = min(1.0, in_flight / (m.sms * 1024)) * lane_util
    mlp = min(1.0, 0.55 + 0.15 * max(w, twl))
    mem_t = dram / m.dram_bw / max(util * mlp, 1e-3)
    syncs = (2 * a.nphases if kern.exchanges() else 0) + (2 if a.cross and cfg.warps > 1 else 0)
    waves = max(1, math.ceil(blocks / (resident * m.sms)))
    lat = (syncs * 200 + a.nphases * 5 * 40) * team_iters * waves / m.clock_hz
    elems = 1
    for ax in a.axes:
        elems *= ext[ax]
    instr = elems * nsweeps * (4 + len(a.slots)) / (m.sms * 128 * m.clock_hz)
    secs = mem_t + lat + instr + m.launch_s * (1 + len(a.cross))
    del warps_per_block
    return TileEstimate(cfg, secs, dram, compulsory, blocks, regs, smem,
                        {"lane_util": round(lane_util, 3), "util": round(util, 3), "sweeps": nsweeps,
                         "compulsory": compulsory})


def _op_bytes(a, kern, cfg, r: ir.Ref, ext, blocks, team_iters, sweep_trips, nsweeps, hints, members=()) -> float:
    axes = var_names(r) & set(a.axes)
    tile_inner = cfg.tile if cfg.tile != cfg.lane else None
    dep_sweep = bool(axes & set(a.inner) - ({tile_inner} if tile_inner else set()))
    dep_loop = bool(axes & set(cfg.tloop))
    if dep_sweep:
        cached = cfg.cache
        block_cached = cached and cfg.tloop and not dep_loop
        if block_cached:
            per_thread = sweep_trips
            team = 1
        else:
            per_thread = sweep_trips * (1 if cached else max(_sweeps_using(a, m, nsweeps) for m in members or [r]))
            team = team_iters
    elif dep_loop or not cfg.tloop:
        per_thread, team = 1, team_iters
        if not kern.col and cfg.warps > 1 and cfg.lane not in axes:  # staged: one thread loads it
            return blocks * team * SECTOR
    else:
        per_thread, team = 1, 1
    return _access_bytes(a, kern, cfg, r.name, r.index, ext, blocks, team, per_thread, 1, hints)


def _sweeps_using(a, r: ir.Ref, nsweeps: int) -> int:
    n = 0
    for p in range(a.nphases):
        if any(r == x for s in a.slots if s.phase == p for x in _refs(s.arg)):
            n += 1
    if a.final and any(r == x for e in [a.inline(a.full[f]) for f in a.full_stores] + [c.arg for c in a.cross]
                       for x in _refs(e)):
        n += 1
    return max(1, n)


def _access_bytes(a, kern, cfg, name, index, ext, blocks, team_iters, per_thread, _, hints,
                  store: bool = False, team_store: bool = False) -> float:
    """Bytes in sectors of one load/store instruction executed `per_thread` times per team point by every warp."""
    t = a.types[name]
    elem = t.dtype.nbytes
    col = kern.col
    twl = kern.twl(cfg)
    w = cfg.tw if cfg.tile else 1
    last = index[-1] if index else None
    lane_in = any(cfg.lane in var_names(i) for i in index)
    warps = 1 if team_store else cfg.warps
    accesses = blocks * team_iters * per_thread * warps * (1 if team_store and not col else 1)
    inner_tile = cfg.tile is not None and cfg.tile != cfg.lane
    if not lane_in:
        sectors = cfg.lanes_w if col else 1
        return accesses * sectors * SECTOR * (w if inner_tile else 1) / max(1, w if inner_tile else 1)
    lanes = cfg.lanes_l if col else 32
    rows = cfg.lanes_w if col else 1
    if isinstance(last, ir.Var) and last.name == cfg.lane:
        run = lanes * twl * elem
        pitch = _h(t.shape[-1], hints) * elem
    elif inner_tile and len(index) > 1 and isinstance(index[-2], ir.Var) and index[-2].name == cfg.lane and \
            isinstance(last, (ir.Var, ir.Const)):
        run = lanes * w * elem
        pitch = _h(t.shape[-2], hints) * _h(t.shape[-1], hints) * elem
    else:  # the lane axis is not the contiguous dimension: a sector (or more) per lane
        per_lane = math.ceil(w * elem / SECTOR) if isinstance(last, ir.Var) and last.name == cfg.tile else 1
        return accesses * rows * lanes * per_lane * SECTOR
    sectors = math.ceil(run / SECTOR) + (1 if pitch % SECTOR else 0)
    if store and team_store:
        sectors = math.ceil(run / SECTOR)
    return accesses * rows * sectors * SECTOR


def _refs(e):
    from passes.builtin.exprs import refs
    return refs(e)
