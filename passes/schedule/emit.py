"""Helpers to emit explicit GIR as text: small IR builders for index expressions and an indenting line buffer.

The scheduler writes kernels as GIR text and parses them back, so its output round-trips by construction.
"""
from __future__ import annotations

from gir import ir
from gir.affine import to_affine
from gir.printer import format_expr, format_type


def V(name: str) -> ir.Var:
    return ir.Var(name)


def C(value) -> ir.Const:
    return ir.Const(value)


def add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value == 0:
        return a
    if isinstance(a, ir.Const) and a.value == 0:
        return b
    return ir.BinOp("+", a, b)


def mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, ir.Const) and x.value == 1:
            return y
        if isinstance(x, ir.Const) and x.value == 0:
            return C(0)
    return ir.BinOp("*", a, b)


def dim_expr(d: ir.Dim) -> ir.Expr:
    return C(d) if isinstance(d, int) else V(d)


def prod_expr(dims) -> ir.Expr:
    out: ir.Expr = C(1)
    for d in dims:
        out = mul(out, dim_expr(d))
    return out


def subst(e: ir.Expr, env: dict[str, ir.Expr]) -> ir.Expr:
    """Replace Vars by expressions (in index positions too)."""
    if isinstance(e, ir.Var):
        return env.get(e.name, e)
    if isinstance(e, ir.Ref):
        return ir.Ref(e.name, tuple(subst(i, env) for i in e.index))
    if isinstance(e, ir.Slice):
        return ir.Slice(subst(e.start, env), subst(e.stop, env), e.step)
    if isinstance(e, ir.BinOp):
        return ir.BinOp(e.op, subst(e.lhs, env), subst(e.rhs, env))
    if isinstance(e, ir.UnOp):
        return ir.UnOp(e.op, subst(e.operand, env))
    if isinstance(e, ir.Call):
        return ir.Call(e.fn, tuple(subst(a, env) for a in e.args))
    if isinstance(e, ir.Reduce):
        return ir.Reduce(e.op, subst(e.arg, env), e.axes)
    return e


def simplify(e: ir.Expr) -> ir.Expr:
    """Fold an affine index expression into a canonical, short form."""
    a = to_affine(e)
    if a is None:
        return e
    out: ir.Expr | None = None
    for name, coef in sorted(a.coeffs.items()):
        term = mul(C(abs(coef)), V(name))
        out = term if out is None and coef > 0 else (ir.UnOp("-", term) if out is None else
                                                       ir.BinOp("+" if coef > 0 else "-", out, term))
    if out is None:
        return C(a.const) if a.const >= 0 else ir.UnOp("-", C(-a.const))
    if a.const > 0:
        out = ir.BinOp("+", out, C(a.const))
    elif a.const < 0:
        out = ir.BinOp("-", out, C(-a.const))
    return out


def fx(e: ir.Expr) -> str:
    return format_expr(simplify(e))


def region(name: str, parts) -> str:
    """`name[p0, a:b, ...]`; parts are IR exprs (points) or (start_expr, length) pairs (slices)."""
    out = []
    for p in parts:
        if isinstance(p, tuple):
            s = simplify(p[0])
            out.append(f"{format_expr(s)}:{format_expr(simplify(add(s, C(p[1]))))}")
        else:
            out.append(fx(p))
    return f"{name}[{', '.join(out)}]"


def tile(name: str, parts) -> ir.Ref:
    """IR of a tile region; parts as in `region`."""
    idx = []
    for p in parts:
        if isinstance(p, tuple):
            s = simplify(p[0])
            idx.append(ir.Slice(s, simplify(add(s, C(p[1])))))
        else:
            idx.append(simplify(p))
    return ir.Ref(name, tuple(idx))


def identity(op: str, dtype: ir.DType) -> str:
    if op in ("sum", "mean"):
        return "0" if dtype.is_int else "0.0"
    if op == "prod":
        return "1" if dtype.is_int else "1.0"
    if dtype.is_int:
        big = 2 ** 31 - 1 if dtype == ir.DType.i32 else 2 ** 63 - 1
        return f"-{big}" if op == "max" else str(big)
    return "-inf" if op == "max" else "inf"


def combine(op: str, acc: str, val: str) -> str:
    """Text of acc ⊕ reduce(val)."""
    r = "sum" if op == "mean" else op
    if r == "sum":
        return f"{acc} + sum({val})"
    if r == "prod":
        return f"{acc} * prod({val})"
    return f"{r}({acc}, {r}({val}))"


class Lines:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def open(self, text: str) -> None:
        self(text + " {")
        self.depth += 1

    def close(self) -> None:
        self.depth -= 1
        self("}")

    def text(self) -> str:
        return "\n".join(self.lines)


def alloc(name: str, dtype: ir.DType, shape, level: str) -> str:
    return f"alloc {name}: {format_type(ir.TensorType(dtype, tuple(shape)))} @{level}"
