"""The compile pipeline of the GPU targets as the subcommands run it: `gir compile`, `gir run`.

The default pipeline (`gir passes --default --target T`) or the one given with `--passes` runs over the
module; instruments print/time/dump between passes; remarks go to stderr (missed ones always, all with -R).
The pipeline must end in explicit kernels: a pipeline that stops at the IDFG prints it with the reference
mapping (one thread per team); one that leaves operator-layer functions is an error.
"""
from __future__ import annotations

import sys

from gir import ir
from gir.errors import GirError


def add_arguments(p, what: str = "compile") -> None:
    p.add_argument("--passes", metavar="PIPELINE",
                   help="run this pass pipeline instead of the default one (`gir passes --default --target T` "
                        "prints it); it must lower every operator-layer function to kernels")
    p.add_argument("-R", "--remarks", action="store_true",
                   help="print every optimisation remark (what was fused, what was not and why, the decision "
                        "record of each group); remarks about missed optimisations are always printed")


def lower(module: ir.Module, target: str, sizes: dict[str, int], args, filename: str | None) -> ir.Module:
    """Run the GPU compile pipeline over `module`; returns the explicit module."""
    from gir.passes.base import PassContext
    from gir.passes.instruments import instruments_from_args, verify_each_from_args
    from gir.passes.manager import PassManager, as_module
    from gir.passes.middle import default_pipeline_text
    from gir.passes.remarks import select

    from gir.limits import refuse_empty_tensors

    for f in module.funcs:
        if not f.is_explicit:
            refuse_empty_tensors(f, "compiling", sizes)   # (gir run specialises empty bindings first)
    text = getattr(args, "passes", None) or default_pipeline_text(target, sizes, check=not getattr(args, "no_check",
                                                                                                    False))
    instruments = instruments_from_args(args) if hasattr(args, "print_ir_after_all") else []
    verify = verify_each_from_args(args) if hasattr(args, "no_verify_each") else False
    ctx = PassContext(filename=filename, target=target, options={"bound_sizes": dict(sizes or {})})
    try:
        state = PassManager(text, instruments, verify_each=verify).run(module, ctx)
    finally:
        for r in select(ctx.remarks, getattr(args, "remarks", False)):
            print(r.format(), file=sys.stderr)
    out = as_module(state)
    left = [f for f in out.funcs if not f.is_explicit]
    if left:
        raise GirError(f"the pass pipeline left '{left[0].name}' in the operator layer: it must lower every function "
                       "to kernels", left[0].loc,
                       [f"pipeline: {text}", "end it with 'naive-lower,...,schedule' (see `gir passes --default "
                        f"--target {target}`)"])
    return out
