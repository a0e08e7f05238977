"""The `schedule` pass: operator-layer functions → explicit GPU kernels (see docs/scheduling.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from passes.base import ModulePass, PassContext


@dataclass(frozen=True)
class Schedule(ModulePass):
    """Lower every operator-layer function to fused, searched GPU kernels (target: cuda, hip or sim).

    Size hints for the search come from `sizes` ("M=4096,N=4096"); kernels stay correct for all sizes."""
    name: ClassVar[str] = "schedule"
    target: str = "cuda"
    sizes: tuple[str, ...] = ()

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        from passes.schedule import lower_module
        hints = {}
        for item in self.sizes:
            key, _, value = item.partition("=")
            hints[key.strip()] = int(value)
        before = sum(len(f.kernels) for f in module.funcs)
        out = lower_module(module, self.target, {"sizes": hints})
        ctx.bump("schedule.kernels", sum(len(f.kernels) for f in out.funcs) - before)
        return out
