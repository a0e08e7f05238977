"""Boolean logic as 0/1 arithmetic for the MLU vector schedules.

The MLU's vector unit has no logical operations: its schedules hold a boolean as a 1 / 0 number (a compare
writes 1.0 / 0.0, a bool tensor is loaded as uint8 0 / 1 and widened). `boolean_arith` rewrites `and`, `or`
and `not` into the integer forms every MLU schedule already computes, keeping the value's bool type:

    p and q  ->  i32(p) * i32(q) != 0
    p or q   ->  max(i32(p), i32(q)) != 0
    not p    ->  i32(p) == 0

(the row model reads `X != 0` of a 0 / 1 value as X itself: `and` is one vector multiply, `or` one maximum,
`not` one compare; passes/schedule_mlu/rowmodel.py). Without it a statement holding any of them ran as a scalar
kernel, about a thousand times slower than the DMA roofline. Operands are evaluated whatever the other's value
(GIR expressions have no side effects, so this is the same value as short-circuit evaluation).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.walk import map_expr, walk


def _i32(e) -> ir.Call:
    return ir.Call("i32", (e,), loc=getattr(e, "loc", None))


def _zero(loc) -> ir.Const:
    return ir.Const(0, loc=loc)


def _rewrite(e):
    if isinstance(e, ir.UnOp) and e.op == "not":
        return ir.BinOp("==", _i32(e.operand), _zero(e.loc), loc=e.loc)
    if isinstance(e, ir.BinOp) and e.op in ("and", "or"):
        a, b = _i32(e.lhs), _i32(e.rhs)
        both = ir.BinOp("*", a, b, loc=e.loc) if e.op == "and" else ir.Call("max", (a, b), loc=e.loc)
        return ir.BinOp("!=", both, _zero(e.loc), loc=e.loc)
    return e


def _has_logic(e) -> bool:
    return any((isinstance(x, ir.UnOp) and x.op == "not") or (isinstance(x, ir.BinOp) and x.op in ("and", "or"))
               for x in walk(e))


def boolean_arith(func: ir.Func) -> ir.Func:
    """`func` with every `and` / `or` / `not` of its statements' values as 0 / 1 integer arithmetic."""
    if func.is_explicit:
        return func
    body = tuple(dataclasses.replace(s, value=map_expr(s.value, _rewrite))
                 if isinstance(s, ir.Assign) and _has_logic(s.value) else s for s in func.body)
    return dataclasses.replace(func, body=body)
