"""strength-reduce: replace divisions by constants and small integer powers with multiplications."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import KIND_FLOAT, expr_kind, map_expr, map_operator_funcs, tensor_types


@dataclass(frozen=True)
class StrengthReduce(ModulePass):
    """Rewrite x / c as x * (1/c) and pow(x, n) as x * x * ... for integer 2 <= n <= max_pow.

    With exact_only (the default) a division is rewritten only when 1/c is exact (c a power of two), so
    results are bit-identical; exact_only=false rewrites every constant divisor. Powers are expanded only
    for float x that is a tensor element, so no computation is duplicated."""
    name: ClassVar[str] = "strength-reduce"
    max_pow: int = 4
    exact_only: bool = True

    def __post_init__(self) -> None:
        if self.max_pow < 1:
            raise ValueError(f"max_pow must be at least 1, got {self.max_pow}")

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return map_operator_funcs(module, lambda f: self._func(ctx, f))

    def _func(self, ctx: PassContext, func: ir.Func) -> ir.Func:
        types = tensor_types(func)

        def rewrite(e):
            out = self._division(e) or self._power(e, types)
            if out is None:
                return e
            ctx.bump("strength-reduce.rewrites")
            return out

        body = tuple(dataclasses.replace(s, value=map_expr(s.value, rewrite)) for s in func.body)
        return dataclasses.replace(func, body=body)

    def _division(self, e):
        if not (isinstance(e, ir.BinOp) and e.op == "/" and isinstance(e.rhs, ir.Const)):
            return None
        c = e.rhs.value
        if isinstance(c, bool) or c == 0 or not math.isfinite(c):
            return None
        if self.exact_only and abs(math.frexp(c)[0]) != 0.5:
            return None
        return ir.BinOp("*", e.lhs, ir.Const(1.0 / c, loc=e.rhs.loc), loc=e.loc)

    def _power(self, e, types):
        if not (isinstance(e, ir.Call) and e.fn == "pow" and isinstance(e.args[1], ir.Const)):
            return None
        base, n = e.args[0], e.args[1].value
        if isinstance(n, bool) or not math.isfinite(n) or n != int(n) or not 2 <= n <= self.max_pow:
            return None
        if not isinstance(base, ir.Ref) or expr_kind(base, types) != KIND_FLOAT:
            return None
        out = base
        for _ in range(int(n) - 1):
            out = ir.BinOp("*", out, base, loc=e.loc)
        return out
