"""`gir opt FILE --passes '...'`: run a pass pipeline over a file and print or write the result."""
from __future__ import annotations

import sys

from gir.cli.common import load_verified, output_path
from gir.files import write_atomic
from gir.source import display_name


def register(sub) -> None:
    p = sub.add_parser("opt", help="run a pass pipeline over a GIR file",
                       description="Parse and verify FILE, run a pass pipeline over it (the verifier runs after "
                                   "every pass) and print the resulting GIR. Pipeline syntax: "
                                   "'canonicalize,inline-elementwise{max_uses=2}'; `gir passes` lists passes.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--passes", metavar="PIPELINE",
                   help="the pipeline to run (default: the default pipeline, see `gir passes --default`)")
    p.add_argument("-o", "--output", metavar="OUT", help="write the result to OUT (atomically) instead of stdout")
    p.add_argument("--idfg", action="store_true",
                   help="when the pipeline ends on the IDFG (e.g. 'naive-lower,fuse'), print the graph itself "
                        "(statements, nodes with isl domains, dependence relations, groups, buffer levels) "
                        "instead of the explicit GIR it stands for")
    from gir.passes.instruments import add_arguments

    add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.printer import print_module
    from gir.passes.base import PassContext
    from gir.passes.instruments import instruments_from_args, verify_each_from_args
    from gir.passes.manager import PassManager, as_module, ir_kind
    from gir.passes.pipeline import DEFAULT_PIPELINE, parse_pipeline

    output_path(args.output)
    pipeline = parse_pipeline(args.passes if args.passes is not None else DEFAULT_PIPELINE)
    instruments = instruments_from_args(args)
    module = load_verified(args.file)
    manager = PassManager(pipeline, instruments, verify_each=verify_each_from_args(args))
    result = manager.run(module, PassContext(filename=display_name(args.file)))
    if args.idfg and ir_kind(result) == "idfg":
        text = result.to_text()
    else:
        text = print_module(as_module(result))
    if args.output not in (None, "-"):
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
