"""The MLU's statements as nodes of the kernel AST (codegen/ast.py): its DMA and vector instructions are
intrinsics (`Eval(Intrinsic("bang_add", ...))`, printed `__bang_add(...);` by codegen/mlu/printer.py), per-row
loops are one-line `for` loops, scalar code assigns element texts. The arguments are C text the emitter spells
(pointer and index arithmetic: codegen/mlu/cexpr.py)."""
from __future__ import annotations

from gir.codegen import ast as C


def call(name: str, *args) -> C.Eval:
    """The MLU instruction `__NAME(args);` (codegen/mlu/printer.py spells intrinsics); arguments are C text."""
    return C.Eval(C.Intrinsic(name, tuple(C.Verbatim(str(a)) for a in args)))


def per_row(rows: int, *body, lo: int = 0) -> C.For:
    """`for (int r_ = lo; r_ < rows; r_++) { body }` on one line."""
    return C.For("r_", C.Num(lo), C.Num(rows), tuple(body), inline=True)


def assign(lhs: str, rhs: str) -> C.Assign:
    """`lhs = rhs;` of element texts (scalar code)."""
    return C.Assign(C.Verbatim(lhs), C.Verbatim(rhs))
