"""Planning of the tile recipe (passes/schedule_mlu/tiles.py): `build`, the explicit MLU GIR of a `Tiles` analysis
by the cheapest plan whose tiles fit NRAM.

Candidate plans (a lane width W; held, slab or stream; rows per tile R; parts of T) are ranked by `estimate` (the
busiest core's GDRAM bytes and DMA latencies), and the first whose kernels fit NRAM (`footprint`,
tiles_nram.py) wins. The kernel shapes (shared parts in tiles_builder.py):

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
"""
from __future__ import annotations

import dataclasses
from gir import ir
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.tiles import COL, FULL, ROW, SCAL, NotTile, Tiles, _has
from gir.passes.schedule_mlu.tiles_axes import PlanRefused
from gir.passes.schedule_mlu.tiles_builder import F32, TASKS, Plan, _prod
from gir.passes.schedule_mlu.tiles_held import held_kernel
from gir.passes.schedule_mlu.tiles_nram import footprint
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu.tiles_cluster import is_shared, shared_rows
from gir.passes.schedule_mlu.tiles_slab import TRED, levels, slab_kernel
from gir.passes.schedule_mlu.tiles_stream import stream_kernel

__all__ = ["build", "estimate", "footprint", "lane_candidates", "NRAM_BUDGET", "Plan", "TASKS"]

NRAM_BUDGET = 720 * 1024        # of 768 KiB: what the emitter declares for the kernel (scratch tiles included)
LAT = 500e-9                    # one GDRAM DMA's latency (serialised on its core's IO pipe)
GDRAM_BW, CORE_BW = 307e9, 64e9
CORES = MLU370.cores_per_cluster
GRANULE = MLU370.dma_granularity


def _es(dt: ir.DType) -> int:
    return dt.nbytes


# ------------------------------------------------------------------------------------------------ planning
def _lane_reduced(t: Tiles) -> bool:
    return any(op.fn in ("lsum", "lmax", "lmin") for op in t.ops)


def lane_candidates(t: Tiles) -> list[int]:
    nl = t.n_lanes
    if _lane_reduced(t) or nl <= 32:
        return [nl]
    return sorted({32} | {w for w in range(64, min(nl, 8192) + 1, 64)} | ({nl} if nl <= 8192 else set()))


