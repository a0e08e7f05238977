"""The optimising middle: the function's instruction-level dataflow graph (IDFG) and the passes over it.

    naive-lower      operator layer -> IDFG of the op-by-op program        (lowering.py, naive.py)
    fuse             merge loop nests whose dependences stay within a team  (fuse.py, axes.py, relations.py)
    forward-stores   in-group reads served on chip                          (forward.py)
    dead-stores      @global writes nobody reads removed                    (forward.py)
    load-cse         one load per element and team point                    (loadcse.py)
    promote          memory level per kept value, z3 Optimize               (promote.py)
    schedule         the search: decision records, recipes, cost, checks   (search/; the MLU's: search/mlu.py)
    software-pipeline  (mlu-sim) async load / compute / store in 2-3 tile slots (schedule_mlu/swpipe.py)
    dense-staging    (mlu-sim) padded tiles moved to contiguous GDRAM runs in one segment (schedule_mlu/staging.py)

`default_pipeline_text(target, sizes)` is the text `gir compile` runs (for cuda, hip, sim and mlu-sim alike);
`lower_module` runs it from Python.
"""
from __future__ import annotations

from gir import ir

def default_pipeline_text(target: str = "cuda", sizes: dict[str, int] | None = None, machine: str = "",
                          check: bool = True) -> str:
    """The default compile pipeline of a target, as text (`gir passes --default --target T`). Every target runs
    the same passes; on mlu-sim (alias mlu) promote plans with the MLU's capacities (passes/machines/mlu370.json)
    and schedule's recipes are the MLU strategies (search/mlu.py), which need every size in `sizes`; the MLU's
    pipeline ends with software-pipeline (its kernels' load / compute / store pipelining) and dense-staging."""
    from gir.passes.builtin.hoist import HoistReductions
    from gir.passes.builtin.delinear import Delinearize
    from gir.passes.builtin.squeeze import SqueezeUnitAxes
    from gir.passes.middle.search.mlu import is_mlu
    from gir.passes.middle.forward import DeadStores, ForwardStores
    from gir.passes.middle.fuse import Fuse
    from gir.passes.middle.loadcse import LoadCSE
    from gir.passes.middle.lowering import NaiveLower
    from gir.passes.middle.promote import Promote
    from gir.passes.middle.search.schedule import Schedule
    from gir.passes.pipeline import PassPipeline
    hints = tuple(f"{k}={v}" for k, v in (sizes or {}).items())
    if is_mlu(target):
        target, check = "mlu-sim", True   # (the MLU's kernels are checked by gir compile / gir run --check)
    passes = (SqueezeUnitAxes(), Delinearize(), HoistReductions(), NaiveLower(), Fuse(), ForwardStores(), DeadStores(), LoadCSE(),
              Promote(target=target, machine=machine, sizes=hints),
              Schedule(target=target, sizes=hints, machine=machine, check=check))
    if is_mlu(target):
        from gir.passes.schedule_mlu.staging import DenseStaging
        from gir.passes.schedule_mlu.swpipe import SoftwarePipeline
        passes += (SoftwarePipeline(), DenseStaging())
    return str(PassPipeline(passes))


def lower_module(module: ir.Module, target: str = "cuda", options: dict | None = None, ctx=None) -> ir.Module:
    """Every operator-layer function through the default pipeline; explicit functions pass through."""
    return run_default(module, target, options, ctx)[0]


def run_default(module: ir.Module, target: str = "cuda", options: dict | None = None, ctx=None):
    """(explicit module, PassContext) after the default pipeline."""
    from gir.passes.base import PassContext
    from gir.passes.manager import PassManager
    opts = dict(options or {})
    if all(f.is_explicit for f in module.funcs):
        return module, ctx or PassContext(target=target)
    text = default_pipeline_text(target, opts.get("sizes"), opts.get("machine") or "", opts.get("check", True))
    ctx = ctx or PassContext(target=target)
    ctx.options.update({k: v for k, v in opts.items() if k not in ("sizes", "machine", "check")})
    ctx.options.setdefault("bound_sizes", dict(opts.get("sizes") or {}))
    return PassManager(text, verify_each=False).run(module, ctx), ctx
