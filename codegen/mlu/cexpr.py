"""GIR expressions → C expressions of the BANG-C-like language (index arithmetic and scalar compute)."""
from __future__ import annotations

import math

import numpy as np

from gir import ir
from gir.errors import GirError
from gir.codegen import ast as C
from gir.codegen.mlu.instr import assign, call
from gir.kinds import F32_MAX

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


def index_ast(e, subst: dict[str, str] | None = None) -> C.CExpr:
    """An integer (index) expression as a C expression (codegen/ast.py; `//` and `%` are C's: the operands of
    the index expressions the MLU schedules emit are never negative); `subst` replaces variables by C text."""
    subst = subst or {}
    if isinstance(e, ir.Const):
        if isinstance(e.value, float) and not float(e.value).is_integer():
            raise GirError("non-integer constant in an index expression", e.loc)
        return C.Num(int(e.value))
    if isinstance(e, ir.Var):
        text = subst.get(e.name, e.name)
        return C.Id(text) if text.isidentifier() else C.Verbatim(text)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*", "//", "%"):
        return C.Bin("/" if e.op == "//" else e.op, index_ast(e.lhs, subst), index_ast(e.rhs, subst))
    if isinstance(e, ir.UnOp) and e.op == "-":
        return C.Un("-", index_ast(e.operand, subst))
    if isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2:
        return C.Call(e.fn, tuple(index_ast(a, subst) for a in e.args))
    if isinstance(e, ir.Call) and e.fn == "cdiv":
        a, b = (index_ast(x, subst) for x in e.args)
        return C.Bin("/", C.Bin("-", C.Bin("+", a, b), C.Num(1)), b)
    raise GirError("unsupported index expression for the MLU target", getattr(e, "loc", None))


def c_index(e, subst: dict[str, str] | None = None) -> str:
    """`index_ast` printed by the MLU printer, parenthesised unless it is one token or group (the pointer and
    offset arithmetic the emitter still spells as text embeds it)."""
    from gir.codegen.cstyle import _one_group
    from gir.codegen.mlu.printer import MluPrinter

    text = MluPrinter().expr(index_ast(e, subst))
    return text if _one_group(text) else f"({text})"


def _f32(text: str) -> str:
    """A float result rounded to f32 where it is computed: the evaluator (and the vector kernels) round every float
    operation to f32, the simulated scalar C evaluates in double until a store, so a compare of a recomputed value
    with a stored one (argmin's `E == min(E)`) would otherwise fail."""
    return f"((float)({text}))"


def _floor_divmod(op: str, a: str, b: str) -> str:
    """Python's floored `a // b` / `a % b` of C ints (C's `/` truncates toward zero, its `%` takes the dividend's
    sign): the truncated quotient less one / the remainder plus b when the remainder is non-zero and its sign
    differs from b's. No intermediate can overflow."""
    r = f"({a} % {b})"
    fix = f"(({r} != 0) && (({r} < 0) != ({b} < 0)))"
    return f"(({a} / {b}) - {fix})" if op == "//" else f"({r} + ({fix} ? {b} : 0))"


class ScalarExpr:
    """Scalar compute on 1-element tiles: `elem(ref)` gives the C lvalue of a 1-element region."""

    def __init__(self, elem, kind_of, scratch):
        self.elem = elem          # ir.Ref -> C text
        self.kind_of = kind_of    # ir.Ref -> "float" | "int"
        self.scratch = scratch    # () -> (C pointer text to a 32-float NRAM scratch, pre-statements list)
        self.pre: list = []        # statements (codegen/ast.py) computing scratch values before the expression

    def expr(self, e) -> tuple[str, str]:
        """(C text, kind) with kind in float / int."""
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                return ("1" if e.value else "0"), "int"
            if isinstance(e.value, int):
                return str(e.value), "int"
            # the f32 value: scalar C is evaluated in double, and `3.3f` must mean the f32 nearest 3.3, as the
            # evaluator's f32 arithmetic and the vector ops (which convert their scalar operand) take it
            x = float(e.value)
            return c_float(float(np.float32(x)) if abs(x) <= F32_MAX else x), "float"
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
                return _f32(f"(float)({a}) / (float)({b})"), "float"
            if e.op in ("//", "%"):   # integers (the verifier refuses floats): floored, as numpy and the evaluator
                return _floor_divmod(e.op, a, b), "int"
            k = "float" if "float" in (ka, kb) else "int"
            return (_f32(f"{a} {e.op} {b}") if k == "float" else f"({a} {e.op} {b})"), k
        if isinstance(e, ir.Call):
            return self.call(e)
        raise GirError(f"unsupported scalar compute {type(e).__name__} for the MLU target", getattr(e, "loc", None))

    def call(self, e: ir.Call) -> tuple[str, str]:
        args = [self.expr(a) for a in e.args]
        xs = [a for a, _ in args]
        fn = e.fn
        if fn in ("f16", "bf16"):   # rounded to the 16-bit type, then computed on as float (as the evaluator does)
            return f"((float)(({'half' if fn == 'f16' else 'bfloat16_t'})({xs[0]})))", "float"
        if fn == "f32":
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
            return _f32(f"{_SCALAR_MATH[fn]}({xs[0]})"), "float"
        if fn == "pow":
            return _f32(f"powf({xs[0]}, {xs[1]})"), "float"
        if fn == "rsqrt":
            return _f32(f"1.0f / sqrtf({xs[0]})"), "float"
        if fn == "recip":
            return _f32(f"1.0f / ({xs[0]})"), "float"
        if fn == "sigmoid":
            return _f32(f"1.0f / (1.0f + expf(-({xs[0]})))"), "float"
        if fn in _VECTOR_ONLY:  # no scalar function: one vector op on a scratch unit
            buf = self.scratch()
            self.pre += [assign(f"{buf}[0]", xs[0]), call(f"bang_active_{fn}", buf, buf, 32)]
            return f"{buf}[0]", "float"
        raise GirError(f"function '{fn}' is not supported by the MLU target", e.loc)
