"""Whether an MLU function must divide exactly (`x / s`, not `x * (1 / s)`).

The row and tile recipes divide by a broadcast statistic as a multiply by its reciprocal: one div-class op per
statistic instead of one per element. The product can be one ulp below the quotient (41 * fl(1 / 41) =
0.99999994), harmless where the value flows on into arithmetic, not where a step function reads it:
`floor(x[i, j] / c[])` gave 0 for x = c = 41 on mlu-sim, 1 on sim. A function whose floor / ceil / round, integer
or boolean conversions, compares, `//` or `%` read a quotient (directly or through the tensors it defines) divides
exactly everywhere: its kernels carry the attribute `division=exact` (codegen/mlu/vecops.py `_per_row`) and the
tile recipe keeps the division (tiles.py). A `mean` is a quotient too (its sum divided by the count): where it
must be exact every recipe divides by the count instead of multiplying by its reciprocal (`count_scale`).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.walk import walk

STEPS = ("floor", "ceil", "round", "i32", "i64", "bool")
STEP_OPS = ("==", "!=", "<", "<=", ">", ">=", "//", "%")
ATTR = ("division", "exact")
SCOPES: list = []   # functions being scheduled that divide exactly (their segments and groups inherit it)


def needs_exact_division(stmts, types: dict) -> bool:
    """`stmts`: the function's operator-layer assignments, in program order; `types`: every tensor's type (a
    quotient stored into an integer or boolean tensor is converted too)."""
    divided: set[str] = set()   # tensors whose value depends on a quotient

    def quotient(e) -> bool:
        return any(isinstance(x, ir.BinOp) and x.op == "/" or isinstance(x, ir.Reduce) and x.op == "mean"
                   or isinstance(x, ir.Ref) and x.name in divided for x in walk(e))
    for s in stmts:
        for x in walk(s.value):
            if isinstance(x, ir.Call) and x.fn in STEPS and any(quotient(a) for a in x.args):
                return True
            if isinstance(x, ir.BinOp) and x.op in STEP_OPS and (quotient(x.lhs) or quotient(x.rhs)):
                return True
        if quotient(s.value):
            if not types[s.target.name].dtype.is_float:
                return True
            divided.add(s.target.name)
    return False


def in_exact_scope() -> bool:
    """Whether an enclosing function being scheduled divides exactly: a segment of a split holding `q = x / c`
    while `floor(q)` is in the next one must divide exactly too (a review's finding)."""
    return bool(SCOPES)


def count_scale(count: int, exact: bool = False) -> tuple[str, float]:
    """(operator, constant) that turns a sum over `count` elements into their mean: a division by the count in a
    function that divides exactly (`floor(mean(x))` of ones: 41 * fl(1 / 41) = 0.99999994 floors to 0), else a
    multiply by its reciprocal (a simple-class op)."""
    return ("/", float(count)) if exact or in_exact_scope() else ("*", 1.0 / count)


def mean_of(total: ir.Expr, count: int) -> ir.Expr:
    """The mean of a sum `total` over `count` elements as an expression (`count_scale`'s operator)."""
    op, c = count_scale(count)
    return ir.BinOp(op, total, ir.Const(c))


def mark_exact(func: ir.Func) -> ir.Func:
    """`func` with every kernel marked to divide exactly."""
    def mark(item):
        if isinstance(item, ir.Kernel) and ATTR not in item.attrs:
            return dataclasses.replace(item, attrs=tuple(item.attrs) + (ATTR,))
        return item
    return dataclasses.replace(func, body=tuple(mark(x) for x in func.body))


def is_exact(kernel: ir.Kernel) -> bool:
    return ATTR in tuple(kernel.attrs)
