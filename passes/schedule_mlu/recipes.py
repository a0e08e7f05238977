"""The search over MLU recipes: every recipe that maps a function is a candidate, ranked by the MLU cost model.

A recipe turns a function (sizes specialised) into MLU kernels or says why it cannot (`NotRowModel` with the
reason). The recipes, in order of preference on ties:

| recipe | what it maps (module) |
|---|---|
| rows | rows of independent work: NRAM tiles of R rows placed by z3, chunked passes when a row exceeds NRAM (rowmodel.py, placement.py, lower_rows.py, longrows.py) |
| rows-blocked | the same with each core's tiles contiguous and its `[M]` vectors moved once per core (hoist.py) |
| columns | reductions over a leading or middle axis, partial sums per core (colreduce.py) |
| permute | axis permutations (transpose.py) and reversals (reverse.py) |
| extended | scalar reductions, index values, rank > 2 rows viewed as 2-D (extended.py) |
| groupnorm | statistics per group of channels, [CG, HW] tiles (groupnorm.py) |
| tiles | the general tile recipe: merged-axis views, slabs, interleaved pairs (tiles.py) |
| tiles-unmerged | the tile recipe on the declared axes |
| split-rows | few long rows: each row cut into parts over the cores, kept in NRAM, statistics combined through GDRAM (splitrows.py) |

Every recipe is tried; each candidate is a `Candidate` of the shared search (passes/middle/search/candidate.py)
with a `Decision` record and the estimate of passes/schedule_mlu/cost.py. `best` keeps the first candidate in the
order above unless a later one is estimated more than the ranking policy's tie (2%) faster (a rank > 2 view that
would read a shared operand once per tile loses to the tile recipe's merged axes; a tile schedule that leaves
cores idle loses to the row model). The scheduler (schedule.py) takes the winner, reports it as an analysis remark, and falls back to
the op-by-op program only when no recipe maps the function.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from gir import ir
from gir.errors import GirError
from gir.passes.middle.search.candidate import Candidate
from gir.passes.middle.search.decision import Decision
from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
from gir.passes.schedule_mlu.placement import NoTileFits
from gir.passes.schedule_mlu.rowmodel import NotRowModel



@dataclass
class Setting:
    """What every recipe is built for."""
    name: str                     # kernel name prefix
    tasks: int
    nram: int
    allow_sram: bool
    max_rows: int
    views: bool                   # tensors may be viewed with merged axes (not inside the op-by-op baseline)


@dataclass(frozen=True)
class Recipe:
    name: str
    build: Callable   # (spec, info, Setting, remarks) -> list of function items | ir.Func (viewed tensors)


def _rows(spec, info, st: Setting, remarks) -> list:
    from gir.passes.schedule_mlu.longrows import longrows_kernel
    from gir.passes.schedule_mlu.placement import solve_placement
    from gir.passes.schedule_mlu.rowmodel import analyze_rows
    model = analyze_rows(spec, {})
    try:
        pl = solve_placement(model, tasks=st.tasks, allow_sram=st.allow_sram, max_rows=st.max_rows, nram=st.nram)
        return [_row_tiles(spec, model, pl, st)]
    except NoTileFits:   # rows longer than NRAM: chunked passes (longrows.py)
        kernel = longrows_kernel(model, st.name, st.tasks, st.nram)
        missed(remarks, f"rows of {model.n} elements of '{spec.name}' do not fit NRAM: chunked passes read the "
                        "input more than once (up to 1.5x the compulsory traffic)", spec.loc)
        return [kernel]


def _row_tiles(spec, model, pl, st: Setting):
    """The row kernel of the placement's tile height, or of another one the MLU cost model estimates faster by
    more than the ranking's tie: taller tiles when the placement stopped at `max_rows` (short rows: a 64-row tile
    of 504-byte rows is 32 KB, and each of its DMAs waits 500 cycles), or the height that spreads the tiles more
    evenly over the tasks (placement.balanced_rows)."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
    from gir.passes.schedule_mlu.placement import balanced_rows, solve_placement
    from gir.passes.schedule_mlu.vecprep import prepare_kernels
    plans = [(pl.rows, pl.sram)]
    if pl.rows == st.max_rows:
        tall = solve_placement(model, tasks=st.tasks, allow_sram=st.allow_sram, max_rows=TALL * st.max_rows,
                               nram=st.nram)
        plans.append((tall.rows, tall.sram))
    row_bytes = model.n * max(dt.nbytes for dt in model.dtypes.values())
    plans += [(balanced_rows(model.m, r, st.tasks, row_bytes), sram) for r, sram in plans]
    kernels = [lower_rows(model, RowPlan(r, st.tasks, sram), st.name) for r, sram in dict.fromkeys(plans)]
    if len(kernels) == 1:
        return kernels[0]

    def seconds(k) -> float:
        return estimate(dataclasses.replace(spec, body=tuple(prepare_kernels([k], st.nram)))).seconds
    return order(kernels, seconds, MLU_RANKING)[0]


