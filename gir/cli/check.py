"""`gir check FILE...`: parse and verify; then run the z3/isl kernel checks on explicit kernels."""
from __future__ import annotations

import sys

from gir.cli.common import load_verified, parse_sizes, size_names
from gir.cli.targets import add_target_argument
from gir.source import display_name


def register(sub) -> None:
    p = sub.add_parser("check", help="parse, verify and check GIR files",
                       description="Parse and verify GIR files, then prove each explicit kernel safe for all "
                                   "sizes (bounds, races, barriers, alignment, int32 overflow, capacity). "
                                   "Exit 0 if all are valid, 1 with file:line:col diagnostics otherwise.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    add_target_argument(p, {"cuda": "cuda", "cuda-optin": "cuda-optin", "sim": "cuda", "hip": "hip",
                                         "mlu-sim": "mlu"}, "cuda",
                        "the machine whose limits the checks use (sim checks as cuda; a kernel `with "
                        "shared=optin` gets the opt-in shared memory);")
    p.add_argument("--sizes", help="fix sizes for the checks, e.g. M=4096,N=1000")
    p.add_argument("--no-deep", action="store_true", help="only parse and verify; skip the kernel checks")
    p.add_argument("--strict", action="store_true", help="treat possible int32 overflow at unbounded sizes as an error")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.errors import GirError, UsageError

    sizes = parse_sizes(getattr(args, "sizes", None))
    if args.files.count("-") > 1:
        raise UsageError("standard input ('-') can be read once")
    status = 0
    used: set[str] = set()
    results = []
    for path in args.files:  # parse and verify every file first: a size must be used by one of them
        try:
            module = load_verified(path)
            used |= size_names(module)
            results.append((path, module))
        except GirError as exc:
            print(exc.format(), file=sys.stderr)
            status = 1
    unused = [k for k in sizes if k not in used]
    if unused and results:
        raise UsageError(f"--sizes binds {', '.join(repr(k) for k in unused)}, which no file given uses")
    for path, module in results:
        try:
            warnings = []
            if not getattr(args, "no_deep", False) and any(f.is_explicit for f in module.funcs):
                from gir.passes.analysis.checks import check_module
                warnings = check_module(module, getattr(args, "target", "cuda"), sizes,
                                        getattr(args, "strict", False))
        except GirError as exc:
            print(exc.format(), file=sys.stderr)
            status = 1
            continue
        for w in warnings:
            print(w.format(), file=sys.stderr)
        if not args.quiet:
            print(f"{display_name(path)}: ok")
    return status
