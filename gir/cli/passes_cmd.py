"""`gir passes [NAME...] [--default]`: list the registered passes, or print the default pipeline."""
from __future__ import annotations

import inspect

from gir.cli.targets import add_target_argument


def register(sub) -> None:
    p = sub.add_parser("passes", help="list the available passes and their options",
                       description="List every pass found in the 'gir.passes' entry-point group (built-ins and "
                                   "plugins) with its options (name: type = default), one-line help and the "
                                   "distribution it comes from. Name passes to see their full help.")
    p.add_argument("names", nargs="*", metavar="NAME", help="show the full help of these passes")
    p.add_argument("--default", action="store_true",
                   help="print the default pipeline and exit: that of `gir opt`, or with --target that of "
                        "`gir compile --target T`")
    add_target_argument(p, {"sim": "sim", "cuda": "cuda", "hip": "hip", "mlu-sim": "mlu-sim"}, None,
                        "with --default: the compile target (mlu-sim, alias mlu: the simulated MLU);")
    p.add_argument("--sizes", metavar="M=4,N=7", help="with --default --target: the size hints of the pipeline")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.passes.pipeline import default_pipeline
    from gir.passes.registry import registry

    reg = registry()
    if args.default and args.target:
        from gir.cli.common import parse_sizes
        from gir.passes.middle import default_pipeline_text
        print(default_pipeline_text(args.target, parse_sizes(args.sizes)))
        return 0
    if args.default:
        print(default_pipeline(reg))
        return 0
    infos = [reg.get(n) for n in args.names] if args.names else list(reg)
    for info in infos:
        print(f"{info.name} [{info.origin}]")
        if args.names:
            print("    entry point: " + (info.entry_point or "(none)"))
            for line in inspect.cleandoc(info.cls.__doc__ or "(no description)").splitlines():
                print(f"    {line}".rstrip())
        else:
            print(f"    {info.cls.summary()}")
        for spec in info.cls.options():
            default = "(required)" if spec.required else f"= {spec.format(spec.default)}"
            print(f"    {spec.name}: {spec.type_text} {default}")
    return 0
