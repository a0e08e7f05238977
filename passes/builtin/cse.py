"""cse: merge intermediates that are defined by the same computation."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import map_operator_funcs, rename_refs, substitute_vars, var_names, walk


@dataclass(frozen=True)
class CommonSubexpressionElimination(ModulePass):
    """Merge intermediate statements that compute the same value: uses of the later one read the earlier one.

    Two definitions match when they are equal up to a consistent renaming of their index variables
    (`a[i, j] = exp(x[i, j])` and `b[p, q] = exp(x[p, q])`). Results are never merged (their declared
    types may round differently). Functions with kernels are left alone."""
    name: ClassVar[str] = "cse"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return map_operator_funcs(module, lambda f: self._func(ctx, f))

    def _func(self, ctx: PassContext, func: ir.Func) -> ir.Func:
        results = {r.name for r in func.results}
        sizes = set(func.size_symbols())
        first: dict[object, str] = {}
        renamed: dict[str, str] = {}
        body = []
        for stmt in func.body:
            if renamed:
                value = rename_refs(stmt.value, renamed)
                stmt = stmt if value == stmt.value else dataclasses.replace(stmt, value=value)
            key = _key(stmt, sizes)
            name = stmt.target.name
            if key is not None and name not in results:
                if key in first:
                    renamed[name] = first[key]
                    ctx.bump("cse.merged")
                    continue
                first[key] = name
            body.append(stmt)
        return func if not renamed else dataclasses.replace(func, body=tuple(body))


def _key(stmt: ir.Assign, sizes: set[str]):
    """The statement's value with index variables renamed canonically (left-hand side by position, the
    others by first occurrence), plus the rank; equal keys mean equal values of equal shape."""
    lhs = [i.name for i in stmt.target.index if isinstance(i, ir.Var)]
    if len(lhs) != len(stmt.target.index) or len(set(lhs)) != len(lhs):
        return None
    if not set(lhs) <= var_names(stmt.value):  # shape not fixed by the value alone
        return None
    mapping = {v: ir.Var(f"%{k}") for k, v in enumerate(lhs)}
    for x in walk(stmt.value):
        if isinstance(x, ir.Var) and x.name not in mapping and x.name not in sizes:
            mapping[x.name] = ir.Var(f"%r{len(mapping)}")
    return len(lhs), substitute_vars(stmt.value, mapping)
