"""`gir run FILE --target sim`: run a program on a target and check it against the reference evaluator.

Operator-layer functions are first lowered by the scheduler; explicit functions run as written (compared
against `--reference FILE` when given). Inputs are random (`--seed`, `--range NAME=LO:HI`) or read from
`--inputs FILE.npz`. Prints the verdict on each result (gir.verdict) and the global traffic.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from gir import ir
from gir.cli.common import load_verified, parse_sizes, pick_func
from gir.cli.inputs import load_inputs
from gir.cli.targets import add_target_argument
from gir.errors import GirError, UsageError
from gir.evaluate import DOMAIN_RANGE
from gir.verdict import ROUNDING_GROWTH, TOLERANCE, compare

VERDICT_HELP = f"""checking results:
  Each result is compared with the reference evaluator run in float64 on the same inputs.
  NaN must appear exactly where the reference has NaN, and +inf / -inf exactly where it has the same
  infinity. On the other elements the error is norm-wise against the reference's magnitude,
      rel. error = ||result - reference||_2 / ||reference||_2
  and must not exceed the tolerance of the result's type:
      {", ".join(f"{dt.value} {tol:g}" for dt, tol in TOLERANCE.items() if tol)}; integers and bool exact (0).
  Where the result is ill-conditioned (e.g. a mean of terms that nearly cancel), the tolerance is widened to
  {ROUNDING_GROWTH:g} x the f32 unit roundoff x ||rounding bound|| / ||reference|| (gir/rounding.py), and the
  table says so. See docs/simulator.md, "Checking results".

inputs:
  Random by default (--seed): floats standard normal, integers in 1..7, booleans fair. A float input read
  directly by log, log1p, sqrt, rsqrt or as the base of pow is uniform in [{DOMAIN_RANGE[0]:g},
  {DOMAIN_RANGE[1]:g}) instead.
  --range NAME=LO:HI draws float input NAME uniformly from [LO, HI). --inputs FILE.npz supplies inputs by
  name (numpy.savez(FILE, x=...)), each of exactly the declared type and shape (bf16: ml_dtypes.bfloat16
  arrays); the inputs it lacks are random.