TALL = 4   # the tallest row tiles tried, in units of max_rows


def _rows_blocked(spec, info, st: Setting, remarks) -> list:
    """The row model with each core's tiles contiguous and its `[M]` vectors loaded and stored once per core
    (hoist.py): a row reduction's results are not stored per tile (one 500-cycle DMA per tile and result).
    Ranked against `rows` by the cost model. The vectors come on top of the placement's NRAM (which may use all
    of it): the tiles shrink until the kernel fits (row_mean at M = 100001, N = 1500 overflowed by 1.8 KB)."""
    from gir.passes.schedule_mlu.hoist import blocked_rows, hoist_rows, row_vectors
    from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
    from gir.passes.schedule_mlu.placement import solve_placement
    from gir.passes.schedule_mlu.rowmodel import analyze_rows
    model = analyze_rows(spec, {})
    try:
        pl = solve_placement(model, tasks=st.tasks, allow_sram=st.allow_sram, max_rows=st.max_rows, nram=st.nram)
    except NoTileFits:
        raise NotRowModel("rows longer than NRAM (see 'rows')") from None
    if pl.sram:
        raise NotRowModel("the row tiles are staged through SRAM")
    n_vec = row_vectors(model)
    if not n_vec:
        raise NotRowModel("no [M] vector to move once per core")
    r = blocked_rows(pl.rows, model.m, st.tasks, n_vec, uneven=True)
    if r is None:
        raise NotRowModel("the row vectors of a core exceed the NRAM kept for them")
    from gir.passes.schedule_mlu.tiles_nram import kernel_nram
    while True:   # the per-core vectors come on top of the placement's tiles: shorter tiles until they fit
        kernel = lower_rows(model, RowPlan(r, st.tasks, False), st.name)
        hoisted = hoist_rows(kernel, model, r, st.tasks, model.dtypes)
        if hoisted is kernel:
            raise NotRowModel("the row kernel has statements the blocked form does not move")
        if kernel_nram(hoisted) <= st.nram:
            return [hoisted]
        if r == 1:
            raise NotRowModel("the per-core row vectors do not fit NRAM beside a tile")
        r = blocked_rows(r // 2, model.m, st.tasks, n_vec, uneven=True) or 1


def _split_rows(spec, info, st: Setting, remarks) -> list:
    """Few long rows: each cut into parts over the cores, kept in NRAM between the row statistics' passes."""
    from gir.passes.schedule_mlu.indexops import rewrite_index_values
    from gir.passes.schedule_mlu.rowmodel import analyze_rows
    from gir.passes.schedule_mlu.splitrows import split_rows_items
    from gir.passes.schedule_mlu.tiles_nram import kernel_nram
    vfunc, ix = rewrite_index_values(spec, info)
    if ix.row or ix.lead:
        raise NotRowModel("row indices as values or rank > 2 rows")
    items = split_rows_items(analyze_rows(vfunc if ix.col else spec, {}), st.name, st.tasks, st.nram)
    used = max(kernel_nram(x) for x in items if isinstance(x, ir.Kernel))
    if used > st.nram:
        raise NotRowModel(f"a part of each row needs {used} bytes of NRAM")
    return items


def _columns(spec, info, st: Setting, remarks) -> list:
    from gir.passes.schedule_mlu.colreduce import colreduce_func
    return colreduce_func(spec, info, st.tasks)


def _permute(spec, info, st: Setting, remarks) -> list:
    from gir.passes.schedule_mlu.reverse import reverse_func
    from gir.passes.schedule_mlu.transpose import permute_func
    try:
        return permute_func(spec, info, st.tasks, st.views)
    except NotRowModel:
        return reverse_func(spec, info, st.tasks, st.nram, st.allow_sram, st.max_rows)


def _extended(spec, info, st: Setting, remarks) -> list:
    from gir.passes.schedule_mlu.extended import schedule_extended
    return schedule_extended(spec, info, st.tasks, st.allow_sram, st.max_rows, st.nram)


def _groupnorm(spec, info, st: Setting, remarks) -> list:
    from gir.passes.schedule_mlu.groupnorm import groupnorm_items
    return groupnorm_items(spec, info, st.tasks, st.nram)


def _tiles(spec, info, st: Setting, remarks) -> ir.Func:
    from gir.passes.schedule_mlu.tiles import tile_schedule
    return tile_schedule(spec, info, st.tasks, st.nram, remarks, st.allow_sram, st.max_rows, st.views)


def _tiles_unmerged(spec, info, st: Setting, remarks) -> ir.Func:
    """The tile recipe on the declared axes (merging them can lose a schedule: a full reduction of a matrix
    merged into one axis has no tile of two axes left)."""
    from gir.passes.schedule_mlu.tiles import flatten, tile_schedule
    if not st.views or not flatten(spec, info)[1]:
        raise NotRowModel("the same as 'tiles' (no merged axes here)")
    return tile_schedule(spec, info, st.tasks, st.nram, remarks, st.allow_sram, st.max_rows, False)


RECIPES = (Recipe("rows", _rows), Recipe("rows-blocked", _rows_blocked), Recipe("columns", _columns),
           Recipe("permute", _permute), Recipe("extended", _extended), Recipe("groupnorm", _groupnorm), Recipe("tiles", _tiles),
           Recipe("tiles-unmerged", _tiles_unmerged), Recipe("split-rows", _split_rows))


@dataclass
class Search:
    """The outcome: the candidates in recipe order, why the other recipes do not apply, the first located error a
    recipe raised (NoTileFits: a kernel that cannot fit whatever the recipe does) and the recipes that failed with
    an internal error."""
    candidates: list[Candidate]
    why_not: list[str]
    no_fit: GirError | None = None
    errors: list[str] = dataclasses.field(default_factory=list)   # recipes that failed with an internal error


def search(full: ir.Func, spec: ir.Func, info, st: Setting, compulsory: float) -> Search:
    """Every recipe of RECIPES on `spec` (the function with unread inputs dropped; `full` declares them all)."""
    from gir.passes.schedule_mlu.vecprep import prepare_kernels
    cands, why, no_fit, errors = [], [], None, []
    for r in RECIPES:
        remarks: list = []
        try:
            got = r.build(spec, info, st, remarks)
        except NotRowModel as e:
            why.append(f"{r.name}: {e}")
            continue
        except GirError as e:   # NoTileFits (no tile fits NRAM) or another located refusal: raised by the
            why.append(f"{r.name}: {e.message}")   # scheduler when no other recipe maps the function
            no_fit = no_fit or e
            continue
        except (AssertionError, TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            # a recipe's internal error: the others still compete; schedule.py reports it as a missed remark
            errors.append(f"recipe '{r.name}' failed with an internal error ({type(e).__name__}: {e}); "
                          "it was not considered")
            why.append(f"{r.name}: internal error")
            continue
        func = _as_func(full, got)
        func = dataclasses.replace(func, body=tuple(prepare_kernels(list(func.body), st.nram)))
        try:
            est = estimate(func)
        except (GirError, ValueError, KeyError) as e:   # not estimable: ranked last, still a candidate
            est = None
            why.append(f"{r.name}: no estimate ({e})")
        seconds = est.seconds if est is not None else float("inf")
        gdram = est.gdram_bytes if est is not None else float("inf")
        dec = Decision(r.name, team="core", threads=st.tasks, notes={"kernels": len(func.kernels)})
        cands.append(Candidate(dec, r.name, seconds, gdram, 0.0, compulsory, lambda name, f=func: f, func,
                               {"remarks": remarks, "estimate": est}))
    return Search(cands, why, no_fit, errors)


def best(cands: list[Candidate]) -> Candidate | None:
    """The first candidate in recipe order unless a later one is estimated more than the policy's tie faster (the shared
    ranking rule with the MLU policy: passes/middle/search/ranking.py)."""
    from gir.passes.middle.search.candidate import rank
    return rank(cands, MLU_RANKING)[0] if cands else None


def describe(pick: Candidate, cands: list[Candidate]) -> str:
    """One line for the analysis remark: the chosen recipe, its estimate and the others'."""
    others = ", ".join(f"{c.strategy} {c.seconds * 1e6:.1f} us" for c in cands if c is not pick)
    ratio = pick.dram_bytes / pick.compulsory if pick.compulsory else 0.0
    return (f"MLU recipe '{pick.strategy}' ({pick.decision.notes['kernels']} kernel(s), estimate "
            f"{pick.seconds * 1e6:.1f} us, {ratio:.3f}x compulsory GDRAM bytes) of {len(cands)} candidate(s)"
            + (f"; others: {others}" if others else ""))


def missed(remarks, message: str, loc) -> None:
    if remarks is not None:
        from gir.passes.remarks import Remark
        remarks.append(Remark("schedule-mlu", "missed", message, loc))


def _as_func(full: ir.Func, got) -> ir.Func:
    """The scheduled function: `full` with the recipe's items, or the tile recipe's function (its tensors possibly
    viewed with merged axes) declaring every parameter of `full`."""
    if not isinstance(got, ir.Func):
        return dataclasses.replace(full, body=tuple(got))
    viewed = {p.name: p for p in got.params + got.results}
    return dataclasses.replace(full, params=tuple(viewed.get(p.name, p) for p in full.params),
                               results=tuple(viewed.get(p.name, p) for p in full.results), body=got.body)
