"""`gir import MODEL.onnx -o DIR`: the memory-bound subgraphs of an ONNX model as GIR functions + a report."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from gir.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("import", help="import the memory-bound subgraphs of an ONNX model as GIR functions",
                       description="Find the maximal memory-bound subgraphs of an ONNX model (element-wise ops, "
                                   "softmax, normalisations, reductions, transposes, views) and write one GIR "
                                   "function per subgraph to DIR/NAME.gir, with DIR/report.md and "
                                   "DIR/report.json saying which ONNX tensors each function reads and writes and "
                                   "which nodes were left out and why. Needs the onnx package "
                                   "(pip install 'gir-compiler[onnx]'). Exit status 0 when something was "
                                   "imported, 1 when nothing was. See docs/onnx.md.")
    p.add_argument("model", metavar="MODEL.onnx")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the .gir files and report")
    p.set_defaults(func=run)


def run(args) -> int:
    if importlib.util.find_spec("onnx") is None:
        raise UsageError("gir import needs the onnx package: pip install 'gir-compiler[onnx]'")
    from gir.onnx import import_onnx
    from gir.onnx.report import summary

    path = Path(args.model)
    if not path.is_file():
        raise UsageError(f"no such model file: {args.model}")
    try:
        result = import_onnx(path)
    except Exception as exc:  # a file onnx cannot read: one line, no traceback
        if type(exc).__module__.startswith(("onnx", "google")) or isinstance(exc, (OSError, ValueError)):
            print(f"{args.model}: error: cannot read the ONNX model: {exc}", file=sys.stderr)
            return 1
        raise
    written = result.write(args.output)
    print(f"{args.model}: {summary(result)}")
    for p in written:
        print(f"  wrote {p}")
    return 0 if result.functions else 1
