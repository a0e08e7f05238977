"""Sizes of the MLU scan's unit kernel (scan.py): the lane chunk W, the lanes between two chunks, the scan rows R
of a tile, and the choice among them by the MLU cost model.

- `choose`: W by balance (the busiest core's lanes) first; in the rows layout, on ties, the chunk that leaves the
  longest row segment per DMA when rows do not start on the 64-byte granule; lanes dealt evenly when that cuts
  the busiest core's share by a tenth (`_balance`: chunks of `step` < W lanes in W-wide buffers). R from a
  per-element estimate of NRAM.
- `grow_tile`: R raised to the largest that really fits NRAM (the estimate undershoots).
- `unit_items`: the sized kernel; R among the largest fit, the largest that divides the scan axis, and a half
  and a quarter of it, W among the first choice and the longest-segment one, and the whole-row units
  (`row_units`: one tile of whole rows per unit, in sub-segments): the cost model picks (ranking.py, the MLU
  policy: the earlier candidate on ties).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import layout as L

TILE_ELEMS = 32768           # elements per tile (at most): each tile costs two 500-cycle DMA latencies per core
NRAM_BUDGET = 640 * 1024     # the rest stays free for the emitter's scratch tiles
NRAM_SLACK = NRAM_BUDGET + 128 * 1024   # what a tile may use where the estimate does not settle below the budget
LANE_STEP = 32               # lane chunks: whole 128-byte f32 units (the tile pitch stays 64 elements)
WIDE_LANES = 1024            # a wide lane chunk (rows off the DMA granule, scan axis cut into ranges): at most
SEGMENT = 512                # positions of a row segment past which a longer one is no longer preferred
WIDER_SHARE = 1.5            # a wider lane chunk is timed when the busiest core's lanes grow at most this much


def segment(plan, w: int) -> int:
    """Rows layout: the positions a tile of `w` lanes may span along the scan axis (TILE_ELEMS // w, at most the
    row and SEGMENT). 0 in the cols layout and for rows of whole granules, whose segments start on the grid."""
    if plan.layout != "rows" or plan.S * L.device_nbytes(plan.ydt) % MLU370.dma_granularity == 0:
        return 0
    return min(TILE_ELEMS // w, L.round_up(plan.S, L.PITCH), SEGMENT)


def _balanced(plan, cands: list, busiest: int) -> tuple | None:
    """Rows layout: (W, step, chunks) of lane chunks of `step` < W lanes in W-wide buffers when that deals the
    lanes to the cores so that the busiest core's lanes are cut by a tenth or more (4,099 rows of 1,021 along the
    last axis: 129 chunks of 32 put 160 rows on the busiest core, 96 chunks of 43 put 129: 1.610x -> 1.370x the
    DMA roofline), the narrowest buffers of those (the least padding computed); None otherwise. A candidate the
    cost model times (unit_items, group_items): more chunks per core cost more row ops, so it is not always
    faster (3,625 rows of 64: 191 chunks of 19 lanes, 1.85x the time of 29 chunks of 128)."""
    best = None
    for rounds in range(1, 9):
        chunks = max(1, plan.tasks * rounds // plan.n_other)
        step = -(-plan.nlanes // chunks)
        w = next((c for c in sorted(cands) if c >= step), None)
        if w is None or step * 2 <= w:
            continue
        chunks = -(-plan.nlanes // step)
        key = (-(-plan.n_other * chunks // plan.tasks) * step, w)
        if best is None or key < best[0]:
            best = (key, w, step, chunks)
    if best is not None and best[0][0] * 10 <= busiest * 9:
        return best[1:]
    return None


def choose(plan, per_elem: int, most: int | None = None, least: int | None = None) -> None:
    """Lane chunk W (at most `most`) and scan rows R (cols), or lane block Ra and scan chunk Sc (rows): the
    busiest core's elements first (balance), then larger lane chunks, within the NRAM budget (`per_elem` bytes per
    tile element). `plan.alt_W`: a narrower W as balanced whose row segments are longer (rows off the granule),
    or None; `plan.can_balance`: whether lanes dealt evenly (`_balanced`) would cut the busiest core's share,
    which `plan.balance` asks for. unit_items and group_items time them as candidates."""
    if plan.layout == "cols":   # (whole 128-byte units of the computed type: 64 lanes of a 16-bit scan)
        step = max(LANE_STEP, L.VECTOR_ALIGN // L.device_nbytes(plan.cdt))
        cands = [plan.nlanes] if plan.nlanes <= step else \
            list(range(step, min(1024, L.round_up(plan.nlanes, step)) + 1, step))
        if plan.wide:
            cands = [min(plan.nlanes, WIDE_LANES)]
    else:
        cands = [32, 64, 128, 256] if plan.nlanes > 32 else [64]
        if L.device_nbytes(plan.cdt) == 2:   # a 16-bit lane block is transposed: rows of whole 128-byte units
            cands = [w for w in cands if w >= 64]
    cands = [w for w in cands if (most is None or w <= most) and (least is None or w >= least)] or cands[:1]
    scored = []
    for w in cands:
        chunks = -(-plan.nlanes // w)
        busiest = -(-(plan.n_other * chunks) // plan.tasks) * min(w, plan.nlanes)
        scored.append(((busiest, -w), w, chunks))
    key, plan.W, plan.chunks = min(scored)
    seg = max((s for s in scored if s[0][0] == key[0]), key=lambda s: (segment(plan, s[1]), s[1]))
    plan.alt_W = seg[1] if segment(plan, seg[1]) > segment(plan, plan.W) else None
    # a wider chunk whose busiest core has at most WIDER_SHARE x the lanes: fewer, longer vector ops per scan
    # step (a step costs `vector_op_cycles` + its units), for the cost model to time
    wider = [s[1] for s in scored if s[1] > plan.W and s[0][0] <= WIDER_SHARE * key[0]]
    plan.wide_Ws = wider[:2] if plan.layout == "rows" else []   # (the two narrowest: compile time)
    plan.step = plan.W   # lanes between two chunks: W, or fewer when balanced (the buffers stay W wide)
    balanced = _balanced(plan, cands, key[0]) if plan.layout == "rows" else None
    plan.can_balance = balanced is not None
    if balanced is not None and getattr(plan, "balance", False):
        plan.W, plan.step, plan.chunks = balanced
    # rows of whole 128-byte units need no padding: unpadded (`layout=dense`) tiles
    plan.dense = plan.W * L.device_nbytes(plan.cdt) % L.VECTOR_ALIGN == 0
    plan.units = plan.n_other * plan.chunks
    cap = NRAM_BUDGET // per_elem
    if plan.layout == "cols":
        p = plan.W if plan.dense else L.pitch((1, plan.W))
        plan.R = divisor_tile(plan.S, max(1, min(plan.S, max(1, min(TILE_ELEMS, cap) // p), 2048)), 1)
    else:
        sc = max(L.PITCH, min(TILE_ELEMS, cap) // plan.W // L.PITCH * L.PITCH)
        plan.R = divisor_tile(plan.S, min(sc, L.round_up(plan.S, L.PITCH)), L.PITCH)   # Sc


def divisor_tile(S: int, R: int, step: int) -> int:
    """A tile of `R` scan rows (a multiple of `step`), or, when the tail tile would be at least half a tile, the
    largest multiple of `step` in [R/2, R] that divides S: the tail after the pipelined loop runs unpipelined (its
    load, compute and store in sequence), which costs more than the extra tiles' DMA latencies only when long
    (measured: 1024 x 4096 f16 along the last axis, tiles of 704 + a tail of 576 -> 8 tiles of 512: 1.553x ->
    1.290x the DMA roofline; a tail of 64 after tiles of 192 is cheaper than 32 tiles of 128)."""
    if S <= R or S % R == 0 or S % R < R // 2:
        return R
    for r in range(R - R % step, max(step, R // 2) - 1, -step):
        if r > 0 and S % r == 0:
            return r
    return R


def even_tile(S: int, R: int, step: int) -> int | None:
    """The largest multiple of `step` in [R/2, R) that divides S (every tile whole and pipelined), if any: a
    candidate beside R itself, whose tail tile runs unpipelined (1,024 x 4,096 along the last axis: chunks of 640
    and a tail of 256, 1.108x the DMA roofline; chunks of 512, 1.073x)."""
    for r in range(R - R % step - (step if R % step == 0 else 0), max(step, R // 2) - 1, -step):
        if r > 0 and S % r == 0:
            return r
    return None


def walk_tile(S: int, R: int, step: int) -> int | None:
    """The largest multiple of `step` in [R/2, R) whose walk of the rows layout has no unpipelined tail: it divides
    S, or its tail is 3/4 of a tile or more (one more whole tile, overlapping: scan.py's overlaps), if any (8,191
    rows of 509 in groups: tiles of 320 leave a tail of 189 after the loop; tiles of 256, one overlapping)."""
    for r in range(R - R % step - (step if R % step == 0 else 0), max(step, R // 2) - 1, -step):
        if r > 0 and (S % r == 0 or 4 * (S % r) >= 3 * r):
            return r
    return None


def grow_tile(plan, nram_of) -> int:
    """Rows layout: plan.R (a chunk that fits, from the per-element estimate of the sizing loops) raised to the
    largest multiple of PITCH up to TILE_ELEMS // W whose kernel fits NRAM_BUDGET (`nram_of()`: the NRAM bytes
    of the kernel at the current plan.R). The per-element estimate undershoots: 2,039 x 2,039 along the last axis
    settled on chunks of 192 where 256 fit (1.345x -> 1.230x the DMA roofline). NRAM is not monotonic in R (the
    doubling form's scratch tile, the tail tile's buffers), so every candidate is tried, largest first. Returns
    the NRAM bytes at the R it leaves."""
    fit = plan.R
    if plan.layout != "rows":
        return nram_of()
    top = min(TILE_ELEMS // max(1, plan.W), L.round_up(plan.S, L.PITCH)) // L.PITCH * L.PITCH
    for r in range(top, fit, -L.PITCH):
        plan.R = divisor_tile(plan.S, r, L.PITCH)
        if plan.R > fit:
            used = nram_of()
            if used <= NRAM_BUDGET:
                return used
    plan.R = fit
    return nram_of()


def _sized(spec: ir.Func, info, plan, name: str, most: int | None, balance: bool = False,
           least: int | None = None) -> tuple:
    """(estimated seconds or None, the kernel, its NRAM bytes) of the unit kernel with lane chunks of at most
    `most`: tile sizes from a per-element estimate, refined by the real allocation, then raised to the largest
    fit; the cost model picks R among that fit, the largest tile dividing the scan axis, and a half and a quarter
    of it, the larger on ties (fewer tiles per unit pipeline less: 2,048 f16 along the last axis, tiles of 256
    rather than 512, 1.296x -> 1.250x). (Its GDRAM bytes count segments that start off the 64-byte grid: 8192 x
    300 f16 in tiles of 64 positions moves 19.0 MB, not the 15.3 MB of tiles of 128.)"""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    from gir.passes.schedule_mlu.scan import _dense, _Kernel

    def build():
        k = _Kernel(plan, dict(info.types), name)
        return k.kernel(), k.nram_bytes()
    per_elem = 16          # bytes per tile element: two f32 slots each of the loaded and the stored tile
    plan.balance = balance
    for step in range(24):
        plan.choose(per_elem, most, least)
        kern, used = build()
        if used <= (NRAM_BUDGET if step < 7 else NRAM_SLACK) or plan.R <= (1 if plan.layout == "cols" else L.PITCH):
            break
        per_elem = per_elem * used // NRAM_BUDGET + 1
        if step >= 7:   # a tile of the whole scan axis (no loop: one slot per tile) needs fewer bytes per element
            per_elem += per_elem // 4   # than the pipelined tiles just below it: outgrow the jump (343 x 31)
    if used > NRAM_BUDGET and plan.layout == "rows":   # settled just over the budget (9,084 x 522 f16 cumprod:
        for r in range(plan.R - L.PITCH, 0, -L.PITCH):   # 512 over by 256 bytes): the largest tile under it
            plan.R = r
            kern, used = build()
            if used <= NRAM_BUDGET:
                break
    if used > NRAM_BUDGET:
        return None, _dense(kern, plan), used
    grow_tile(plan, lambda: build()[1])
    unit = 1 if plan.layout == "cols" else L.PITCH
    fit, options = plan.R, []
    walk = walk_tile(plan.S, fit, unit) if plan.layout == "rows" else None
    for r in [fit, even_tile(plan.S, fit, unit), walk] + \
            [divisor_tile(plan.S, max(unit, fit // d // unit * unit), unit) for d in (2, 4)]:
        if r is None or any(o[0] == r for o in options):
            continue
        plan.R = r
        kern, used = build()
        kern = _dense(kern, plan)
        options.append((r, kern, used, estimate(dataclasses.replace(spec, body=(kern,))).seconds))
    pick = order(options, lambda o: o[3], MLU_RANKING)[0]
    plan.R = pick[0]
    return pick[3], pick[1], pick[2]


def unit_items(spec: ir.Func, info, plan, remarks) -> list:
    """The unit kernel of the scan (scan.py's module docstring), sized (module docstring)."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING
    st, tasks = plan.stmt, plan.tasks
    name = f"{spec.name}_mlu"
    from gir.passes.schedule_mlu.scan_subseg import applies
    tried = []
    plan.balance = False
    plan.choose(16)   # (the candidates' geometry: alt_W, can_balance, wide_Ws)
    alt, can_balance, wide = plan.alt_W, plan.can_balance, plan.wide_Ws
    for most, balance, least in [(None, False, None), (alt, False, None), (None, True, None)] + \
            [(w, False, w) for w in wide]:
        # the best balance; longer row segments; lanes dealt evenly; wider chunks
        if (balance and not can_balance) or (not balance and most is None and tried):
            continue
        for sub in (False, True):   # whole tiles in sub-segments (scan_subseg.py), where their steps pay
            plan.subseg = False
            if sub:
                plan.choose(16, most, least)
                if not applies(plan):
                    continue
                plan.subseg = True
            tried.append(_sized(spec, info, plan, name, most, balance, least) +
                         ({a: getattr(plan, a) for a in GEOMETRY},))
    tried += row_units(spec, info, plan, name)
    fits = [t for t in tried if t[0] is not None]
    seconds, kern, used, geometry = order(fits, lambda o: o[0], MLU_RANKING)[0] if len(fits) > 1 else \
        (fits or tried)[0]
    for a, v in geometry.items():
        setattr(plan, a, v)
    plan.balance = False
    if used > NRAM_SLACK:
        raise GirError(f"the scan '{st.target.name}' needs {used} bytes of NRAM for one tile", st.loc)
    if remarks is not None and plan.units < tasks:
        from gir.passes.remarks import Remark
        remarks.append(Remark("schedule-mlu", "missed",
                              f"the scan '{st.target.name}' has {plan.units} independent work units for {tasks} "
                              "cores: the others idle (the scan axis is not split across cores)", st.loc))
    return [kern]


GEOMETRY = ("W", "step", "chunks", "dense", "units", "R", "subseg")   # what choose and the sizing decide
ROW_LANES = (256, 128, 64, 32, 16, 8)   # lane chunks of the whole-row units (`row_units`), widest first
ROW_TILE = 65536          # elements of a whole-row unit's tile at most
ROW_TRIES = 3             # lane chunks timed (the widest that fit)


def row_units(spec: ir.Func, info, plan, name: str) -> list:
    """Rows layout: candidates whose units are whole rows of W lanes in one tile scanned in sub-segments
    (scan_subseg.py), for the ROW_TRIES widest W of ROW_LANES whose tile (at most ROW_TILE elements) fits NRAM,
    each also with its lanes dealt in whole rounds (`dealt`): [(estimated seconds, kernel, NRAM bytes,
    geometry)]. The unit loop is then software-pipelined (scan.py `units_pipelined`) and the per-position
    operands loaded once per core; a chunk of 16 f32 lanes is half a vector unit, which only the sub-segment
    form's rows (W k lanes) and carries (`carry_lanes`) allow -- more units, so less imbalance between the cores.
    (A f16 `cumsum(x * w[j], j)` at 4,392 x 1,207: tiles of 640 positions in 32-lane chunks walked twice and
    doubling, or 448 in 64-lane chunks in sub-segments, 1.95x-2.2x the DMA roofline; one 16-lane tile a unit,
    1.27x.)"""
    if plan.layout != "rows" or plan.lane is None:
        return []
    kept = {a: getattr(plan, a) for a in GEOMETRY}
    try:
        return _row_units(spec, info, plan, name)
    finally:
        for a, v in kept.items():   # (the plan as it came: unit_items sets the chosen geometry)
            setattr(plan, a, v)


def _row_units(spec: ir.Func, info, plan, name: str) -> list:
    from gir.passes.schedule_mlu.cost import estimate
    from gir.passes.schedule_mlu.scan import _dense, _Kernel
    from gir.passes.schedule_mlu.scan_subseg import pays
    out, R, widths = [], L.round_up(plan.S, L.PITCH), 0
    for w in ROW_LANES:
        if w * R > ROW_TILE or w >= 2 * L.round_up(plan.nlanes, ROW_LANES[-1]) or widths == ROW_TRIES:
            continue
        fitted = False
        for step in sorted({w, dealt(plan, w)}, reverse=True):
            if step != w and -(-plan.nlanes // step) == -(-plan.nlanes // w):
                continue   # (dealt into as many chunks: the same units)
            plan.W, plan.step = w, step
            plan.chunks = -(-plan.nlanes // step)
            plan.units = plan.n_other * plan.chunks
            plan.dense, plan.subseg, plan.R = True, True, R
            if not pays(plan):
                break
            k = _Kernel(plan, dict(info.types), name)
            kern, used = _dense(k.kernel(), plan), k.nram_bytes()
            if used > NRAM_BUDGET:
                break
            fitted = True
            out.append((estimate(dataclasses.replace(spec, body=(kern,))).seconds, kern, used,
                        {a: getattr(plan, a) for a in GEOMETRY}))
        widths += fitted
    return out


def dealt(plan, w: int) -> int:
    """Lanes per unit (at most `w`) that deal a plan's lanes to the cores in whole rounds: chunks of `w` leave
    the busiest core a unit more than others when their count is not a multiple of the cores (3,827 rows in
    32-lane units: 120 units, 4 or 3 a core; 128 of 30 lanes, 4 each)."""
    rounds = -(-plan.n_other * -(-plan.nlanes // w) // plan.tasks)
    per_other = max(1, plan.tasks * rounds // plan.n_other)
    return max(1, min(w, -(-plan.nlanes // per_other)))
