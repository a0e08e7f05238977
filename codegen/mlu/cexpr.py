"""GIR expressions → AST expressions (codegen/ast.py) of the BANG-C-like language: index arithmetic and scalar
compute."""
from __future__ import annotations

import numpy as np

from gir import ir
from gir.errors import GirError
from gir.codegen import ast as C
from gir.codegen.mlu.instr import assign, call, f32
from gir.kinds import F32_MAX

_CMP = ("<", "<=", ">", ">=", "==", "!=")
# float builtins of one argument in scalar code: the MLU language's scalar function (targets/mlu/lang.py), or
# (_VECTOR_ONLY) its vector op on a one-unit scratch tile
_SCALAR_MATH = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "sin": "sinf", "cos": "cosf",
                "log1p": "log1pf", "expm1": "expm1f", "floor": "floorf", "ceil": "ceilf", "round": "rintf"}
_VECTOR_ONLY = ("erf", "softplus", "silu", "gelu", "gelu_tanh")


def index_ast(e, subst: dict[str, C.CExpr] | None = None) -> C.CExpr:
    """An integer (index) expression as a C expression (codegen/ast.py; `//` and `%` are C's: the operands of
    the index expressions the MLU schedules emit are never negative); `subst` replaces variables by expressions."""
    subst = subst or {}
    if isinstance(e, ir.Const):
        if isinstance(e.value, float) and not float(e.value).is_integer():
            raise GirError("non-integer constant in an index expression", e.loc)
        return C.Num(int(e.value))
    if isinstance(e, ir.Var):
        return subst.get(e.name, C.Id(e.name))
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


def _f32(e: C.CExpr) -> C.CExpr:
    """A float result rounded to f32 where it is computed: the evaluator (and the vector kernels) round every float
    operation to f32, the simulated scalar C evaluates in double until a store, so a compare of a recomputed value
    with a stored one (argmin's `E == min(E)`) would otherwise fail."""
    return C.Cast("float", e)


def _floor_divmod(op: str, a: C.CExpr, b: C.CExpr) -> C.CExpr:
    """Python's floored `a // b` / `a % b` of C ints (C's `/` truncates toward zero, its `%` takes the dividend's
    sign): the truncated quotient less one / the remainder plus b when the remainder is non-zero and its sign
    differs from b's. No intermediate can overflow."""
    r = C.Bin("%", a, b)
    fix = C.Bin("&&", C.Bin("!=", r, C.Num(0)), C.Bin("!=", C.Bin("<", r, C.Num(0)), C.Bin("<", b, C.Num(0))))
    return C.Bin("-", C.Bin("/", a, b), fix) if op == "//" else C.Bin("+", r, C.Cond(fix, b, C.Num(0)))


_ONE = f32(1.0)


def minmax(fn: str, a: C.CExpr, b: C.CExpr) -> C.CExpr:
    """A float max / min that gives NaN when an operand is NaN, as numpy.maximum / minimum, the evaluator and the
    vector ops do (C's fmaxf / fminf return the other operand): `(a < b || b != b) ? b : a` for max,
    `(b < a || b != b) ? b : a` for min (a NaN `a` fails both compares and is returned)."""
    lt = C.Bin("<", a, b) if fn == "max" else C.Bin("<", b, a)
    return C.Cond(C.Bin("||", lt, C.Bin("!=", b, b)), b, a)


