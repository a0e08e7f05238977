"""The `schedule` pass on the MLU (target mlu-sim): the IDFG's functions become explicit MLU GIR.

The MLU recipes are the strategies of passes/schedule_mlu (row model with z3 placement, chunked long rows, column
reductions, permutations and reversals, the extended row forms, group normalisation, scans, op by op, scalar
kernels: passes/schedule_mlu/schedule.py tries them in that order). They take the function at concrete sizes,
so every size symbol needs a value in the pass's `sizes` option (`--sizes` of `gir compile` / `gir run`).

They start from the operator-layer function the IDFG was built from (after naive-lower's argmax/argmin
lowering), not from the fused groups: fuse, forward-stores, dead-stores, load-cse and promote run before them
and their remarks are reported, but the MLU strategies make their own fusion decisions (docs/architecture.md,
"Where we differ"): the IDFG decisions they follow are whether the function was fused at all (a pipeline
without 'fuse' gets the op-by-op program, one MLU kernel per statement) and, when `fuse` split it into several
groups and the strategies could not cover the whole function in one kernel, its groups: each group is scheduled as
a function of its own and the composition replaces the whole-function schedule when it moves fewer GDRAM bytes or
avoids a scalar kernel (mlu_groups.py). What a strategy gives up on (a split op by op, chunked rows, a scalar
kernel) is a missed remark in the PassContext, as the GPU search's are.
"""
from __future__ import annotations

from gir import ir
from gir.errors import GirError
from gir.passes.base import PassContext
from gir.passes.middle.search.mlu_groups import by_groups, choose

MLU_TARGETS = ("mlu-sim", "mlu")
MLU_MACHINES = ("", "mlu370")


def is_mlu(target: str) -> bool:
    return target in MLU_TARGETS


def mlu_machine(machine: str = ""):
    """The MLU description the passes plan for (passes/machines/mlu370.json); `machine` must name it or be ''."""
    if machine.lower() not in MLU_MACHINES:
        raise ValueError(f"unknown MLU machine '{machine}' (the MLU target simulates mlu370)")
    from gir.passes.machines import MLU370
    return MLU370


def schedule_graph(ctx: PassContext, graph, sizes: dict[str, int]) -> ir.Module:
    """Every function graph of `graph` scheduled by the MLU strategies; explicit functions pass through.
    `sizes` (the pass's option) wins over the sizes of the run (`ctx.options["bound_sizes"]`: --sizes of
    `gir compile` / `gir run`, the sizes of a gir.compile call), which bind what the option leaves out."""
    sizes = {**dict(ctx.options.get("bound_sizes") or {}), **sizes}
    from gir.passes.middle.graph import FuncGraph
    from gir.passes.schedule_mlu.segcache import shared_segments

    funcs = []
    for f in graph.funcs:
        if not isinstance(f, FuncGraph):
            funcs.append(f)
            continue
        with shared_segments():   # (the whole function's split and its groups' schedule segments alike)
            funcs.append(_schedule_one(ctx, f, sizes))
    return ir.Module(tuple(funcs), loc=graph.loc)


def _schedule_one(ctx: PassContext, f, sizes: dict[str, int]) -> ir.Func:
    """One function graph scheduled: the whole function, or the IDFG's groups when the cost model prefers them."""
    from gir.passes.schedule_mlu import schedule_mlu
    remarks: list = []
    mode = "fused"
    if not f.fused and len(f.stmts) > 1:   # a pipeline without 'fuse': the op-by-op program, as on the GPU
        mode = "opbyop"
        ctx.remark("schedule", "missed", f"function '{f.name}' was not fused (the pipeline has no 'fuse'): "
                   "each statement is its own MLU kernel, intermediates go through GDRAM", f.func.loc)
    try:
        choices: list = []
        out = schedule_mlu(f.func, sizes, mode=mode, remarks=remarks, choices=choices)
    except GirError:
        ctx.remarks.extend(remarks)   # the fallbacks taken before a failure are worth seeing too
        raise
    if mode == "fused" and len(f.groups) > 1:
        whole_kernels, group_remarks = len(out.kernels), []
        try:
            group_choices: list = []
            groups = by_groups(f, sizes, group_remarks, group_choices)
        except Exception as exc:   # noqa: BLE001 - the whole-function schedule stands; the remark says why
            groups = None
            why = exc.message if isinstance(exc, GirError) else f"internal error {type(exc).__name__}: {exc}"
            ctx.remark("schedule", "missed", f"function '{f.name}': the IDFG's {len(f.groups)} fused groups "
                       f"were not tried as MLU functions of their own ({why})", f.func.loc)
        out, remarks, followed = choose(out, remarks, groups, group_remarks, sizes)
        if followed:
            choices = group_choices
            ctx.remark("schedule", "passed", f"function '{f.name}': the MLU schedule follows the IDFG's "
                       f"{len(f.groups)} fused groups ({len(out.kernels)} kernel(s) instead of {whole_kernels} "
                       "for the function as a whole)", f.func.loc)
    ctx.remarks.extend(remarks)
    _idle_cores(ctx, f, out)
    for line in choices:   # the search over the MLU recipes (passes/schedule_mlu/recipes.py)
        ctx.remark("schedule", "analysis", f"function '{f.name}': {line}", f.func.loc)
    ctx.bump("schedule.kernels", len(out.kernels))
    return out


IDLE_SHARE, IDLE_MIN_SECONDS = 4, 50e-6   # a kernel on under a quarter of the cores, estimated above 50 us


def _idle_cores(ctx: PassContext, f, out: ir.Func) -> None:
    """A missed remark for every kernel that the cost model sees keeping most MLU cores idle while it takes long
    enough to matter (one long row, a reduction over the whole tensor): the schedule found too few parallel units
    of work, and says so rather than leaving a 20-30x slower kernel unexplained."""
    from gir.passes.schedule_mlu.cost import estimate
    try:
        kernels = estimate(out).kernels
    except (GirError, ValueError, KeyError):
        return
    for k in kernels:
        if k.busy_tasks * IDLE_SHARE < k.tasks and k.seconds > IDLE_MIN_SECONDS:
            ctx.remark("schedule", "missed", f"function '{f.name}': kernel '{k.name}' keeps {k.busy_tasks} of its "
                       f"{k.tasks} MLU tasks busy (estimate {k.seconds * 1e6:.1f} us): its schedule has only "
                       f"{k.busy_tasks} parallel unit(s) of work (few rows, or one reduction over the whole tensor) "
                       "and the other cores idle", f.func.loc)
