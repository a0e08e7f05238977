"""`gir compile FILE --target cuda|hip|mlu-sim`: run the compile pipeline and generate source.

Without -o, prints the explicit GIR (--emit gir), the source (--emit source, the default) or both.
With -o DIR/ (or an existing directory), writes NAME.cu / NAME.hip and NAME.json (launch metadata) per kernel
(NAME.mlu and NAME.json per function on the MLU), plus FILE.gir with --emit gir|all; with -o FILE, writes exactly FILE (and --meta FILE.json).
Everything is generated before anything is written, and every file is written atomically.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gir import ir
from gir.cli.targets import add_target_argument
from gir.cli.common import load_verified, output_path, parse_sizes
from gir.files import write_all_atomic
from gir.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("compile", help="generate CUDA/HIP/MLU source from a GIR file",
                       description="Run the compile pipeline over a GIR file (naive lowering to the IDFG, the graph "
                                   "passes, the search; `gir passes --default --target T` prints it, --passes "
                                   "replaces it) and generate CUDA or HIP source plus JSON launch metadata.")
    p.add_argument("file", metavar="FILE")
    add_target_argument(p, {"cuda": "cuda", "hip": "hip", "mlu-sim": "mlu"}, "cuda",
                        "the code to generate (mlu-sim, alias mlu: the simulated MLU's language);")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write exactly this file (the source; the explicit GIR with --emit gir); a directory "
                        "when OUT ends with '/' or is one: a source and a launch-metadata JSON per kernel")
    p.add_argument("--meta", metavar="FILE.json", help="also write the launch metadata (grid, block, arguments)")
    p.add_argument("--emit", choices=["gir", "source", "all"], default="source",
                   help="what to print (or, with -o, also write the explicit GIR for gir/all)")
    p.add_argument("--sizes", metavar="M=4,N=7", help="size hints; fixes symbolic thread extents")
    p.add_argument("--index-type", choices=["auto", "int32", "int64"], default="auto",
                   help="C type of index arithmetic (auto: int64 only if a tensor has > 2^31-1 "
                        "elements at the given sizes)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the static kernel checks (bounds, races, barriers, alignment, overflow, capacity)")
    from gir.cli.pipeline import add_arguments
    from gir.passes import instruments
    add_arguments(p)
    instruments.add_arguments(p)
    p.set_defaults(func=run)


def check_kernels(module: ir.Module, target: str, sizes: dict, args) -> None:
    """Prove the kernels safe (bounds, races, barriers, alignment, overflow, capacity) before emitting code;
    an error stops the compilation before any file is written."""
    if getattr(args, "no_check", False):
        return
    from dataclasses import replace

    from gir.passes.analysis.checks import check_module

    index_type = getattr(args, "index_type", "auto")
    for f in module.funcs:
        seen = set()
        warnings = check_module(ir.Module((f,)), target, sizes or None, False, index_type)
        for warning in warnings:
            if warning.check == "overflow":
                if index_type != "auto" or "overflow" in seen:
                    continue  # chosen with --index-type, or already said once for this function
                seen.add("overflow")
            if warning.loc is not None and warning.loc.file.startswith("<schedule") and f.loc is not None:
                notes = tuple(n.replace("mark the kernel `with index=int64`", "choose --index-type int64 or int32")
                              for n in warning.notes)
                warning = replace(warning, loc=f.loc, notes=notes)  # a scheduled kernel: the user's function
            if warning.format() not in seen:
                seen.add(warning.format())
                print(warning.format(), file=sys.stderr)


def run(args) -> int:
    from gir.codegen import combined_source, emit_module
    from gir.printer import print_module
    from gir.verifier import verify_module

    from gir.cli.pipeline import lower

    sizes = parse_sizes(args.sizes)
    output_path(args.output)
    if args.target == "mlu":
        return _run_mlu(args, sizes)
    module = lower(load_verified(args.file, sizes), args.target, sizes, args, args.file)
    verify_module(module)
    check_kernels(module, args.target, sizes, args)
    kernels = emit_module(module, args.target, sizes, {"index_type": args.index_type})
    gir_text = print_module(module)
    ext = ".cu" if args.target == "cuda" else ".hip"
    per_kernel = {}
    for k in kernels:
        per_kernel[k.name + ext] = k.source
        per_kernel[k.name + ".json"] = k.to_json()
    meta = json.dumps([k.meta for k in kernels], indent=2) + "\n"
    return _write_outputs(args, per_kernel, combined_source(kernels), gir_text, meta)


def _write_outputs(args, per_kernel: dict[str, str], source: str, gir_text: str, meta: str) -> int:
    """-o DIR/ (or an existing directory): one file per kernel and its launch metadata, plus FILE.gir with
    --emit gir|all. -o FILE: exactly that file (the source, or the explicit GIR with --emit gir); --meta
    FILE.json adds the launch metadata. Everything is generated first; every file is written atomically."""
    files: dict[Path, str] = {}
    if args.meta:
        files[Path(args.meta)] = meta
    if args.output in (None, "-"):  # standard output
        write_all_atomic(files)
        if args.emit in ("gir", "all"):
            sys.stdout.write(gir_text)
        if args.emit in ("source", "all"):
            sys.stdout.write(source)
        return 0
    out = Path(args.output)
    if args.output.endswith(("/", os.sep)) or out.is_dir():
        files.update({out / name: text for name, text in per_kernel.items()})
        if args.emit in ("gir", "all"):
            stem = "stdin" if args.file == "-" else Path(args.file).stem
            files[out / (stem + ".gir")] = gir_text
    else:
        if args.emit == "all":
            raise UsageError(f"-o {out}: --emit all writes several files; name a directory (end it with '/')")
        if out.suffix == ".gir" and args.emit != "gir":
            raise UsageError(f"-o {out}: a .gir output holds the explicit GIR only; add --emit gir")
        if args.meta and Path(args.meta).resolve() == out.resolve():
            raise UsageError(f"-o and --meta name the same file: {out}")
        files[out] = gir_text if args.emit == "gir" else source
    write_all_atomic(files)
    for path in files:
        print(path)
    return 0


def _run_mlu(args, sizes) -> int:
    """`--target mlu`: the MLU's compile pipeline (`gir passes --default --target mlu-sim`, or --passes) and
    codegen.mlu; writes NAME.mlu and NAME.json (one file per function)."""
    from gir.codegen.mlu import emit_func
    from gir.printer import print_module

    from gir.cli.pipeline import lower

    module = load_verified(args.file, sizes)
    if not sizes and any(f.size_symbols() for f in module.funcs if not f.is_explicit):
        raise UsageError("--target mlu needs --sizes (MLU kernels have static tiles), e.g. --sizes M=4096,N=1024")
    lowered = lower(module, "mlu-sim", sizes, args, args.file)
    require_mlu_kernels(lowered, getattr(args, "passes", None), {f.name for f in module.funcs if not f.is_explicit})
    funcs = list(lowered.funcs)
    check_kernels(ir.Module(tuple(funcs)), "mlu", sizes, args)
    srcs = {f.name: emit_func(f, pipeline=False) for f in funcs}   # (software-pipeline is a pass of the pipeline)
    gir_text = print_module(ir.Module(tuple(funcs)))
    per_func: dict[str, str] = {}
    metas = []
    for name, ks in srcs.items():
        per_func[name + ".mlu"] = "".join(k.source for k in ks)
        meta = [{"kernel": k.name, "task_dim": k.metadata["task_dim"], "params": k.metadata["params"]} for k in ks]
        metas.append({"func": name, "sizes": sizes, "kernels": meta})
        per_func[name + ".json"] = json.dumps(metas[-1], indent=2) + "\n"
    source = "".join(k.source for ks in srcs.values() for k in ks)
    return _write_outputs(args, per_func, source, gir_text, json.dumps(metas, indent=2) + "\n")


def require_mlu_kernels(module: ir.Module, pipeline: str | None, scheduled: set[str]) -> None:
    """A located error when the pipeline (one given with --passes) scheduled GPU kernels for an operator-layer
    function (named in `scheduled`) where the MLU needs its own."""
    for f in (f for f in module.funcs if f.name in scheduled):
        for k in f.kernels:
            gpu = next((s for s in _parallels(k.body) if s.level not in (ir.ParLevel.cluster, ir.ParLevel.core)),
                       None)
            if gpu is not None:
                from gir.errors import GirError
                raise GirError(f"kernel '{k.name}' runs on @{gpu.level.value}, a GPU level: the MLU target needs "
                               "kernels over @cluster and @core", gpu.loc or k.loc or f.loc,
                               [f"pipeline: {pipeline}" if pipeline else "the MLU's pipeline",
                                "end it with 'schedule{target=mlu-sim}' (see `gir passes --default --target "
                                "mlu-sim`)"])


def _parallels(stmts):
    for s in stmts:
        if isinstance(s, ir.Parallel):
            yield s
            yield from _parallels(s.body)
        elif isinstance(s, (ir.For,)):
            yield from _parallels(s.body)
        elif isinstance(s, ir.If):
            yield from _parallels(s.then + s.orelse)
