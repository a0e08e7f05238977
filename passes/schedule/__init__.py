"""GPU scheduling: operator-layer GIR → explicit GIR kernels (cuda, hip, sim).

    lower_module(module, target="cuda", options=None) -> ir.Module
    lower_func(func, target="cuda", options=None) -> ir.Func
    plan_module(module, target="cuda", options=None) -> list[FuncPlan]

options: {"sizes": {"M": 4096, ...}  size hints for the search (kernels stay correct for all sizes),
          "machine": "h100" | "a100" | "mi250x" | "mi300x",
          "row_config": RowConfig (force a configuration for every row group; for tests)}
"""
from __future__ import annotations

from gir import ir
from passes.schedule.lower import FuncPlan, GroupPlan, lower_func, plan_func
from passes.schedule.rows import RowConfig


def lower_module(module: ir.Module, target: str = "cuda", options: dict | None = None) -> ir.Module:
    """Every operator-layer function becomes an explicit one with the same name, params and results."""
    return ir.Module(tuple(lower_func(f, target, options) for f in module.funcs))


def plan_module(module: ir.Module, target: str = "cuda", options: dict | None = None) -> list[FuncPlan]:
    """The chosen candidates of every function with their cost-model numbers."""
    return [plan_func(f, target, options) for f in module.funcs]


__all__ = ["lower_module", "lower_func", "plan_module", "FuncPlan", "GroupPlan", "RowConfig"]
