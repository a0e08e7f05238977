"""`naive-lower`: operator-layer GIR -> the IDFG of its op-by-op program (see naive.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.passes.base import ModulePass, PassContext
from gir.passes.middle.naive import build_module


@dataclass(frozen=True)
class NaiveLower(ModulePass):
    """Lower operator-layer functions to their op-by-op program, held as the IDFG (one group per statement,
    every intermediate in @global). Explicit functions pass through."""
    name: ClassVar[str] = "naive-lower"
    consumes: ClassVar[str] = "gir"
    produces: ClassVar[str] = "idfg"

    def apply(self, ctx: PassContext, module: ir.Module):
        return build_module(module)
