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
from gir.passes.builtin.exprs import var_names
from gir.passes.schedule.tiles import TileKernel
from gir.passes.schedule.tiles_layout import tile_vector_width
from gir.passes.schedule.tiles_plan import TileAnalysis, TileConfig, Unsupported

SECTOR = 32
REG_WORDS = 128        # registers per thread the cache and accumulators may take
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
        ext = _h(a.axes[last.name], hints)
        small = 1 < ext <= 8 and (isinstance(a.axes[last.name], int) or last.name in a.inner)
        if small and len(idx) > 1 and isinstance(idx[-2], ir.Var) and idx[-2].name in a.axes:
            out.append((idx[-2].name, last.name, ext))   # each thread covers the small axis
            out.append((idx[-2].name, None, 1))          # or lanes do (with `lanew`)
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
        tile_ax = tile_ax if tile_ax is not None else "__none__"
        for tw in tws:
            if tile_ax == lane and tw > 1 and ext_l % tw:
                continue
            tile = tile_ax if (tile_ax != lane or tw > 1) and tile_ax != "__none__" else None
            inner = [x for x in a.inner if x not in (lane, tile)]
            # column tiles: warps split an in-team axis, or (each thread its own team points) a team axis
            teamw = [x for x in a.team if x not in (lane, tile)] if col and not a.cross else []
            for warp_axis in [None] + inner + teamw:
                lls = [32] if (not col or warp_axis is None) else [2, 4, 8, 16, 32]
                lws = [None] + [x for x in inner if x != warp_axis] if col and warp_axis in inner else [None]
                for ll, lanew in [(ll, lw) for ll in lls for lw in lws if lw is None or ll < 32]:
                    for nw in WARPS:
                        if col and warp_axis is None and nw > 1:
                            continue  # warps without a split axis would all do the same work
                        for grid, tloop, pers in _team_splits(a, lane, tile, col, m, hints):
                            if warp_axis in teamw and warp_axis not in grid + tloop:
                                continue  # a team warp axis is tiled by the block's threads, on the grid or walked
                            cfg = TileConfig(lane, tile, tw if tile else 1, ll, warp_axis, nw, grid, tloop,
                                             max(pers, 0), max(-pers, 0), lanew=lanew)
                            for c in _cache_variants(a, cfg, hints):
                                est = estimate(a, c, m, hints)
                                if est is not None:
                                    out.append(est)
    from gir.passes.schedule.tiles_skew import skew_candidates   # rows off a sector boundary (tiles_skew.py)
    return out + skew_candidates(a, m, hints, estimate)


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
        if not col:  # consecutive team points per block: their results stored together (coalesced)
            for n in a.team_stores:
                st = next(x for x in a.unit.stmts if x.target == n)
                last = a.unit.group.varmap[st.id][st.out_vars[-1]] if st.out_vars else None
                if last in team:
                    for k in (8, 32):
                        opts.append(((last,), -k))
        if reuse:
            opts.append((tuple(reuse), 0))
            for r in reuse:  # r walked grid-stride by P blocks (the other reuse axes too, or on the grid)
                rest = tuple(x for x in reuse if x != r)
                for p in (2, 4, 8, 16, 32, m.sms, 2 * m.sms):
                    if p < _h(a.axes[r], hints):
                        opts.append(((r,) + rest, p))
                        if rest:
                            opts.append(((r,), p))
                opts.append(((r,), 0))
    out = []
    for tloop, pers in opts:  # pers < 0: a chunk of -pers consecutive points of the first tloop axis
        grid = [t for t in team if t not in tloop]
        if col:
            grid.append(lane)
        forced = False
        while len(grid) + bool(pers) > 3:  # at most three grid dimensions: walk the outermost ones
            tloop = tuple(tloop[:1]) + (grid.pop(0),) + tuple(tloop[1:]) if pers else (grid.pop(0),) + tuple(tloop)
            forced = True
        if pers and not tloop:
            continue
        ordered = tuple(t for t in a.axes if t in tloop)
        if pers:
            ordered = tuple(tloop)  # the persistent (or chunked) axis is the outermost one given
        out.append((tuple(grid), ordered, pers))
        if forced and col and lane in grid and len(tloop) == 1:  # or walk the lane axis's tiles instead
            g3 = [x for x in team if x != lane]
            if len(g3) <= 3:
                out.append((tuple(g3), (lane,), 0))
        if forced and not pers:  # the walked axes shared grid-stride by several blocks, for parallelism
            g2, t2 = list(grid), tuple(ordered)
            if len(g2) == 3:  # make room for the persistent grid dimension: walk one more axis
                t2 = t2 + (g2.pop(0),) if g2[0] != lane else t2
            if len(g2) < 3:
                t2 = tuple(sorted(t2, key=lambda x: -_h(a.axes[x], hints)))  # the longest walked axis is shared
                for p in (4, 16, 64, m.sms):
                    if p < _h(a.axes[t2[0]], hints):
                        out.append((tuple(g2), t2, p))
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
    if threads > min(m.max_threads_per_block, m.max_threads_generated):
        return None
    # blocks and per-block work
    blocks = 1
    for ax in cfg.grid:
        if ax == cfg.lane:
            blocks *= math.ceil(ext[ax] / (cfg.lanes_l * twl))
        elif ax == cfg.warp_axis:
            blocks *= math.ceil(ext[ax] / (cfg.warps * cfg.lanes_w))
        else:
            blocks *= ext[ax]
    if cfg.persistent:
        blocks *= cfg.persistent
    if cfg.chunk:
        blocks *= math.ceil(ext[cfg.tloop[0]] / cfg.chunk)
    team_iters = 1  # team points a block walks
    for k, ax in enumerate(cfg.tloop):
        if ax == cfg.lane:
            team_iters *= math.ceil(ext[ax] / (cfg.lanes_l * twl))
        elif ax == cfg.warp_axis:
            team_iters *= math.ceil(ext[ax] / (cfg.warps * cfg.lanes_w * max(1, cfg.persistent if k == 0 else 1)))
        elif k == 0 and cfg.persistent:
            team_iters *= math.ceil(ext[ax] / cfg.persistent)
        elif k == 0 and cfg.chunk:
            team_iters *= cfg.chunk
        else:
            team_iters *= ext[ax]
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
        if kern.team_warps():
            n = cfg.warps * cfg.lanes_w
            lane_util *= ext[cfg.warp_axis] / (math.ceil(ext[cfg.warp_axis] / n) * n)
    nsweeps = a.nphases + bool(a.final)
    warps_per_block = cfg.warps
    # registers
    words = 0
    cache = cfg.cache
    for r in a.inputs:
        dep_sweep = bool(var_names(r) & set(a.inner) - ({cfg.tile} if cfg.tile != cfg.lane else set()))
        slots = sweep_trips if (cache and dep_sweep) else 1
        words += slots * w * max(1, a.types[r.name].dtype.nbytes // 4)
    wt = kern.twt(cfg)
    words += len(a.slots) * (wt + w) + len(a.teamdefs) * 2 * wt + len(a.full_stores) * w
    for c in a.cross:
        words += (sweep_trips if (c.out_axes and cache) else 1) * twl
    regs = words + m.reg_overhead
    budget = min(m.max_regs_per_thread, m.regs_per_sm // threads)  # __launch_bounds__(threads, 1)
    if regs > budget or (cache and words > REG_WORDS):
        return None
    smem = (cfg.warps * cfg.lanes_l * kern.twt(cfg) * 4 * len(a.slots)) if kern.exchanges() else 0
    if smem > m.smem_per_block_default:
        return None
    # traffic: sectors per warp access x warp accesses
    dram = 0.0
    from gir.passes.schedule.tiles_io import operands
    for op in operands(kern):
        dram += _op_bytes(a, kern, cfg, op.ref, ext, blocks, team_iters, sweep_trips, nsweeps, hints, op.members)
    batched = kern.batched()
    for n in batched:  # one store of `chunk` consecutive values per block
        dram += blocks * (math.ceil(cfg.chunk * a.types[n].dtype.nbytes / SECTOR) + 1) * SECTOR
    for n in [x for x in a.full_stores + a.team_stores if x not in batched]:
        st = next(s for s in a.unit.stmts if s.target == n)
        vm = a.unit.group.varmap[st.id]
        idx = tuple(ir.Var(vm[v]) for v in st.out_vars)
        full = n in a.full_stores
        dram += _access_bytes(a, kern, cfg, n, idx, ext, blocks, team_iters,
                              sweep_trips if full else 1, 1, hints, store=True, team_store=not full and not kern.col)
    for c in a.cross:
        o = 1
        for ax in c.out_axes:
            o *= ext[ax]
        part = blocks * o * c.dtype.nbytes
        dram += 2 * part
        if c.out_axes and not cache:
            dram += 2 * part * team_iters
    memo = a.__dict__.setdefault("_compulsory", {})   # the same for every configuration of the group
    key = tuple(sorted(hints.items()))
    if key not in memo:
        memo[key] = a.unit.compulsory(a.g, hints)
    compulsory = memo[key]
    # time
    resident = max(1, min(m.max_threads_per_sm // threads, 32, m.regs_per_sm // max(1, max(32, regs) * threads)))
    in_flight = min(blocks, resident * m.sms) * threads
    util = min(1.0, in_flight / (m.sms * 1024)) * lane_util
    mlp = min(1.0, 0.55 + 0.15 * max(w, twl))
    mem_t = max(dram / m.dram_bw / max(util * mlp, 1e-3), m.dispatch_s(blocks))
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
    """The sweeps of the group whose expressions read `r` (memoised per reference object: the same for every
    configuration)."""
    memo = a.__dict__.setdefault("_sweeps_using", {})
    hit = memo.get(id(r))
    if hit is None or hit[0] is not r:
        hit = memo[id(r)] = (r, _count_sweeps(a, r))
    return hit[1]


def _count_sweeps(a, r: ir.Ref) -> int:
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
    """Bytes in 32-byte sectors of one load/store instruction executed `per_thread` times per team point by every
    warp: the sectors the first warp's lanes touch, counted per vector access as the simulator does (averaged over
    the first two points of the other axes, so rows that start off a sector are charged)."""
    warps = 1 if team_store else cfg.warps
    accesses = blocks * team_iters * per_thread * warps
    return accesses * warp_sectors(a, kern, cfg, name, index, hints, team_store) * SECTOR


def warp_sectors(a, kern, cfg, name, index, hints, one_lane: bool = False) -> float:
    """Sectors one warp access touches (memoised: many configurations share a lane layout)."""
    key = (name, index, cfg.lane, cfg.tile, cfg.tw, cfg.lanes_l, cfg.lanew_axis,
           cfg.warp_axis if cfg.lanew else None, cfg.vectors, kern.col, one_lane, tuple(sorted(hints.items())))
    memo = a.__dict__.setdefault("_warp_sectors", {})
    if key not in memo:
        memo[key] = _warp_sectors(a, kern, cfg, name, index, hints, one_lane)
    return memo[key]


def _warp_sectors(a, kern, cfg, name, index, hints, one_lane: bool = False) -> float:
    from gir.affine import to_affine
    t = a.types[name]
    elem = t.dtype.nbytes
    dims = [_h(d, hints) for d in t.shape]
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    affs = [to_affine(i) for i in index]
    if any(x is None for x in affs):
        return 32.0  # not affine: a sector per lane
    w = cfg.tw if cfg.tile else 1
    tiled = w > 1 and bool(index) and isinstance(index[-1], ir.Var) and index[-1].name == cfg.tile
    elemwise = w > 1 and not tiled and any(cfg.tile in var_names(i) for i in index)
    per_lane = w if (tiled or elemwise) else 1
    vec = 1
    if tiled and cfg.vectors:
        vec = tile_vector_width(w, elem)  # the width the kernel's loads use (tiles.py)
    col = kern.col
    twl = kern.twl(cfg)
    lanes = 1 if one_lane else 32
    total = 0.0
    for base in (0, 1):
        for piece in range(0, per_lane, vec):
            sectors = set()
            for ln in range(lanes):
                pos = {ax: base for ax in a.axes}
                if col:
                    pos[cfg.lane] = base * cfg.lanes_l * twl + (ln // cfg.lanes_w) * twl
                    if cfg.lanew_axis is not None:   # the lanes' points of it; for base 1 the next warp's when
                        # it is the warp axis (a `lanew` axis stays: the warp axis moves with base below)
                        pos[cfg.lanew_axis] = (0 if cfg.lanew else base * cfg.lanes_w) + ln % cfg.lanes_w
                    if cfg.lanew and cfg.warp_axis is not None:
                        pos[cfg.warp_axis] = base
                else:
                    pos[cfg.lane] = ln * twl
                start = pos[cfg.lane] if cfg.tile == cfg.lane else 0
                for e in range(piece, min(piece + vec, per_lane)):
                    if cfg.tile is not None and per_lane > 1:
                        pos[cfg.tile] = start + e
                    addr = 0
                    for aff, st in zip(affs, strides):
                        v = aff.const + sum(c * pos.get(n, hints.get(n, 4096)) for n, c in aff.coeffs.items())
                        addr += v * st
                    sectors.add(addr * elem // SECTOR)
            total += len(sectors)
    return total / 2


def _refs(e):
    from gir.passes.builtin.exprs import refs
    return refs(e)
