"""`gir bench`: benchmark suites of memory-bound operators on a target."""
from __future__ import annotations

import sys
from pathlib import Path

from gir.errors import UsageError
from gir.cli.targets import add_target_argument


def register(sub) -> None:
    from gir.targets.bench.cases import SUITE_NAMES

    p = sub.add_parser(
        "bench", help="benchmark memory-bound operator suites",
        description="Benchmark suites (or GIR files) on a target; with no SUITE, every suite ('all').\n"
                    "Reports compile time, compulsory and moved bytes, and time: CUDA events on a GPU (with torch\n"
                    "eager / torch.compile / cupy baselines), simulated time vs roofline and op-by-op on mlu-sim,\n"
                    "traffic and correctness on sim. Results are judged as `gir run` judges them (status, rel_err,\n"
                    "tolerance; see `gir run --help`). Writes results.json (with the git commit of the compiler),\n"
                    "results.csv and one PNG per suite (needs matplotlib: pip install 'gir-compiler[bench]').\n"
                    "Progress: one line per case on stderr when stderr is a terminal or the run is expected to\n"
                    "take more than a few seconds (-q: none).",
        epilog="examples:\n  gir bench                      every suite (all) on sim, full sizes\n"
               "  gir bench softmax --target sim --quick\n"
               "  gir bench all --target mlu-sim --quick --dtypes f32 -o out/bench\n"
               "  gir bench samples/softmax.gir --sizes M=4096,N=1024 --target cuda\n"
               "  gir bench model.onnx --target mlu-sim --sizes batch=8,seq=128 -o out/model\n\n"
               "An ONNX model (MODEL.onnx) is imported as `gir import` does; every imported memory-bound subgraph\n"
               "is a case, judged against onnx.reference; on cuda also timed with onnxruntime and torch.compile.\n"
               "Its left-out nodes are printed; results.md (a Markdown table) and DIR/import/ are written too.",
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="*", default=["all"], metavar="SUITE|FILE",
                   help=f"suite names ({', '.join(SUITE_NAMES)}), .gir files, or one .onnx model (default: all, "
                        "every suite)")
    add_target_argument(p, {"sim": "sim", "mlu-sim": "mlu-sim", "cuda": "cuda"}, "sim")
    p.add_argument("--quick", action="store_true", help="small sizes (for CI)")
    p.add_argument("--dtypes", default=None,
                   help="element types of suite cases (default all three); for a model, the storage types of its "
                        "functions' float parameters and results (default: the model's own)")
    p.add_argument("--sizes", help="sizes for FILE arguments, e.g. M=4096,N=1024; for a model, its symbolic "
                                   "dimensions (ONNX dim_param names)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=50, help="timed runs per case on cuda (median reported)")
    p.add_argument("--baselines", choices=("all", "eager", "none"), default="all",
                   help="cuda: which framework baselines to time (all: torch eager, torch.compile and cupy; eager: "
                        "no torch.compile, which compiles every case for seconds)")
    p.add_argument("--no-baselines", action="store_true", help="skip torch/cupy baselines (= --baselines none)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("-o", "--out", default="bench-out", help="directory for results.json/.csv and PNGs")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.targets.bench.driver import collect_cases, run_bench

    if args.no_baselines:
        args.baselines = "none"
    dtypes = None if args.dtypes is None else tuple(d.strip() for d in args.dtypes.split(",") if d.strip())
    bad = [d for d in dtypes or () if d not in ("f32", "f16", "bf16")]
    if bad:
        raise UsageError(f"unknown --dtypes entry '{bad[0]}' (use f32, f16, bf16)")
    models = [w for w in args.what if w.endswith(".onnx")]
    if models:
        return _run_model(models, args, dtypes)
    cases = collect_cases(args.what, quick=args.quick, dtypes=dtypes or ("f32", "f16", "bf16"),
                          sizes_text=args.sizes)
    result = run_bench(cases, args, argv=_argv())
    print(result.table)
    for f in result.files:
        print(f"wrote {f}")
    for note in result.notes:
        print(note, file=sys.stderr)
    return 1 if any(r["status"] in ("FAIL", "ERROR") for r in result.rows) else 0


def _argv() -> list[str]:
    return sys.argv[2:] if sys.argv[1:2] == ["bench"] else sys.argv[1:]


def _run_model(models: list[str], args, dtypes) -> int:
    """`gir bench MODEL.onnx`: the imported subgraphs of one model (targets/bench/model.py)."""
    import importlib.util

    if len(models) != 1 or len(args.what) != 1:
        raise UsageError("give one .onnx model alone (suites and .gir files are benchmarked separately)")
    if importlib.util.find_spec("onnx") is None:
        raise UsageError("gir bench MODEL.onnx needs the onnx package: pip install 'gir-compiler[onnx]'")
    if args.quick:
        raise UsageError("--quick picks suite sizes; a model runs at its own shapes (--sizes for symbolic ones)")
    path = Path(models[0])
    if not path.is_file():
        raise UsageError(f"no such model file: {models[0]}")
    from gir.targets.bench.model import MODEL_DTYPES, bench_model, left_out_text

    try:
        bench = bench_model(path, args.target, args.out, dtypes or MODEL_DTYPES, args.sizes, args.seed,
                            args.repeat, args.baselines, args.quiet, _argv())
    except Exception as exc:  # a file onnx cannot read: one line, no traceback
        if type(exc).__module__.startswith(("onnx", "google")) or type(exc) in (OSError, ValueError):
            print(f"{models[0]}: error: cannot read the ONNX model: {exc}", file=sys.stderr)
            return 1
        raise
    print(left_out_text(bench.imported))
    print(bench.table)
    for f in bench.files:
        print(f"wrote {f}")
    for note in bench.notes:
        print(f"gir bench: {note}", file=sys.stderr)
    return 1 if any(r["status"] in ("FAIL", "ERROR") for r in bench.rows) else 0


__all__ = ["register", "run", "Path"]
