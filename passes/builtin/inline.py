"""inline-elementwise: substitute element-wise intermediates into the statements that read them."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.passes.base import ModulePass, PassContext
from gir.scan import scan_of
from gir.passes.builtin.exprs import has_reduce, map_expr, map_operator_funcs, refs, substitute_vars, var_names


@dataclass(frozen=True)
class InlineElementwise(ModulePass):
    """Inline element-wise intermediates read at most `max_uses` times into their consumers.

    `t[i, j] = e` is inlined when `e` holds no reduction, and every read of `t` sits in a value (not in an
    index) and indexes it with distinct plain index variables (a permutation or broadcast, `t[j, i]`);
    each read becomes `e` with the variables renamed. Reads inside a reduction are fine: the reduced
    variables stay inside it. With `max_uses` above 1 the computation is duplicated into every reader."""
    name: ClassVar[str] = "inline-elementwise"
    max_uses: int = 1

    def __post_init__(self) -> None:
        if self.max_uses < 1:
            raise ValueError(f"max_uses must be at least 1, got {self.max_uses}")

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return map_operator_funcs(module, lambda f: self._func(ctx, f))

    def _func(self, ctx: PassContext, func: ir.Func) -> ir.Func:
        body = list(func.body)
        while True:
            k = self._candidate(func, body)
            if k is None:
                return dataclasses.replace(func, body=tuple(body)) if body != list(func.body) else func
            definition = body.pop(k)
            body = [_inline_into(s, definition) for s in body]
            ctx.bump("inline-elementwise.inlined")

    def _candidate(self, func: ir.Func, body: list[ir.Assign]) -> int | None:
        results = {r.name for r in func.results}
        sizes = set(func.size_symbols())
        defined: dict[str, int] = {}
        for k, s in enumerate(body):
            defined[s.target.name] = defined.get(s.target.name, 0) + 1
        for k, s in enumerate(body):
            name = s.target.name
            if name in results or defined[name] != 1 or not _inlinable_def(s, sizes):
                continue
            uses = [u for later in body[k + 1:] for u in _uses(later.value, name)]
            if not uses or len(uses) > self.max_uses or any(u is None for u in uses):
                continue
            if any(not _plain_use(u, sizes) for u in uses):
                continue
            return k
        return None


def _inlinable_def(s: ir.Assign, sizes: set[str]) -> bool:
    lhs = [i.name for i in s.target.index if isinstance(i, ir.Var)]
    return (len(lhs) == len(s.target.index) and len(set(lhs)) == len(lhs) and not has_reduce(s.value)
            and scan_of(s.value) is None and var_names(s.value) - sizes <= set(lhs) and s.target.name not in {r.name for r in refs(s.value)})


def _uses(e, name: str) -> list[ir.Ref | None]:
    """Reads of `name` in a value; None stands for a read inside an index expression (never inlined)."""
    out: list[ir.Ref | None] = []
    for r in refs(e):
        for i in r.index:
            out.extend(None for x in refs(i) if x.name == name)
        if r.name == name:
            out.append(r)
    # a read nested in an index was counted twice (once as None, once as a Ref): None wins, which is enough
    return out


def _plain_use(use: ir.Ref, sizes: set[str]) -> bool:
    names = [i.name if isinstance(i, ir.Var) else None for i in use.index]
    return None not in names and len(set(names)) == len(names) and not set(names) & sizes


def _inline_into(stmt: ir.Assign, definition: ir.Assign) -> ir.Assign:
    lhs = [i.name for i in definition.target.index]

    def fn(x):
        if isinstance(x, ir.Ref) and x.name == definition.target.name:
            return substitute_vars(definition.value, dict(zip(lhs, x.index)))
        return x
    value = map_expr(stmt.value, fn)
    return stmt if value == stmt.value else dataclasses.replace(stmt, value=value)
