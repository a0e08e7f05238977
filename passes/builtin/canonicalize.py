"""canonicalize: constant folding and algebraic identities that never change a value's kind."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gir import ir
from gir.evaluate import UNARY_FLOAT
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import expr_kind, map_expr, map_operator_funcs, tensor_types, var_names

_INT_LIMIT = 2 ** 31
_FLOAT_BINOPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                 "/": lambda a, b: a / b if b != 0 else None}
_INT_BINOPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Fold constant subexpressions; simplify x*1, x/1, x+0, x-0, -(-x), x - -c and select(true, a, b).

    Only purely constant subtrees are folded (no reassociation); a fold is skipped when the result would
    not be finite, when integer arithmetic could overflow 32 bits, and when an identity would change the
    value's kind (`i * 1.0` stays: it is a float). Functions with kernels are left alone."""
    name: ClassVar[str] = "canonicalize"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return map_operator_funcs(module, lambda f: self._func(ctx, f))

    def _func(self, ctx: PassContext, func: ir.Func) -> ir.Func:
        types = tensor_types(func)
        body = []
        for stmt in func.body:
            value = map_expr(stmt.value, lambda e: _simplify(e, types, ctx))
            body.append(stmt if value == stmt.value else dataclasses.replace(stmt, value=value))
        return dataclasses.replace(func, body=tuple(body))


def _simplify(e, types, ctx: PassContext):
    out = _fold(e)
    if out is None:
        out = _identity(e, types)
    if out is None:
        out = _negative_constant(e)
    if out is None:
        return e
    ctx.bump("canonicalize.rewrites")
    return out


def _const(e) -> bool:
    return isinstance(e, ir.Const)


def _same_type(*values) -> type | None:
    kinds = {type(v) for v in values}
    return kinds.pop() if len(kinds) == 1 else None


def _make(value, like) -> ir.Const | None:
    if isinstance(value, bool):
        return ir.Const(value, loc=like.loc)
    if isinstance(value, int):
        return ir.Const(value, loc=like.loc) if abs(value) < _INT_LIMIT else None
    if isinstance(value, float) and math.isfinite(value):
        return ir.Const(value, loc=like.loc)
    return None


def _fold(e) -> ir.Const | None:
    """A constant for an operation on constants of one Python type, or None."""
    try:
        if isinstance(e, ir.UnOp) and _const(e.operand):
            v = e.operand.value
            if e.op == "not" and isinstance(v, bool):
                return _make(not v, e)
            if e.op == "-" and not isinstance(v, bool):
                return _make(-v, e)
        if isinstance(e, ir.BinOp) and _const(e.lhs) and _const(e.rhs):
            a, b = e.lhs.value, e.rhs.value
            kind = _same_type(a, b)
            if kind is None and bool not in (type(a), type(b)) or kind is int and e.op == "/":
                a, b, kind = float(a), float(b), float  # the evaluator promotes mixed operands to float
            if e.op in _COMPARE and kind is not None:
                return _make(bool(_COMPARE[e.op](a, b)), e)
            if kind is bool and e.op in ("and", "or"):
                return _make((a and b) if e.op == "and" else (a or b), e)
            table = _FLOAT_BINOPS if kind is float else _INT_BINOPS if kind is int else {}
            if e.op in table:
                return _make(table[e.op](a, b), e)
        if isinstance(e, ir.Call) and e.args and all(_const(a) for a in e.args):
            values = [a.value for a in e.args]
            kind = _same_type(*values)
            if kind is float and len(values) == 1 and e.fn in UNARY_FLOAT:
                return _make(_unary(e.fn, values[0]), e)
            if kind in (int, float) and len(values) == 1 and e.fn in ("abs", "neg"):
                return _make(abs(values[0]) if e.fn == "abs" else -values[0], e)
            if kind in (int, float) and len(values) == 2 and e.fn in ("max", "min"):
                return _make(max(values) if e.fn == "max" else min(values), e)
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    return None


def _unary(fn: str, x: float) -> float:
    """The evaluator's own definition of a builtin, on one float64 (a NaN or inf result is not folded)."""
    with np.errstate(all="ignore"):
        return float(UNARY_FLOAT[fn](np.float64(x)))


def _is(e, value) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, bool) and e.value == value


def _identity(e, types):
    """x*1, 1*x, x/1, x+0, 0+x, x-0, -(-x), neg(neg(x)), not not x, select(const, a, b)."""
    keep = None
    if isinstance(e, ir.BinOp):
        if e.op == "*" and _is(e.rhs, 1) or e.op == "/" and _is(e.rhs, 1) or e.op in ("+", "-") and _is(e.rhs, 0):
            keep = e.lhs
        elif e.op == "*" and _is(e.lhs, 1) or e.op == "+" and _is(e.lhs, 0):
            keep = e.rhs
    elif isinstance(e, ir.UnOp) and isinstance(e.operand, ir.UnOp) and e.op == e.operand.op:
        keep = e.operand.operand
    elif isinstance(e, ir.Call) and e.fn == "neg" and isinstance(e.args[0], ir.Call) and e.args[0].fn == "neg":
        keep = e.args[0].args[0]
    elif isinstance(e, ir.Call) and e.fn == "select" and _const(e.args[0]) and isinstance(e.args[0].value, bool):
        keep, dropped = (e.args[1], e.args[2]) if e.args[0].value else (e.args[2], e.args[1])
        if var_names(dropped):  # dropping index uses could change ranges or reduction binding
            return None
    if keep is None or isinstance(keep, ir.Var):
        return None  # `x[i + 0]` → `x[i]` would make i take its range from x's dimension: not the same program
    before, after = expr_kind(e, types), expr_kind(keep, types)
    return keep if before is not None and before == after else None


def _negative_constant(e):
    """x - -c → x + c and x + -c → x - c (exact: negation is exact)."""
    if isinstance(e, ir.BinOp) and e.op in ("+", "-") and isinstance(e.rhs, ir.Const):
        c = e.rhs.value
        if not isinstance(c, bool) and c < 0 and -c < (_INT_LIMIT if isinstance(c, int) else math.inf):
            op = "-" if e.op == "+" else "+"
            return dataclasses.replace(e, op=op, rhs=dataclasses.replace(e.rhs, value=-c))
    return None
