"""`gir compile FILE --target cuda|hip`: run the compile pipeline (IDFG passes + search) and generate GPU source.

Without -o, prints the explicit GIR (--emit gir), the source (--emit source, the default) or both.
With -o DIR, writes NAME.cu / NAME.hip and NAME.json (launch metadata) per kernel, plus FILE.gir with
--emit gir|all; with -o FILE.cu|FILE.hip, writes all kernels into that one file and FILE.json (a list).
Everything is generated before anything is written, and every file is written atomically.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from gir import ir
from gir.cli.common import load_verified, parse_sizes, write_atomic
from gir.errors import GirError


def register(sub) -> None:
    p = sub.add_parser("compile", help="generate CUDA/HIP/MLU source from a GIR file",
                       description="Run the compile pipeline over a GIR file (naive lowering to the IDFG, the graph "
                                   "passes, the search; `gir passes --default --target T` prints it, --passes "
                                   "replaces it) and generate CUDA or HIP source plus JSON launch metadata.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--target", choices=["cuda", "hip", "mlu"], default="cuda")
    p.add_argument("-o", "--output", metavar="OUT", help="output directory, or a .cu/.hip file")
    p.add_argument("--emit", choices=["gir", "source", "all"], default="source",
                   help="what to print (or, with -o, also write the explicit GIR for gir/all)")
    p.add_argument("--sizes", metavar="M=4,N=7", help="size hints; fixes symbolic thread extents")
    p.add_argument("--index-type", choices=["auto", "int32", "int64"], default="auto",
                   help="C type of index arithmetic (auto: int64 only if a tensor has > 2^31-1 "
                        "elements at the given sizes)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the static kernel checks (bounds, races, barriers, alignment, overflow, capacity)")
    from gir.cli.pipeline import add_arguments
    from passes import instruments
    add_arguments(p)
    instruments.add_arguments(p)
    p.set_defaults(func=run)


def check_kernels(module: ir.Module, target: str, sizes: dict, args) -> None:
    """Prove the kernels safe (bounds, races, barriers, alignment, overflow, capacity) before emitting code;
    an error stops the compilation before any file is written."""
    if getattr(args, "no_check", False):
        return
    from passes.analysis.checks import check_module

    for warning in check_module(module, target, sizes or None, False, getattr(args, "index_type", "int32")):
        print(warning.format(), file=sys.stderr)


def run(args) -> int:
    from codegen import combined_source, emit_module
    from gir.printer import print_module
    from gir.verifier import verify_module

    from gir.cli.pipeline import lower

    sizes = parse_sizes(args.sizes)
    if args.target == "mlu":
        return _run_mlu(args, sizes)
    module = lower(load_verified(args.file), args.target, sizes, args, args.file)
    verify_module(module)
    check_kernels(module, args.target, sizes, args)
    kernels = emit_module(module, args.target, sizes, {"index_type": args.index_type})
    gir_text = print_module(module)
    if not args.output:
        if args.emit in ("gir", "all"):
            sys.stdout.write(gir_text)
        if args.emit in ("source", "all"):
            sys.stdout.write(combined_source(kernels))
        return 0
    out = Path(args.output)
    ext = ".cu" if args.target == "cuda" else ".hip"
    files: dict[Path, str] = {}
    if out.suffix == ".gir":
        if args.emit != "gir":
            raise GirError(f"-o {out}: a .gir output holds the explicit GIR only; add --emit gir")
        write_atomic(out, gir_text)
        print(out)
        return 0
    if out.suffix in (".cu", ".hip"):
        files[out] = combined_source(kernels)
        files[out.with_suffix(".json")] = json.dumps([k.meta for k in kernels], indent=2) + "\n"
        gir_path = out.with_suffix(".gir")
    else:
        if out.exists() and not out.is_dir():
            raise GirError(f"output '{out}' exists and is not a directory (name a .cu/.hip file or a directory)")
        for k in kernels:
            files[out / (k.name + ext)] = k.source
            files[out / (k.name + ".json")] = k.to_json()
        gir_path = out / (Path(args.file).stem + ".gir")
    if args.emit in ("gir", "all"):
        files[gir_path] = gir_text
    for path, text in files.items():
        write_atomic(path, text)
    for path in files:
        print(path)
    return 0


def _run_mlu(args, sizes) -> int:
    """`--target mlu`: passes.schedule_mlu + codegen.mlu; writes NAME.mlu and NAME.json (one file per function)."""
    from codegen.mlu import emit_func
    from gir.printer import print_module
    from passes.schedule_mlu import schedule_mlu

    module = load_verified(args.file)
    if not sizes and any(f.size_symbols() for f in module.funcs if not f.is_explicit):
        raise GirError("--target mlu needs --sizes (MLU kernels have static tiles), e.g. --sizes M=4096,N=1024")
    funcs = [f if f.is_explicit else schedule_mlu(f, sizes) for f in module.funcs]
    check_kernels(ir.Module(tuple(funcs)), "mlu", sizes, args)
    srcs = {f.name: emit_func(f) for f in funcs}
    gir_text = print_module(ir.Module(tuple(funcs)))
    if not args.output:
        if args.emit in ("gir", "all"):
            sys.stdout.write(gir_text)
        if args.emit in ("source", "all"):
            sys.stdout.write("".join(k.source for ks in srcs.values() for k in ks))
        return 0
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise GirError(f"output '{out}' exists and is not a directory")
    files: dict[Path, str] = {}
    for name, ks in srcs.items():
        files[out / (name + ".mlu")] = "".join(k.source for k in ks)
        meta = [{"kernel": k.name, "task_dim": k.metadata["task_dim"], "params": k.metadata["params"]} for k in ks]
        files[out / (name + ".json")] = json.dumps({"func": name, "sizes": sizes, "kernels": meta}, indent=2) + "\n"
    if args.emit in ("gir", "all"):
        files[out / (Path(args.file).stem + ".gir")] = gir_text
    for path, text in files.items():
        write_atomic(path, text)
    for path in files:
        print(path)
    return 0
