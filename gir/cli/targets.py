"""One set of target names for every subcommand.

The names are those of `gir run`: sim (the SIMT simulator), cuda, hip, mlu-sim (the simulated MLU-like
accelerator). `mlu` is the same target as `mlu-sim` (there is no real MLU here), accepted everywhere. A
subcommand takes the subset it can act on and maps each to the name its implementation uses; a name it
cannot act on is a usage error (exit 2) that says which subcommand can.
"""
from __future__ import annotations

import argparse

from gir.targets.registry import NAMES, canonical
WHERE = {"sim": "the SIMT simulator runs programs with `gir run` and `gir bench`",
         "cuda": "cuda code comes from `gir compile`, runs with `gir run`/`gir bench` on an NVIDIA GPU",
         "hip": "hip code comes from `gir compile --target hip` (it cannot run here)",
         "mlu-sim": "MLU code comes from `gir compile`, runs with `gir run`/`gir bench`"}


def add_target_argument(p, supported: dict[str, str], default: str | None, help_text: str = "") -> None:
    """`--target NAME`; `supported` maps canonical names this subcommand accepts to its internal names."""
    def parse(text: str) -> str:
        name = canonical(text.strip())
        if name in supported:
            return supported[name]
        if name in NAMES:
            raise argparse.ArgumentTypeError(
                f"target '{text}' is not available for this subcommand (it takes: {', '.join(supported)}); "
                f"{WHERE[name]}")
        raise argparse.ArgumentTypeError(f"unknown target '{text}' (targets: {', '.join(NAMES)}; "
                                         f"'mlu' is an alias of 'mlu-sim')")

    names = ", ".join(supported)
    text = f"{help_text} one of: {names}" + (f" (default {default})" if default else "")
    p.add_argument("--target", type=parse, default=supported[default] if default else None, metavar="TARGET",
                   help=text.strip())
