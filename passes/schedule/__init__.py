"""GPU recipes (the fused row kernel, shifted lanes, split rows, shared-memory transposes, the cost model) and
the Python entry points of GPU compilation, which run the IDFG pipeline (passes/middle):

    lower_module(module, target="cuda", options=None) -> ir.Module
    lower_func(func, target="cuda", options=None) -> ir.Func
    plan_module(module, target="cuda", options=None) -> list[FuncPlan]

options: {"sizes": {"M": 4096, ...}  size hints for the search (kernels stay correct for all sizes),
          "machine": "h200" | "h100" | "a100" | "mi250x" | "mi300x",
          "check": False  (skip the static kernel checks),
          "row_config": RowConfig (force a configuration for every row group; for tests)}
"""
from __future__ import annotations

from gir import ir
from gir.errors import GirError
from gir.passes.schedule.rows import RowConfig

TARGETS = ("cuda", "hip", "sim")


def _run(module: ir.Module, target: str, options: dict | None):
    from gir.passes.middle import run_default
    if target not in TARGETS:
        raise GirError(f"unknown GPU target '{target}' (expected one of {', '.join(TARGETS)})")
    return run_default(module, target, options)


def lower_module(module: ir.Module, target: str = "cuda", options: dict | None = None) -> ir.Module:
    """Every operator-layer function becomes an explicit one with the same name, params and results."""
    return _run(module, target, options)[0]


def lower_func(func: ir.Func, target: str = "cuda", options: dict | None = None) -> ir.Func:
    return lower_module(ir.Module((func,)), target, options).funcs[0]


def plan_module(module: ir.Module, target: str = "cuda", options: dict | None = None) -> list:
    """The chosen candidates of every operator-layer function with their cost-model numbers."""
    _, ctx = _run(module, target, options)
    return list(ctx.artifacts.get("plans", []))


def plan_func(func: ir.Func, target: str = "cuda", options: dict | None = None):
    plans = plan_module(ir.Module((func,)), target, options)
    if not plans:
        from gir.passes.middle.search.schedule import FuncPlan
        return FuncPlan(func.name, [], 0.0)
    return plans[0]


__all__ = ["lower_module", "lower_func", "plan_module", "plan_func", "RowConfig", "TARGETS"]