def _bytes(t: Tiles, kinds, nr: int, nw: int) -> tuple[int, int]:
    """(GDRAM bytes, DMA count) of moving the tensors of the given kinds for a tile of nr rows and nw lanes. A
    tile narrower than the rows of a tensor whose rows are not whole 64-byte DMA granules moves segments at every
    offset in a granule: about a granule's part more per segment (read), and a stored segment's two partial
    granules read back (read-modify-write)."""
    total, count = 0, 0
    for name, kind in list(t.inputs.items()) + list(t.outputs.items()):
        if kind not in kinds:
            continue
        ht, hl = _has(kind)
        es = _es(t.dtype(name))
        n = (nr if ht else 1) * (nw if hl else 1) * es
        if hl and nw < t.n_lanes and (t.n_lanes * es) % GRANULE and t.axes.dims[name][-1] == t.lane:
            n += (nr if ht else 1) * (GRANULE - es + (2 * GRANULE if name in t.outputs else 0))
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
    if plan.mode == "slab":   # the blocks' DMAs, and per unit two blocks' compute not hidden by IO
        D = plan.R * plan.q
        b, n = _bytes(t, (FULL, ROW, COL, SCAL), t.n_rows, plan.W)
        ft, _ = _bytes(t, (FULL, ROW), D, plan.W)
        subs = -(-t.n_rows // D)
        tiles = sum(1 for n, k in list(t.inputs.items()) + list(t.outputs.items()) if _has(k)[0] and
                    not (n in t.inputs and k == ROW and t.dtype(n) == F32))   # (whole per unit: tiles_slab.py)
        if is_shared(plan):   # a cluster's cores share each unit: a core moves its share of the sub-tiles (f32
            # per-row inputs too: no whole-unit loads), then the combines
            rows = shared_rows(t.n_rows, D, plan.parts)
            shared = units - plan.head * plan.parts   # (units counts a shared unit once per core of its cluster)
            per_cl = -(-shared // tasks)
            bw_s = min(CORE_BW, GDRAM_BW / min(tasks, shared))
            dmas = sum(1 for k in list(t.inputs.values()) + list(t.outputs.values()) if _has(k)[0])
            comp = rows * plan.W * _cycles_per_element(t) / MLU370.clock_hz   # (fewer busy cores: more each)
            own = plan.head // tasks * (b / bw + (n + (subs - 1) * tiles) * LAT + 2 * ft / bw)   # (mixed: head)
            return (own + per_cl * (max(b / plan.parts / bw_s, comp) + rows // D * dmas * LAT + 2 * ft / bw_s +
                                    _combine_s(t, plan.parts == tasks))) * 1.05
        return per_core * (b / bw + (n + (subs - 1) * tiles) * LAT + 2 * ft / bw) * 1.05
    rows = -(-t.n_rows // plan.parts)
    tiles = -(-rows // plan.R)
    bt, nt = _bytes(t, (FULL, ROW), plan.R, plan.W)
    bu, nu_ = _bytes(t, (COL, SCAL), plan.R, plan.W)
    return per_core * (tiles * (bt / bw + nt * LAT) + bu / bw + nu_ * LAT + 2e-6)


RANKED = 6   # plans that fit NRAM timed by the MLU cost model (`rank`), in the analytic estimate's order
RANKED_SHARED = 4   # ... and up to this many slabs a cluster shares (tiles_cluster.py), and as many slabs every core
#                     shares, timed besides those
NRAM_SLACK = 1.1   # (build: a tile is skipped when a larger one's NRAM scaled by their areas is over this x the budget)
RANK_BYTES = 1 << 20   # ... for functions moving at least this many bytes (tiles.tile_schedule)


def build(t: Tiles, name: str, tasks: int = TASKS, nram: int = NRAM_BUDGET, rank=None,
          sram: bool = True) -> tuple[list, Plan]:
    """The items (kernels, GDRAM temporaries) of the cheapest plan whose tiles fit NRAM: the first in the order of
    `estimate` (GDRAM bytes and DMA latencies of the busiest core), or, with `rank(items) -> seconds` (the MLU
    cost model, passes/schedule_mlu/cost.py: compute and issue costs too), the fastest of the first RANKED that
    fit unless within the MLU ranking policy's tie of an earlier one."""
    cands: list[Plan] = []
    nu = _prod([t.axes.ext[a] for a in t.units])
    shared = t.held and cluster_ok(t, tasks, sram)
    lanes = lane_candidates(t)
    for w in sorted(set(lanes) | (set(_balanced(t, tasks // CORES)) if shared else set())):
        if t.held:
            if w in lanes:
                cands.append(Plan("held", w, t.n_rows, dense=w % 64 == 32))
            units = nu * -(-t.n_lanes // w)
            for sub in (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048):
                if sub >= t.n_rows:
                    continue
                if sub * w >= 2048:   # sub-tiles of 8 KiB and more (DMA latencies)
                    if w in lanes:
                        cands.append(Plan("slab", w, sub, dense=w % 64 == 32))
                    # (three sub-tiles or more: a core without one keeps the identity; at least half the
                    # cores have work, else the one-core slab or another recipe)
                    if shared and sub * CORES < 2 * t.n_rows and 2 * CORES * units >= tasks:
                        cands.append(Plan("slab", w, sub, CORES, dense=w % 64 == 32))
                        # units a little over whole rounds of the cores (68 groups on 32 cores: a third round
                        # for 4 of them) whose lanes cannot be dealt in chunks (statistics over the lanes): the
                        # whole rounds one unit per core, then the rest in slabs the clusters share (two
                        # kernels: as one, the cost model gave the busiest core the bandwidth of its last round
                        # through the whole kernel). (Where lane chunks deal the units out, the cost model's
                        # ranking of this split against them was noise: a middle-axis softmax of 40 units
                        # 1.323x -> 1.351x; and with a rest of 12 to 16 units it simulated 0.5-1.3% slower.)
                        rest = units % tasks
                        if _lane_reduced(t) and units > tasks and 0 < rest <= tasks // 4:
                            cands.append(Plan("slab", w, sub, CORES, dense=w % 64 == 32, head=units - rest))
                # too few units for the clusters: every core shares each unit (combined through GDRAM; narrow
                # units take sub-tiles of 1 KiB and more; 32 rows a core at least: the barriers' cost)
                if shared and sub * w >= 256 and sub * tasks < 2 * t.n_rows and CORES * units < tasks and \
                        t.n_rows >= 32 * tasks:
                    cands.append(Plan("slab", w, sub, tasks, dense=w % 64 == 32))
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
    cands += [b for pl in cands for b in _blocked(t, pl)]
    cands = [pl for pl in cands if _lower_bound(t, pl) <= nram]
    cands.sort(key=lambda pl: (estimate(t, pl, tasks), -pl.W, -pl.R))
    tried, fitting, shared_fit = 0, [], {CORES: 0, tasks: 0}   # shared plans timed, by cores per unit
    too_big: dict = {}   # (mode, cores a unit, head) -> [(rows, lanes, pitch, NRAM bytes)] of tiles that did not fit
    for pl in cands:
        if (shared_fit[pl.parts] >= RANKED_SHARED) if is_shared(pl) else \
                (rank is not None and len(fitting) - sum(shared_fit.values()) >= RANKED):
            continue   # (its kind's quota is full: the scan goes on for the other kinds)
        kind = (pl.mode, pl.parts, pl.head, pl.q)
        if any((pl.R >= r and pl.W >= w) or (pl.mode == "stream" and used * pl.R * _pitch(pl) > NRAM_SLACK * nram *
                                             r * pw) for r, w, pw, used in too_big.get(kind, ())):
            # (NRAM grows with a tile's rows and lanes; a stream plan's with rows x padded lanes, from a fixed
            # part: tiles that a larger tile's bytes say cannot fit are not built -- compile time: 66 of 78
            # candidates of a chain of element-wise ops did not fit)
            tried += 1
            if tried > 60:
                break
            continue
        try:
            items = {"held": held_kernel, "stream": stream_kernel, "slab": slab_kernel}[pl.mode](t, pl, name, tasks)
        except PlanRefused:   # (rows split under a result that is not a plain reduction; blocks of sub-tiles
            continue          # whose tensors do not all go straight to the slab): the other plans are built
        used = footprint(t, items)
        if pl.mode == "stream" and used > nram:   # (the per-row inputs' unit buffers crowd it out)
            items = stream_kernel(t, pl, name, tasks, unit_inputs=False)
            used = footprint(t, items)
        tried += 1
        if used > nram:
            too_big.setdefault(kind, []).append((pl.R, pl.W, _pitch(pl), used))
        else:
            if rank is None:
                return items, pl
            fitting.append((items, pl))
            if is_shared(pl):
                shared_fit[pl.parts] += 1
            if len(fitting) - sum(shared_fit.values()) >= RANKED and \
                    (not shared or min(shared_fit.values()) >= RANKED_SHARED):
                break
        if tried > 60:
            break
    if not fitting:
        raise NotTile("no tile of the recipe fits NRAM")
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING
    return order(fitting, lambda f: rank(f[0]), MLU_RANKING)[0]


BLOCK_BYTES = (64 * 1024, 128 * 1024)   # the DMA sizes of slab blocks (tiles_slab.py): a 500-cycle latency each


def _blocked(t: Tiles, pl: Plan) -> list[Plan]:
    """Slab plans loading and storing q sub-tiles per DMA (each about one of BLOCK_BYTES) where a sub-tile is
    smaller: a slab sub-tile's rows are bounded by its compute tiles' NRAM, not a block's, whose loads and stores
    go straight between GDRAM and the slab (4,097 x 1,023 column softmax: sub-tiles of 8 rows, 32 KiB; blocks
    of 32 rows)."""
    if pl.mode != "slab" or levels(t)[1]:   # (an online softmax's slab keeps its exponentials in place, with
        return []                               # no sub-tile scratch tile for them: tiles_kept.py)
    out = []
    for size in BLOCK_BYTES:
        q = 1
        while pl.R * pl.W * 4 * q * 2 <= size and pl.R * q * 2 * pl.parts <= t.n_rows:
            q *= 2
        if q > 1 and all(b.q != q for b in out):
            out.append(dataclasses.replace(pl, q=q))
    return out


def _cycles_per_element(t: Tiles) -> float:
    """Vector cycles per f32 element of a tile for the tile's element-wise ops and reductions over T (128-byte
    vector units: 32 elements per cycle of a simple op, 8 cycles for a division or a special function)."""
    cheap = {"copy", "neg", "max", "min", "add", "sub", "mul", "eq", "ne", "lt", "le", "gt", "ge"} | set(TRED)
    return sum(1 if op.fn in cheap else 8 for op in t.ops if op.dst.kind == FULL or op.fn in TRED) / 32


def _balanced(t: Tiles, clusters: int) -> list[int]:
    """Lane widths (multiples of 32) that deal the lanes out to the clusters in 1 to 4 even rounds (a 1,025-lane
    tensor in 128-lane chunks is 9 units for 8 clusters: two rounds, the second for one lane)."""
    if _lane_reduced(t) or t.n_lanes <= 32:
        return []
    nu = _prod([t.axes.ext[a] for a in t.units])
    out = set()
    for rounds in range(1, 5):
        chunks = -(-clusters * rounds // nu)   # lane chunks per unit point
        if chunks > 1:
            w = L.round_up(-(-t.n_lanes // chunks), 32)
            if 32 <= w <= min(t.n_lanes, 8192):
                out.add(w)
    return sorted(out)


def _combine_s(t: Tiles, grid: bool = False) -> float:
    """Seconds of a shared slab's cross-core combines per unit: per pass that finishes statistics over T, two
    cluster barriers and four SRAM copies (their latency); `grid`: then two barriers of all cores, two GDRAM DMAs
    and an SRAM copy (tiles_cluster.Combine)."""
    lv, _ = levels(t)
    m = MLU370
    each = 2 * m.sync_cluster_cycles + 4 * m.sram_latency_cycles
    if grid:
        each += 2 * m.sync_all_cycles + 2 * m.gdram_latency_cycles + m.sram_latency_cycles
    return len({lv[op.dst.name] for op in t.ops if op.fn in TRED}) * each / m.clock_hz


def cluster_ok(t: Tiles, tasks: int, sram: bool) -> bool:
    """A unit's slab may be shared by a cluster's cores: SRAM allowed, whole clusters, statistics over T all per
    lane or over the whole slab (combined lane-wise, or as one value per core, across the cores: tiles_cluster.py)."""
    reds = [op for op in t.ops if op.fn in TRED]
    return sram and tasks % CORES == 0 and bool(reds) and all(op.dst.kind in (COL, SCAL) for op in reds)


def _pitch(pl: Plan) -> int:
    """Elements per row of the plan's tiles (padded unless dense)."""
    return pl.W if pl.dense or pl.W % L.PITCH == 0 else L.round_up(pl.W, L.PITCH)


def _lower_bound(t: Tiles, pl: Plan) -> int:
    """NRAM bytes any kernel of the plan needs at least: its largest tile (held: in two pipeline slots)."""
    pitch = _pitch(pl)
    rows = t.n_rows if pl.mode in ("held", "slab") else pl.R
    if is_shared(pl) and not pl.head:
        rows = shared_rows(t.n_rows, pl.R * pl.q, pl.parts)
    return rows * pitch * 4 * (2 if pl.mode == "held" else 1)


def _scope_out(t: Tiles, n: str) -> str:
    return "tile" if _has(t.outputs[n])[0] else "unit"
