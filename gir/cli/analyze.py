"""`gir analyze FILE`: the traffic table of each explicit kernel (bytes per memory level vs compulsory),
or its instruction dataflow graph with --idfg / --dot."""
from __future__ import annotations

import sys

from gir.cli.common import load_verified, pick_func, parse_sizes
from gir.files import write_atomic


def register(sub) -> None:
    p = sub.add_parser("analyze", help="traffic per memory level and the instruction dataflow graph",
                       description="Count bytes moved at each memory level by each instruction of the explicit "
                                   "kernels (exact, with isl, at the given sizes), 32-byte sectors per warp "
                                   "access, and compare with the compulsory traffic.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--sizes", help="values of the symbolic sizes, e.g. M=4096,N=1000")
    p.add_argument("--func", dest="func_name", help="function to analyse (default: the first)")
    p.add_argument("--idfg", action="store_true",
                   help="print the instruction dataflow graph instead (an operator-layer function: the graph of "
                        "the whole function after the default graph passes, its groups and buffer levels)")
    p.add_argument("--dot", metavar="OUT", help="write the dataflow graph as Graphviz dot ('-' for stdout)")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.errors import GirError
    from gir.passes.analysis.idfg import build_idfg
    from gir.passes.analysis.traffic import format_table, kernel_traffic

    sizes = parse_sizes(args.sizes)
    module = load_verified(args.file, sizes)
    func = pick_func(module, args.func_name, args.file)
    if not func.is_explicit:
        from gir import ir
        from gir.limits import refuse_empty_tensors

        refuse_empty_tensors(func, "analysing", sizes)
        if args.idfg:  # the function-level graph the compiler optimises
            from gir.passes.base import PassContext
            from gir.passes.manager import PassManager
            text = "naive-lower,fuse,forward-stores,dead-stores,load-cse,promote"
            graph = PassManager(text).run(ir.Module((func,)), PassContext(filename=args.file))
            sys.stdout.write(graph.to_text())
            return 0
        from gir.passes.schedule import lower_module  # analyse the kernels `gir compile` would emit
        func = lower_module(ir.Module((func,)), "sim", {"sizes": sizes}).funcs[0]
    if not func.kernels:
        raise GirError(f"function '{func.name}' has no kernels to analyse", func.loc)
    if args.idfg or args.dot:
        graphs = [build_idfg(func, k) for k in func.kernels]
        if args.idfg:
            sys.stdout.write("".join(g.to_text() for g in graphs))
        if args.dot:
            dot = "".join(g.to_dot() for g in graphs)
            sys.stdout.write(dot) if args.dot == "-" else write_atomic(args.dot, dot)
        return 0
    reports = [kernel_traffic(func, k, sizes) for k in func.kernels]
    sys.stdout.write(format_table(func, reports, {p: sizes[p] for p in func.size_symbols()}))
    return 0
