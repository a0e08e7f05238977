"""`gir run FILE --target sim`: run a program on a target and check it against the reference evaluator.

Operator-layer functions are first lowered by the scheduler; explicit functions run as written (compared
against `--reference FILE` when given). Prints a table of relative errors and the global traffic.
"""
from __future__ import annotations

import sys

import numpy as np

from gir import ir
from gir.cli.common import load_verified, parse_sizes, pick_func
from gir.errors import GirError

TOLERANCE = {ir.DType.f32: 1e-5, ir.DType.f16: 1e-2, ir.DType.bf16: 1e-2}


def register(sub) -> None:
    p = sub.add_parser("run", help="run a program on a target (sim, cuda, mlu-sim) and check it numerically",
                       description="Lower an operator-layer program (or take an explicit one), run it on a target "
                                   "with random inputs, compare every result with the numpy reference "
                                   "(float64) and report global-memory traffic. Exit 1 on a mismatch.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--target", default="sim", help="sim (default), cuda, hip, mlu-sim")
    p.add_argument("--sizes", help="size bindings, e.g. M=4096,N=1000")
    p.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default 0)")
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
    from gir.cli.pipeline import lower
    return lower(module, "sim", sizes, args, args.file)


def run(args) -> int:
    from gir.evaluate import check_footprint, evaluate, random_inputs
    from targets.registry import get_target

    target = get_target(args.target)
    sizes = parse_sizes(args.sizes)
    module = load_verified(args.file)
    func = pick_func(module, args.func_name, args.file)
    check_footprint(func, sizes)  # before lowering: huge sizes are an error at the source declaration
    reference = None
    check = args.check or (func.is_explicit and not args.no_check)
    if not func.is_explicit:
        reference = func
        if target.family == "gpu":  # the MLU runner schedules operator-layer functions itself
            func = _lower(ir.Module((func,)), sizes, args).func(func.name)
    elif args.reference:
        ref_module = load_verified(args.reference)
        reference = pick_func(ref_module, args.func_name or func.name if len(ref_module.funcs) > 1 else None,
                          args.reference)
        if reference.is_explicit:
            raise GirError(f"the reference '{reference.name}' in {args.reference} is not operator-layer")
    if check:
        try:
            from passes.analysis.checks import check_module
        except ImportError as exc:
            raise GirError(f"the static checks are unavailable: {exc}") from None
        for w in check_module(ir.Module((func,)), "cuda" if target.family == "gpu" else "mlu", sizes, False):
            print(w.format(), file=sys.stderr)
    inputs = random_inputs(func, sizes, np.random.default_rng(args.seed))
    try:
        with np.errstate(all="ignore"):  # f32 overflow to inf is the program's semantics; the table shows it
            result = _execute(target, func, inputs, sizes, not args.no_races)
    except MemoryError:
        raise GirError(f"out of memory running '{func.name}' on target '{target.name}'", func.loc,
                       ["a buffer is too large at these sizes; use smaller --sizes (and do not skip the "
                        "capacity check with --no-check)"]) from None
    if result is None:
        return 2
    status = 0
    if reference is not None:
        expected = evaluate(reference, inputs, compute_dtype=np.float64)
        status = _compare(result.outputs, expected, {p.name: p.type.dtype for p in func.results})
    else:
        _summary(result.outputs)
    stats = getattr(result, "stats", None)
    if isinstance(stats, dict):
        _mlu_report(stats, inputs, result.outputs)
    elif stats is not None:
        _traffic(stats, inputs, result.outputs)
    elif getattr(result, "seconds", 0):
        print(f"device time: {result.seconds * 1e6:.1f} us")
    return status


def _execute(target, func, inputs, sizes, races):
    if target.name == "cuda":
        from targets.cuda import available

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
    return runner(func, inputs, sizes)


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    a, b = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        return float(np.mean(a != b))
    finite = np.isfinite(b)
    if (np.isnan(a) != np.isnan(b)).any() or (a[~finite] != b[~finite]).any():
        return float("inf")
    a, b = a[finite], b[finite]
    denom = np.linalg.norm(b)
    diff = np.linalg.norm(a - b)
    return float(diff / denom) if denom > 0 else float(diff)


def _compare(outputs, expected, dtypes) -> int:
    print(f"{'output':<16} {'shape':<16} {'rel. error':>12}  result")
    status = 0
    for name, want in expected.items():
        got = outputs[name]
        err = rel_error(got, want)
        ok = err <= TOLERANCE.get(dtypes[name], 0.0)
        status |= not ok
        print(f"{name:<16} {str(list(got.shape)):<16} {err:>12.3e}  {'pass' if ok else 'FAIL'}")
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
    from targets.mlu import MLU370

    compulsory = sum(np.asarray(v).nbytes for v in inputs.values()) + sum(v.nbytes for v in outputs.values())
    roofline = compulsory / MLU370.gdram_bandwidth
    print(f"simulated time: {stats['seconds'] * 1e6:.2f} us over {len(stats.get('kernels', []))} kernel(s); "
          f"DMA roofline {roofline * 1e6:.2f} us (ratio {stats['seconds'] / roofline:.3f}); "
          f"GDRAM traffic {stats['gdram_traffic_bytes']:.0f} bytes vs compulsory {compulsory}")
