"""dce: remove intermediates that no result depends on."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import map_operator_funcs, refs


@dataclass(frozen=True)
class DeadCodeElimination(ModulePass):
    """Remove intermediate statements whose values no result uses, directly or through other intermediates.

    Results are always kept. Functions with kernels are left alone."""
    name: ClassVar[str] = "dce"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return map_operator_funcs(module, lambda f: self._func(ctx, f))

    def _func(self, ctx: PassContext, func: ir.Func) -> ir.Func:
        live = {r.name for r in func.results}
        keep = []
        for stmt in reversed(func.body):
            if stmt.target.name in live:
                keep.append(stmt)
                live.update(r.name for r in refs(stmt.value))
            else:
                ctx.bump("dce.removed")
        if len(keep) == len(func.body):
            return func
        return dataclasses.replace(func, body=tuple(reversed(keep)))