class ScalarExpr:
    """Scalar compute on 1-element tiles, as AST expressions: `elem(ref)` gives the lvalue of a 1-element region."""

    def __init__(self, elem, kind_of, scratch):
        self.elem = elem          # ir.Ref -> C.CExpr
        self.kind_of = kind_of    # ir.Ref -> "float" | "int"
        self.scratch = scratch    # () -> the name of a 32-float NRAM scratch
        self.pre: list = []        # statements (codegen/ast.py) computing scratch values before the expression

    def expr(self, e) -> tuple[C.CExpr, str]:
        """(C expression, kind) with kind in float / int."""
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                return C.Num(int(e.value)), "int"
            if isinstance(e.value, int):
                return C.Num(e.value), "int"
            # the f32 value: scalar C is evaluated in double, and `3.3f` must mean the f32 nearest 3.3, as the
            # evaluator's f32 arithmetic and the vector ops (which convert their scalar operand) take it
            x = float(e.value)
            return f32(float(np.float32(x)) if abs(x) <= F32_MAX else x), "float"
        if isinstance(e, ir.Var):
            return C.Id(e.name), "int"
        if isinstance(e, ir.Ref):
            return self.elem(e), self.kind_of(e)
        if isinstance(e, ir.UnOp):
            x, k = self.expr(e.operand)
            return (C.Un("!", x), "int") if e.op == "not" else (C.Un("-", x), k)
        if isinstance(e, ir.BinOp):
            a, ka = self.expr(e.lhs)
            b, kb = self.expr(e.rhs)
            if e.op in _CMP:
                return C.Bin(e.op, a, b), "int"
            if e.op in ("and", "or"):
                return C.Bin("&&" if e.op == "and" else "||", a, b), "int"
            if e.op == "/":
                return _f32(C.Bin("/", C.Cast("float", a), C.Cast("float", b))), "float"
            if e.op in ("//", "%"):   # integers (the verifier refuses floats): floored, as numpy and the evaluator
                return _floor_divmod(e.op, a, b), "int"
            k = "float" if "float" in (ka, kb) else "int"
            return (_f32(C.Bin(e.op, a, b)) if k == "float" else C.Bin(e.op, a, b)), k
        if isinstance(e, ir.Call):
            return self.call(e)
        raise GirError(f"unsupported scalar compute {type(e).__name__} for the MLU target", getattr(e, "loc", None))

    def call(self, e: ir.Call) -> tuple[C.CExpr, str]:
        args = [self.expr(a) for a in e.args]
        xs = [a for a, _ in args]
        fn = e.fn
        if fn in ("f16", "bf16"):   # rounded to the 16-bit type, then computed on as float (as the evaluator does)
            return C.Cast("float", C.Cast(fn, xs[0])), "float"
        if fn == "f32":
            return C.Cast("float", xs[0]), "float"
        if fn in ("i32", "i64"):
            return C.Cast("int", xs[0]), "int"
        if fn == "bool":
            return C.Bin("!=", xs[0], C.Num(0)), "int"
        if fn == "select":
            k = "float" if "float" in (args[1][1], args[2][1]) else "int"
            return C.Cond(xs[0], xs[1], xs[2]), k
        ints = all(k == "int" for _, k in args)
        if fn in ("max", "min"):
            return (C.Call(fn, (xs[0], xs[1])), "int") if ints else (minmax(fn, xs[0], xs[1]), "float")
        if fn == "clamp":
            if ints:
                return C.Call("min", (C.Call("max", (xs[0], xs[1])), xs[2])), "int"
            return minmax("min", minmax("max", xs[0], xs[1]), xs[2]), "float"
        if fn == "abs":
            return (C.Call("abs", (xs[0],)), "int") if args[0][1] == "int" else (C.Call("fabsf", (xs[0],)), "float")
        if fn == "neg":
            return C.Un("-", xs[0]), args[0][1]
        if fn in _SCALAR_MATH:
            return _f32(C.Call(_SCALAR_MATH[fn], (xs[0],))), "float"
        if fn == "pow":
            return _f32(C.Call("powf", (xs[0], xs[1]))), "float"
        if fn == "rsqrt":
            return _f32(C.Bin("/", _ONE, C.Call("sqrtf", (xs[0],)))), "float"
        if fn == "recip":
            return _f32(C.Bin("/", _ONE, xs[0])), "float"
        if fn == "sigmoid":
            return _f32(C.Bin("/", _ONE, C.Bin("+", _ONE, C.Call("expf", (C.Un("-", xs[0]),))))), "float"
        if fn in _VECTOR_ONLY:  # no scalar function: one vector op on a scratch unit
            buf = self.scratch()
            self.pre += [assign(C.Index(buf, C.Num(0)), xs[0]), call(f"bang_active_{fn}", C.Id(buf), C.Id(buf), 32)]
            return C.Index(buf, C.Num(0)), "float"
        raise GirError(f"function '{fn}' is not supported by the MLU target", e.loc)
