"""Helpers for writing operator-layer passes: traversal, rewriting, substitution and value kinds.

These are public: plugins may use them (`from gir.passes.builtin.exprs import map_expr, expr_kind`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from gir import ir
# (public here: plugins import them from this module; walk is iterative: a generator per level, as this module
# had, made walking a 400-deep chain quadratic, 392M generator steps for `gir opt`)
from gir.walk import map_expr, walk  # noqa: F401

KIND_FLOAT, KIND_INT, KIND_BOOL = "float", "int", "bool"


def refs(e) -> list[ir.Ref]:
    return [x for x in walk(e) if isinstance(x, ir.Ref)]


def var_names(e) -> set[str]:
    """The names of the variables in `e` (a new set), memoised per expression object: the GPU search asks for
    those of the same references once per configuration it estimates."""
    hit = _VAR_NAMES.get(id(e))
    if hit is None or hit[0] is not e:
        if len(_VAR_NAMES) >= 65536:
            _VAR_NAMES.clear()
        hit = _VAR_NAMES[id(e)] = (e, frozenset(x.name for x in walk(e) if isinstance(x, ir.Var)))
    return set(hit[1])


_VAR_NAMES: dict[int, tuple] = {}   # id(expression) -> (the expression, kept alive so the id stays its, names)


def value_vars_of(e) -> set[str]:
    """Names of variables used as values (outside tensor indices)."""
    out: set[str] = set()

    def visit(x):
        if isinstance(x, ir.Var):
            out.add(x.name)
        elif not isinstance(x, (ir.Ref, ir.Const)):
            for child in children(x):
                visit(child)
    visit(e)
    return out


def children(x) -> tuple:
    """The operand expressions of an expression node (not reference indices)."""
    if isinstance(x, ir.BinOp):
        return (x.lhs, x.rhs)
    if isinstance(x, ir.UnOp):
        return (x.operand,)
    if isinstance(x, ir.Call):
        return tuple(x.args)
    if isinstance(x, ir.Reduce):
        return (x.arg,)
    return ()


def has_reduce(e) -> bool:
    return any(isinstance(x, ir.Reduce) for x in walk(e))


def substitute_vars(e, mapping: dict[str, ir.Expr]):
    """Replace variables simultaneously (`{i: Var(p), j: Var(q)}` swaps safely)."""
    return map_expr(e, lambda x: mapping.get(x.name, x) if isinstance(x, ir.Var) else x)


def rename_refs(e, mapping: dict[str, str]):
    """Replace tensor names in references."""
    def fn(x):
        if isinstance(x, ir.Ref) and x.name in mapping:
            return dataclasses.replace(x, name=mapping[x.name])
        return x
    return map_expr(e, fn)


# ------------------------------------------------------------------ functions
def is_operator_layer(func: ir.Func) -> bool:
    """Every item of the body is an operator-layer Assign (no kernels, no allocations)."""
    return all(isinstance(item, ir.Assign) for item in func.body)


def map_operator_funcs(module: ir.Module, fn: Callable[[ir.Func], ir.Func]) -> ir.Module:
    """Apply `fn` to each operator-layer function; explicit-layer functions pass through untouched."""
    funcs = tuple(fn(f) if is_operator_layer(f) else f for f in module.funcs)
    return module if funcs == module.funcs else dataclasses.replace(module, funcs=funcs)


def intermediates(func: ir.Func) -> set[str]:
    """Tensors assigned in the body that are not results."""
    results = {r.name for r in func.results}
    return {s.target.name for s in func.body if isinstance(s, ir.Assign) and s.target.name not in results}


def tensor_types(func: ir.Func) -> dict[str, ir.TensorType]:
    """Declared and inferred tensor types (the verifier's shape analysis); raises GirError on invalid IR."""
    from gir.shapes import func_info

    return func_info(func).types


# ---------------------------------------------------------------------- kinds
def expr_kind(e, types: dict[str, ir.TensorType]) -> str | None:
    """'float', 'int' or 'bool' as the verifier types values (None when unknown)."""
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool):
            return KIND_BOOL
        return KIND_INT if isinstance(e.value, int) else KIND_FLOAT
    if isinstance(e, ir.Var):
        return KIND_INT
    if isinstance(e, ir.Ref):
        t = types.get(e.name)
        return None if t is None else dtype_kind(t.dtype)
    if isinstance(e, ir.UnOp):
        return KIND_BOOL if e.op == "not" else expr_kind(e.operand, types)
    if isinstance(e, ir.BinOp):
        if e.op in ("and", "or") or e.op in ir.COMPARISONS:
            return KIND_BOOL
        if e.op == "/":
            return KIND_FLOAT
        return _numeric(expr_kind(e.lhs, types), expr_kind(e.rhs, types))
    if isinstance(e, ir.Reduce):
        if e.op in ir.ARG_REDUCTIONS:
            return KIND_INT
        return KIND_FLOAT if e.op == "mean" else expr_kind(e.arg, types)
    if isinstance(e, ir.Call):
        if e.fn in ir.CASTS:
            return dtype_kind(ir.DType(e.fn))
        kinds = [expr_kind(a, types) for a in e.args]
        if e.fn == "select":
            return _numeric(*kinds[1:]) if KIND_BOOL not in kinds[1:] else kinds[1]
        if e.fn in ir.KIND_PRESERVING_FUNCS:
            return _numeric(*kinds)
        return KIND_FLOAT
    return None


def dtype_kind(dtype: ir.DType) -> str:
    return KIND_BOOL if dtype == ir.DType.bool else KIND_FLOAT if dtype.is_float else KIND_INT


def _numeric(*kinds) -> str | None:
    if None in kinds:
        return None
    return KIND_FLOAT if KIND_FLOAT in kinds else kinds[0]