"""


def register(sub) -> None:
    p = sub.add_parser("run", help="run a program on a target (sim, cuda, mlu-sim) and check it numerically",
                       description="Lower an operator-layer program (or take an explicit one), run it on a target "
                                   "with random or given inputs, compare every result with the numpy reference "
                                   "(float64) and report global-memory traffic. Exit 1 on a mismatch.",
                       epilog=VERDICT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE")
    add_target_argument(p, {"sim": "sim", "cuda": "cuda", "mlu-sim": "mlu-sim"}, "sim",
                        "where to run (mlu-sim, alias mlu: the simulated MLU; hip compiles only: gir compile);")
    p.add_argument("--sizes", help="size bindings, e.g. M=4096,N=1000")
    p.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default 0)")
    p.add_argument("--inputs", metavar="FILE.npz",
                   help="read inputs by parameter name from an .npz file; missing ones are random")
    p.add_argument("--range", dest="ranges", metavar="NAME=LO:HI", action="append", default=[],
                   help="draw the random values of float input NAME uniformly from [LO, HI) "
                        "(repeatable, or comma-separated: x=0.1:10,y=-1:1)")
    p.add_argument("--func", dest="func_name", help="function to run (default: the first)")
    p.add_argument("--check", action="store_true",
                   help="also prove scheduled kernels safe with the static checks (explicit files always are)")
    p.add_argument("--no-check", action="store_true", help="skip the static checks of explicit files")
    p.add_argument("--reference", metavar="FILE", help="operator-layer file to compare an explicit program with")
    p.add_argument("--no-races", action="store_true", help="skip race detection on the simulator (faster)")
    from gir.cli.pipeline import add_arguments
    add_arguments(p, "run")
    p.set_defaults(func=run)


def _lower(module: ir.Module, sizes, args) -> ir.Module:
    """The compile pipeline of the target that runs it (sim schedules as cuda does, with warps of 32; mlu-sim
    through its own default pipeline, `gir passes --default --target mlu-sim`)."""
    from gir.cli.pipeline import lower
    from gir.source import display_name
    if args.target == "mlu-sim":
        from gir.cli.compile import require_mlu_kernels
        out = lower(module, "mlu-sim", sizes, args, display_name(args.file))
        require_mlu_kernels(out, getattr(args, "passes", None), {f.name for f in module.funcs if not f.is_explicit})
        return out
    return lower(module, "cuda" if args.target == "cuda" else "sim", sizes, args, display_name(args.file))


def run(args) -> int:
    from types import SimpleNamespace

    from gir.empty import has_empty, specialize_empty
    from gir.evaluate import check_footprint, domain_ranges, random_inputs
    from gir.targets.registry import get_target
    from gir.views import to_outer, to_view

    target = get_target(args.target)
    sizes = parse_sizes(args.sizes)
    module = load_verified(args.file, sizes)
    func = pick_func(module, args.func_name, args.file)
    given = load_inputs(args.inputs, func, sizes) if args.inputs else {}  # binds sizes from the arrays
    ranges = parse_ranges(args.ranges, func, given, args.inputs)
    check_footprint(func, sizes)  # before lowering: huge sizes are an error at the source declaration
    reference = None
    check = args.check or (func.is_explicit and not args.no_check)
    empty = None
    if not func.is_explicit:
        reference = func
        if has_empty(func, sizes):   # zero-size dimensions: run what remains, the rest is empty (gir/empty.py)
            empty = specialize_empty(func, sizes)
            func = empty.func or func
            check = check and empty.func is not None
        if empty is None or empty.func is not None:   # the target's compile pipeline (--passes replaces it)
            func = _lower(ir.Module((func,)), sizes, args).func(func.name)
    elif args.reference:
        ref_module = load_verified(args.reference)
        reference = pick_func(ref_module, args.func_name or func.name if len(ref_module.funcs) > 1 else None,
                          args.reference)
        if reference.is_explicit:
            raise GirError(f"the reference '{reference.name}' in {args.reference} is not operator-layer")
    if check:
        try:
            from gir.passes.analysis.checks import check_module
        except ImportError as exc:
            raise GirError(f"the static checks are unavailable: {exc}") from None
        for w in check_module(ir.Module((func,)), "cuda" if target.family == "gpu" else "mlu", sizes, False):
            print(w.format(), file=sys.stderr)
    ranges = {**domain_ranges(reference or func), **ranges}
    outer = reference or func  # arrays cross the boundary in their declared shapes (reshape views: gir/views.py)
    inputs = random_inputs(outer, sizes, np.random.default_rng(args.seed), ranges, given)
    try:
        with np.errstate(all="ignore"):  # f32 overflow to inf is the program's semantics; the table shows it
            if empty is not None and empty.func is None:   # every result is empty: nothing to run
                result = SimpleNamespace(outputs={}, stats=None)
            else:
                viewed = to_view(outer, inputs, sizes)
                if empty is not None:
                    viewed = {p.name: viewed[p.name] for p in empty.func.params}
                result = _execute(target, func, viewed, sizes, not args.no_races)
    except MemoryError:
        raise GirError(f"out of memory running '{func.name}' on target '{target.name}'", func.loc,
                       ["a buffer is too large at these sizes; use smaller --sizes (and do not skip the "
                        "capacity check with --no-check)"]) from None
    if result is None:  # the target cannot run here (no GPU): an error, not a usage mistake
        return 1
    for r in getattr(result, "remarks", ()):  # remarks of a runner that scheduled the function itself
        print(r.format(), file=sys.stderr)
    computed = result.outputs if empty is None else empty.outputs(result.outputs, reference.results)
    outputs = to_outer(outer, computed, sizes)
    status = 0
    if reference is not None:
        from gir.rounding import expected_and_bounds

        expected, bounds = expected_and_bounds(reference, inputs, sizes)   # a view's own sizes come from no input
        status = _compare(outputs, expected, {p.name: p.type.dtype for p in (reference or func).results}, bounds)
    else:
        _summary(outputs)
    stats = getattr(result, "stats", None)
    if isinstance(stats, dict):
        _mlu_report(stats, inputs, outputs)
    elif stats is not None:
        _traffic(stats, inputs, outputs)
    elif getattr(result, "seconds", 0):
        print(f"device time: {result.seconds * 1e6:.1f} us")
    return status


def parse_ranges(texts: list[str], func: ir.Func, given: dict[str, np.ndarray],
                 path: str | None) -> dict[str, tuple[float, float]]:
    """`--range x=0.1:10 --range y=-1:1,z=0:1` → {"x": (0.1, 10.0), ...}; UsageError "bad --range ..." on a
    malformed entry, an unknown or non-float input, an input read from --inputs, or LO >= HI."""
    params = {p.name: p for p in func.params}
    ranges: dict[str, tuple[float, float]] = {}
    for part in (part for text in texts for part in text.split(",")):
        name, sep, bounds = part.partition("=")
        name, limits = name.strip(), bounds.split(":")
        try:
            lo, hi = (float(v) for v in limits) if sep and name and len(limits) == 2 else (None, None)
        except ValueError:
            lo = hi = None
        if lo is None:
            raise UsageError(f"bad --range '{part}': expected NAME=LO:HI (e.g. x=0.1:10)")
        if name not in params:
            raise UsageError(f"bad --range '{part}': '{func.name}' has no input '{name}' "
                             f"(inputs: {', '.join(params) or 'none'})")
        dt = params[name].type.dtype
        if not dt.is_float:
            raise UsageError(f"bad --range '{part}': input '{name}' is {dt.value}; ranges apply to float inputs")
        if name in given:
            raise UsageError(f"bad --range '{part}': input '{name}' is read from {path}")
        if name in ranges:
            raise UsageError(f"bad --range '{part}': input '{name}' has a range already")
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise UsageError(f"bad --range '{part}': LO and HI must be finite")
        if lo >= hi:
            raise UsageError(f"bad --range '{part}': LO must be less than HI")
        big = float(_finfo(dt).max)
        if max(abs(lo), abs(hi)) > big:
            raise UsageError(f"bad --range '{part}': {dt.value} holds values up to {big:g}")
        ranges[name] = (lo, hi)
    return ranges


def _finfo(dt: ir.DType):
    if dt == ir.DType.bf16:
        import ml_dtypes

        return ml_dtypes.finfo(ml_dtypes.bfloat16)
    return np.finfo(dt.numpy)


def _execute(target, func, inputs, sizes, races):
    if target.name == "cuda":
        from gir.targets.cuda import available

        if not available():
            print("gir: no CUDA device available (the cuda target needs an NVIDIA GPU and cupy)", file=sys.stderr)
            return None
    if target.runner is None:
        print(f"gir: target '{target.name}' can compile but not run here (no runner); "
              f"use gir compile --target {target.name}", file=sys.stderr)
        return None
    runner = target.load_runner()
    if target.name == "sim":
        return runner(func, inputs, sizes, warp_size=target.warp_size, check_races=races)
    if target.name == "mlu-sim":   # the compile pipeline ran (software-pipeline in it, unless --passes left it out)
        return runner(func, inputs, sizes, pipeline=False)
    return runner(func, inputs, sizes)


def _compare(outputs, expected, dtypes, bounds=None) -> int:
    """The verdict table (gir.verdict): one row per result, then the reason under a row that failed or whose
    tolerance was widened."""
    print(f"{'output':<16} {'shape':<16} {'rel. error':>12} {'tolerance':>10}  result")
    status = 0
    for name, want in expected.items():
        got = outputs[name]
        v = compare(got, want, dtypes[name], (bounds or {}).get(name))
        status |= not v.passed
        print(f"{name:<16} {str(list(got.shape)):<16} {v.error:>12.3e} {v.tolerance:>10.1e}  "
              f"{'pass' if v.passed else 'FAIL'}")
        if v.reason:
            print(f"  {name}: {v.reason}")
    return status


def _summary(outputs) -> None:
    for name, arr in outputs.items():
        a = np.asarray(arr, np.float64)
        nan = int(np.isnan(a).sum())
        fin = a[np.isfinite(a)] if a.size else a
        rng = f"min={fin.min():.6g} max={fin.max():.6g} mean={fin.mean():.6g}" if fin.size else "no finite values"
        print(f"{name}: {arr.dtype}{list(arr.shape)}  {rng}" + (f"  NaN={nan} (unwritten?)" if nan else ""))


def _traffic(stats, inputs, outputs) -> None:
    compulsory = sum(np.asarray(v).nbytes for v in inputs.values()) + sum(v.nbytes for v in outputs.values())
    moved = stats.global_bytes
    print(f"global traffic: {moved} bytes in 32-byte sectors (read {stats.global_read_bytes}, "
          f"write {stats.global_write_bytes}); compulsory {compulsory} bytes; "
          f"ratio {moved / compulsory if compulsory else float('nan'):.3f}")


def _mlu_report(stats: dict, inputs, outputs) -> None:
    from gir.targets.mlu import MLU370

    compulsory = sum(np.asarray(v).nbytes for v in inputs.values()) + sum(v.nbytes for v in outputs.values())
    roofline = compulsory / MLU370.gdram_bandwidth
    print(f"simulated time: {stats['seconds'] * 1e6:.2f} us over {len(stats.get('kernels', []))} kernel(s); "
          f"DMA roofline {roofline * 1e6:.2f} us (ratio {stats['seconds'] / roofline if roofline else float('nan'):.3f}); "
          f"GDRAM traffic {stats['gdram_traffic_bytes']:.0f} bytes vs compulsory {compulsory}")
