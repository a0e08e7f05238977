"""squeeze-unit-axes: axes of extent 1 (ONNX's keepdims, a batch of one) removed from the function's body.

An axis declared `1` holds one point: every access to it reads or writes index 0. ONNX importers write such axes
everywhere (`Mean: f32[N, C, H, 1]` read back as `Mean[n, c, h, 0]`, a softmax over `x: f32[1, N]` as
`x[0, i]`), and a constant index is not a team or lane axis: `fuse` kept such a statistic out of the group that
reads it and the MLU recipes refused the statement, which became a scalar kernel (an imported LayerNormalization
on 4-D inputs: one vector kernel at 1.16x the DMA roofline written by hand, two scalar kernels imported).

The pass removes every axis of literal extent 1 from a tensor when each access to it indexes that axis with 0 (a
constant, or the statement's own index variable over that axis, which can only be 0): parameters and results
get a reshape view without the axis (`x: f32[1, N] as [N]`, gir/views.py: the same bytes, no data movement),
intermediates lose it (one with only unit axes becomes a scalar). The index variable of a removed target axis
is 0 wherever else the statement uses it. A
tensor with any other access (a reduction or scan over the axis, an index that is not 0) keeps its axes, as
does a parameter or result whose every axis has extent 1, or one already viewed. The result is verified; a function the rewrite
would make invalid is left as it was.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.errors import DiagnosticCollector, GirError
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import map_operator_funcs, refs, substitute_vars
from gir.scan import scan_of
from gir.shapes import func_info
from gir.walk import map_expr

ZERO = ir.Const(0)


@dataclass(frozen=True)
class SqueezeUnitAxes(ModulePass):
    """Remove axes of extent 1 that are only ever indexed with 0 (views on parameters and results)."""
    name: ClassVar[str] = "squeeze-unit-axes"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        def one(f: ir.Func) -> ir.Func:
            out = squeeze_unit_axes(f)
            if out is not f:
                ctx.bump("squeeze-unit-axes.functions")
            return out
        return map_operator_funcs(module, one)


def squeeze_unit_axes(func: ir.Func) -> ir.Func:
    """`func` without the unit axes it may lose, or `func` itself when there are none (or the rewrite fails)."""
    try:
        info = func_info(func)
    except GirError:
        return func
    units = _candidates(func, info.types)
    for stmt in (x for x in func.body if isinstance(x, ir.Assign)):   # every access must index the unit axes with 0
        zero_vars = _unit_vars(stmt, info.types)
        scan = scan_of(stmt.value)
        for r in [stmt.target] + refs(stmt.value):
            if r.name not in units:
                continue
            if not all(_is_zero(r.index[k], zero_vars) for k in units[r.name]) or \
                    (scan is not None and scan.axis in zero_vars):   # (a scan along a unit axis keeps it)
                del units[r.name]
    if not units:
        return func
    body = tuple(_rewrite(x, units, info.types) if isinstance(x, ir.Assign) else x for x in func.body)
    out = dataclasses.replace(func, params=tuple(_viewed(p, units) for p in func.params),
                              results=tuple(_viewed(p, units) for p in func.results), body=body)
    from gir.verifier import verify_func
    diag = DiagnosticCollector()
    try:
        verify_func(out, diag)
    except Exception:   # noqa: BLE001 - a rewrite the verifier cannot take: the function stays as written
        return func
    return func if diag.diagnostics else out


def _candidates(func: ir.Func, types: dict[str, ir.TensorType]) -> dict[str, tuple[int, ...]]:
    """Tensor -> the positions of its axes of literal extent 1: an intermediate's (all of them: it becomes a
    scalar, `m[]`), a parameter's or result's without a view (not all of them: a view has at least one axis)."""
    out = {}
    declared = {p.name: p for p in func.params + func.results}
    for name, t in types.items():
        unit = tuple(k for k, d in enumerate(t.shape) if d == 1)
        p = declared.get(name)
        if unit and (p is None or (p.view is None and len(unit) < len(t.shape))):
            out[name] = unit
    return out


def _unit_vars(stmt: ir.Assign, types: dict[str, ir.TensorType]) -> set[str]:
    """The statement's index variables over a unit axis of its target (each only ever 0)."""
    shape = types[stmt.target.name].shape
    return {i.name for k, i in enumerate(stmt.target.index)
            if isinstance(i, ir.Var) and k < len(shape) and shape[k] == 1}


def _is_zero(e, zero_vars: set[str]) -> bool:
    if isinstance(e, ir.Const):
        return e.value == 0 and not isinstance(e.value, bool)
    return isinstance(e, ir.Var) and e.name in zero_vars


def _rewrite(stmt: ir.Assign, units: dict, types: dict) -> ir.Assign:
    zero_vars = _unit_vars(stmt, types) if stmt.target.name in units else set()

    def drop(r: ir.Ref) -> ir.Ref:
        if r.name not in units:
            return r
        return dataclasses.replace(r, index=tuple(i for k, i in enumerate(r.index) if k not in units[r.name]))

    value = map_expr(stmt.value, lambda x: drop(x) if isinstance(x, ir.Ref) else x)
    if zero_vars:   # the removed target variables are 0 wherever else the statement uses them
        value = substitute_vars(value, {v: dataclasses.replace(ZERO, loc=stmt.loc) for v in zero_vars})
    return dataclasses.replace(stmt, target=drop(stmt.target), value=value)


def _viewed(p: ir.Param, units: dict) -> ir.Param:
    if p.name not in units:
        return p
    from gir.views import make_view
    dims = tuple(ir.Const(d, loc=p.loc) if isinstance(d, int) else ir.Var(d, loc=p.loc)
                 for k, d in enumerate(p.type.shape) if k not in units[p.name])
    inner, view = make_view(p.type, dims, p.loc)
    return dataclasses.replace(p, type=inner, view=view)
