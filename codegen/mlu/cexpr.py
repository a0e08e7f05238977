"""GIR expressions → C expressions of the BANG-C-like language (index arithmetic and scalar compute)."""
from __future__ import annotations

import math

from gir import ir
from gir.errors import GirError

_CMP = ("<", "<=", ">", ">=", "==", "!=")
# float builtins of one argument in scalar code: the MLU language's scalar function (targets/mlu/lang.py), or
# (_VECTOR_ONLY) its vector op on a one-unit scratch tile
_SCALAR_MATH = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "sin": "sinf", "cos": "cosf",
                "log1p": "log1pf", "expm1": "expm1f", "floor": "floorf", "ceil": "ceilf", "round": "rintf"}
_VECTOR_ONLY = ("erf", "softplus", "silu", "gelu", "gelu_tanh")


def c_float(x: float) -> str:
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    text = repr(float(x))
    return f"({text}f)" if text.startswith("-") else f"{text}f"


def c_index(e, subst: dict[str, str] | None = None) -> str:
    """An integer (index) expression; `subst` replaces variables by C text."""
    subst = subst or {}
    if isinstance(e, ir.Const):
        if isinstance(e.value, float) and not float(e.value).is_integer():
            raise GirError("non-integer constant in an index expression", e.loc)
        return str(int(e.value))
    if isinstance(e, ir.Var):
        return subst.get(e.name, e.name)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*", "//", "%"):
        op = "/" if e.op == "//" else e.op
        return f"({c_index(e.lhs, subst)} {op} {c_index(e.rhs, subst)})"
    if isinstance(e, ir.UnOp) and e.op == "-":
        return f"(-{c_index(e.operand, subst)})"
    if isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2:
        return f"{e.fn}({c_index(e.args[0], subst)}, {c_index(e.args[1], subst)})"
    if isinstance(e, ir.Call) and e.fn == "cdiv":
        a, b = (c_index(x, subst) for x in e.args)
        return f"(({a} + {b} - 1) / {b})"
    raise GirError("unsupported index expression for the MLU target", getattr(e, "loc", None))


class ScalarExpr:
    """Scalar compute on 1-element tiles: `elem(ref)` gives the C lvalue of a 1-element region."""

    def __init__(self, elem, kind_of, scratch):
        self.elem = elem          # ir.Ref -> C text
        self.kind_of = kind_of    # ir.Ref -> "float" | "int"
        self.scratch = scratch    # () -> (C pointer text to a 32-float NRAM scratch, pre-statements list)
        self.pre: list[str] = []

    def expr(self, e) -> tuple[str, str]:
        """(C text, kind) with kind in float / int."""
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                return ("1" if e.value else "0"), "int"
            if isinstance(e.value, int):
                return str(e.value), "int"
            return c_float(e.value), "float"
        if isinstance(e, ir.Var):
            return e.name, "int"
        if isinstance(e, ir.Ref):
            return self.elem(e), self.kind_of(e)
        if isinstance(e, ir.UnOp):
            x, k = self.expr(e.operand)
            return (f"(!{x})", "int") if e.op == "not" else (f"(-{x})", k)
        if isinstance(e, ir.BinOp):
            a, ka = self.expr(e.lhs)
            b, kb = self.expr(e.rhs)
            if e.op in _CMP:
                return f"({a} {e.op} {b})", "int"
            if e.op in ("and", "or"):
                return f"({a} {'&&' if e.op == 'and' else '||'} {b})", "int"
            if e.op == "/":
                return f"((float)({a}) / (float)({b}))", "float"
            if e.op == "//":
                return f"({a} / {b})", "int"
            k = "float" if "float" in (ka, kb) else "int"
            return f"({a} {e.op} {b})", k
        if isinstance(e, ir.Call):
            return self.call(e)
        raise GirError(f"unsupported scalar compute {type(e).__name__} for the MLU target", getattr(e, "loc", None))

    def call(self, e: ir.Call) -> tuple[str, str]:
        args = [self.expr(a) for a in e.args]
        xs = [a for a, _ in args]
        fn = e.fn
        if fn in ("f32", "f16", "bf16"):
            return f"((float)({xs[0]}))", "float"
        if fn in ("i32", "i64"):
            return f"((int)({xs[0]}))", "int"
        if fn == "bool":
            return f"(({xs[0]}) != 0)", "int"
        if fn == "select":
            k = "float" if "float" in (args[1][1], args[2][1]) else "int"
            return f"(({xs[0]}) ? ({xs[1]}) : ({xs[2]}))", k
        if fn in ("max", "min"):
            if all(k == "int" for _, k in args):
                return f"{fn}({xs[0]}, {xs[1]})", "int"
            return f"f{fn}f({xs[0]}, {xs[1]})", "float"
        if fn == "clamp":
            if all(k == "int" for _, k in args):
                return f"min(max({xs[0]}, {xs[1]}), {xs[2]})", "int"
            return f"fminf(fmaxf({xs[0]}, {xs[1]}), {xs[2]})", "float"
        if fn == "abs":
            return (f"abs({xs[0]})", "int") if args[0][1] == "int" else (f"fabsf({xs[0]})", "float")
        if fn == "neg":
            return f"(-{xs[0]})", args[0][1]
        if fn in _SCALAR_MATH:
            return f"{_SCALAR_MATH[fn]}({xs[0]})", "float"
        if fn == "pow":
            return f"powf({xs[0]}, {xs[1]})", "float"
        if fn == "rsqrt":
            return f"(1.0f / sqrtf({xs[0]}))", "float"
        if fn == "recip":
            return f"(1.0f / ({xs[0]}))", "float"
        if fn == "sigmoid":
            return f"(1.0f / (1.0f + expf(-({xs[0]}))))", "float"
        if fn in _VECTOR_ONLY:  # no scalar function: one vector op on a scratch unit
            buf = self.scratch()
            self.pre += [f"{buf}[0] = {xs[0]};", f"__bang_active_{fn}({buf}, {buf}, 32);"]
            return f"{buf}[0]", "float"
        raise GirError(f"function '{fn}' is not supported by the MLU target", e.loc)
