"""The MLU's statements as nodes of the kernel AST (codegen/ast.py): its DMA and vector instructions are
intrinsics (`Eval(Intrinsic("bang_add", ...))`, printed `__bang_add(...);` by codegen/mlu/printer.py), per-row
loops are one-line `for` loops, scalar code assigns expressions. Every operand is an AST expression (pointer and
offset arithmetic: codegen/mlu/cexpr.py); Python ints are integer literals."""
from __future__ import annotations

from gir.codegen import ast as C


def node(x) -> C.CExpr:
    """An operand as an AST expression: ints become literals; text is refused (nothing is spelled by hand)."""
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        return x
    if isinstance(x, int):
        return C.Num(x)
    raise TypeError(f"MLU operands are AST expressions, not text: {x!r}")


def call(name: str, *args) -> C.Eval:
    """The MLU instruction `__NAME(args);` (codegen/mlu/printer.py spells intrinsics)."""
    return C.Eval(C.Intrinsic(name, tuple(node(a) for a in args)))


def per_row(rows: int, *body, lo: int = 0) -> C.For:
    """`for (int r_ = lo; r_ < rows; r_++) { body }` on one line."""
    return C.For("r_", C.Num(lo), C.Num(rows), tuple(body), inline=True)


def assign(lhs: C.CExpr, rhs: C.CExpr) -> C.Assign:
    """`lhs = rhs;` (scalar code)."""
    return C.Assign(node(lhs), node(rhs))


def add(*terms) -> C.CExpr:
    """`a + b + c` (left to right; 0 when there is no term)."""
    if not terms:
        return C.Num(0)
    out = node(terms[0])
    for t in terms[1:]:
        out = C.Bin("+", out, node(t))
    return out


def mul(a, k) -> C.CExpr:
    """`a * k` (`a` alone when k is 1)."""
    return node(a) if node(k) == C.Num(1) else C.Bin("*", node(a), node(k))


def f32(x: float) -> C.Num:
    """A float literal (`1.0f`, `INFINITY`, `-INFINITY`, `NAN` as the MLU printer spells them)."""
    return C.Num(float(x), "f")


def is_zero(e) -> bool:
    return node(e) == C.Num(0)


def mask_loop(name: str, n: int, ones: int) -> C.For:
    """`for (int j_ = 0; j_ < n; j_++) { name[j_] = j_ < ones ? 1.0f : 0.0f; }` (a 1/0 mask's values)."""
    j = C.Id("j_")
    return C.For("j_", C.Num(0), C.Num(n), (assign(C.Index(name, j), C.Cond(C.Bin("<", j, C.Num(ones)), f32(1.0),
                                                                              f32(0.0))),), inline=True)
