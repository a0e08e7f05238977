"""The MLU schedule that follows the IDFG's fused groups (a candidate of `schedule{target=mlu-sim}`).

The MLU strategies (passes/schedule_mlu) fuse a whole function when one of their recipes covers it; when none
does they fall back statement by statement (one kernel per statement, intermediates through GDRAM) or to scalar
kernels. The IDFG already knows better groups: `fuse` proved which statements share teams. This candidate hands
the strategies one function per group -- the group's statements, its inputs (function parameters or values of
earlier groups) and its outputs (function results or values later groups read, kept in GDRAM) -- and composes
their kernels in dependence order. `choose` keeps the whole-function schedule unless the MLU cost model
(passes/schedule_mlu/cost.py, the estimate that ranks the recipes) says the composition is faster: a softmax and
a row mean over two unrelated tensors in one function were six op-by-op kernels (3.69x the DMA roofline), the
composition is the IDFG's two fused groups; three unrelated row computations that the tile recipe made one
kernel over the cross product of their row axes (every row of each recomputed and stored once per row of the
others) are three kernels.

A group is scheduled as a function of its own, views included (a whole-tensor statistic seen as one row, a
vector as rows of its flat memory): the composed function declares each viewed parameter or result with its
view. A view the composition cannot declare -- of a value crossing between groups (a GDRAM temporary), or of a
tensor another group accesses otherwise -- sends that group back to a schedule without views.
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.walk import walk

SCALAR = "runs as a scalar MLU kernel"


def by_groups(g, sizes: dict[str, int], remarks: list, choices: list | None = None) -> ir.Func | None:
    """The composition of the strategies' schedules of `g`'s groups (a `FuncGraph` fused into two or more
    groups), or None when it does not apply (one group, reshape views, groups without a dependence order)."""
    from gir.passes.schedule_mlu.schedule import specialize
    from gir.passes.schedule_mlu.segments import compose, part_function, view_clashes
    from gir.verifier import verify_module

    func = g.func
    if len(g.groups) < 2 or any(p.view is not None for p in func.params + func.results):
        return None
    assigns = [x for x in func.body if isinstance(x, ir.Assign)]
    if len(assigns) != len(g.stmts):
        return None
    reads = [{x.name for x in walk(a.value) if isinstance(x, ir.Ref)} for a in assigns]
    group_of = {s: grp.id for grp in g.groups for s in grp.stmts}
    order = _dependence_order(g.groups, assigns, reads, group_of)
    if order is None:
        return None
    subs = [sub for grp in order
            if (sub := part_function(func, sorted(grp.stmts), g.types, f"{func.name}_g{grp.id}")) is not None]
    done = [_schedule_part(sub, sizes, True) for sub in subs]
    while (clash := view_clashes(func, [part for part, _, _ in done])):   # again without views (once each)
        for i in clash:
            done[i] = _schedule_part(subs[i], sizes, False)
    for part, part_remarks, part_choices in done:
        remarks.extend(part_remarks)
        if choices is not None:
            choices.extend(part_choices)
    parts = [part for part, _, _ in done]
    viewed = {p.name: p for part in parts for p in part.params + part.results if p.view is not None}
    spec = specialize(func, sizes)
    spec = dataclasses.replace(spec, params=tuple(viewed.get(p.name, p) for p in spec.params),
                               results=tuple(viewed.get(p.name, p) for p in spec.results))
    out = dataclasses.replace(spec, body=tuple(compose(func, parts)))
    verify_module(ir.Module((out,)))
    return out


def _schedule_part(sub: ir.Func, sizes: dict[str, int], views: bool) -> tuple[ir.Func, list, list]:
    """(schedule, remarks, choices) of one group's function; `views`: whether it may view its tensors (rows of
    flat memory, merged axes), as a function of its own may."""
    from gir.passes.schedule_mlu import schedule_mlu
    from gir.passes.schedule_mlu.segments import NO_VIEWS
    remarks: list = []
    choices: list = []
    if not views:
        NO_VIEWS.add(sub.name)
    try:
        return schedule_mlu(sub, sizes, remarks=remarks, choices=choices), remarks, choices
    finally:
        NO_VIEWS.discard(sub.name)


def choose(whole: ir.Func | None, whole_remarks: list, groups: ir.Func | None, group_remarks: list,
           sizes: dict[str, int]) -> tuple[ir.Func, list, bool]:
    """(schedule, its remarks, whether it is the group composition): the whole-function schedule unless the
    MLU cost model (passes/schedule_mlu/cost.py, which estimates scalar kernels too) estimates the composition
    more than the MLU ranking policy's tie faster -- a scalar kernel over five elements beside three vector
    kernels beats one tile kernel over the cross product of unrelated axes (560 us). When either is not
    estimable: the one with fewer scalar kernels, then the one that moves fewer GDRAM bytes (2% margin)."""
    if groups is None:
        return whole, whole_remarks, False
    if whole is None:
        return groups, group_remarks, True
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    try:   # (the shared ranking rule's tie: passes/middle/search/ranking.py)
        better = MLU_RANKING.beats(estimate(groups).seconds, estimate(whole).seconds)
    except (GirError, ValueError, KeyError):
        scalar_whole = sum(SCALAR in r.message for r in whole_remarks)
        scalar_groups = sum(SCALAR in r.message for r in group_remarks)
        if scalar_groups != scalar_whole:
            better = scalar_groups < scalar_whole
        else:
            try:
                better = offchip_bytes(groups, sizes) < 0.98 * offchip_bytes(whole, sizes)
            except GirError:   # not countable: keep the whole-function schedule
                better = False
    return (groups, group_remarks, True) if better else (whole, whole_remarks, False)


def offchip_bytes(f: ir.Func, sizes: dict[str, int]) -> int:
    """GDRAM bytes (reads and writes) of every kernel of an explicit MLU function, counted with isl (the off-chip
    accesses only: on-chip ones are most of a kernel's instructions and cost nothing here)."""
    from gir.passes.analysis import isl_helpers as ih
    from gir.passes.analysis.access import collect
    total = 0
    for k in f.kernels:
        ki = collect(f, k)
        for ins in ki.instrs:
            for acc in ins.accesses:
                if acc.buf.level.off_chip:
                    total += ih.count(ki.access_map(ins, acc), ki.params, sizes) * acc.buf.type.dtype.nbytes
    return total


def _dependence_order(groups, assigns, reads, group_of) -> list | None:
    """The groups in an order where every group follows the groups whose values it reads (None if cyclic)."""
    producer = {a.target.name: group_of[i] for i, a in enumerate(assigns)}
    needs = {grp.id: {producer[n] for i in grp.stmts for n in reads[i] if n in producer} - {grp.id}
             for grp in groups}
    by_id = {grp.id: grp for grp in groups}
    out, done = [], set()
    while len(out) < len(groups):
        ready = [grp for grp in sorted(groups, key=lambda x: min(x.stmts)) if grp.id not in done and
                 needs[grp.id] <= done]
        if not ready:
            return None
        out.append(by_id[ready[0].id])
        done.add(ready[0].id)
    return out
