"""GIR expressions → kernel-AST expressions.

`index_expr` lowers index/bound/condition expressions (integers in the kernel's index type).
`Compute` lowers the value of a compute instruction at one element of its target tile: operands
are read with numpy broadcasting, 16-bit floats are widened to f32, and tile reductions are
unrolled into accumulation chains that are computed once per result element (hoisted into temps).
Kinds of values: "f" (float), "d" (double: f64 values and what they take part in), "i" (int), "l" (64-bit int),
"b" (bool).
"""
from __future__ import annotations

import itertools
import math

from gir.codegen import ast as C
from gir import ir
from gir.errors import GirError

C_RESERVED = frozenset("""
auto bool break case char class const constexpr continue default delete do double else enum extern false float
for goto if inline int long namespace new operator private public register return short signed sizeof static
struct switch template this true typedef typename union unsigned using virtual void volatile while half
min max abs threadIdx blockIdx blockDim gridDim warpSize float2 float4 uint2 uint4 size_t
""".split())


def cname(name: str) -> str:
    """The C identifier for a GIR name (reserved words and our `gir_` prefix get a trailing `_`)."""
    return name + "_" if name in C_RESERVED or name.startswith("gir_") else name


# ------------------------------------------------------------- constant folding
def add(a: C.CExpr, b: C.CExpr) -> C.CExpr:
    if isinstance(a, C.Num) and isinstance(b, C.Num) and a.kind == b.kind == "i":
        return C.Num(a.value + b.value)
    if b == C.Num(0):
        return a
    if a == C.Num(0):
        return b
    if isinstance(b, C.Num) and b.kind == "i" and b.value < 0:
        return C.Bin("-", a, C.Num(-b.value))
    return C.Bin("+", a, b)


def sub(a: C.CExpr, b: C.CExpr) -> C.CExpr:
    if isinstance(b, C.Num) and b.kind == "i":
        return add(a, C.Num(-b.value))
    return C.Bin("-", a, b)


def mul(a: C.CExpr, b: C.CExpr) -> C.CExpr:
    if isinstance(a, C.Num) and isinstance(b, C.Num) and a.kind == b.kind == "i":
        return C.Num(a.value * b.value)
    if C.Num(0) in (a, b):
        return C.Num(0)
    if b == C.Num(1):
        return a
    if a == C.Num(1):
        return b
    return C.Bin("*", a, b)


def floordiv(a: C.CExpr, b: C.CExpr) -> C.CExpr:
    if b == C.Num(1):
        return a
    return C.Call("gir_floordiv", (a, b))


_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}


def index_expr(e: ir.Expr) -> C.CExpr:
    """An integer/boolean expression over sizes and loop variables (no tensor reads)."""
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool):
            return C.Num(e.value, "b")
        if isinstance(e.value, int):
            return C.Num(e.value)
        raise GirError("index expressions must be integers", e.loc)
    if isinstance(e, ir.Var):
        return C.Id(cname(e.name))
    if isinstance(e, ir.UnOp):
        inner = index_expr(e.operand)
        if e.op == "-":
            return C.Num(-inner.value) if isinstance(inner, C.Num) and inner.kind == "i" else C.Un("-", inner)
        return C.Un("!", inner)
    if isinstance(e, ir.BinOp):
        a, b = index_expr(e.lhs), index_expr(e.rhs)
        if e.op == "+":
            return add(a, b)
        if e.op == "-":
            return sub(a, b)
        if e.op == "*":
            return mul(a, b)
        if e.op == "//":
            return floordiv(a, b)
        if e.op == "%":
            return C.Call("gir_mod", (a, b))
        if e.op in _CMP:
            return C.Bin(_CMP[e.op], a, b)
        if e.op in ("and", "or"):
            return C.Bin("&&" if e.op == "and" else "||", a, b)
        raise GirError(f"operator '{e.op}' is not allowed in an index expression", e.loc)
    if isinstance(e, ir.Call) and len(e.args) == 2 and e.fn in ("cdiv", "min", "max"):
        a, b = index_expr(e.args[0]), index_expr(e.args[1])
        if e.fn == "cdiv":
            return floordiv(add(a, sub(b, C.Num(1))), b)
        return C.Call("gir_" + e.fn, (a, b))
    raise GirError("unsupported index expression", getattr(e, "loc", None))


# ------------------------------------------------------------------ tile shapes
def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for x, y in zip((1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


def map_index(shape: tuple[int, ...], ctx: tuple[int, ...], idx: tuple[int, ...]) -> tuple[int, ...]:
    """The element of a tile of `shape` that lines up with element `idx` of a tile of shape `ctx`:
    numpy broadcasting (right-aligned), or else matching after dropping length-1 dimensions."""
    off = len(ctx) - len(shape)
    if off >= 0 and all(s == 1 or s == c for s, c in zip(shape, ctx[off:])):
        return tuple(0 if shape[k] == 1 else idx[off + k] for k in range(len(shape)))
    it = iter([i for i, n in zip(idx, ctx) if n != 1])
    return tuple(0 if n == 1 else next(it) for n in shape)


def _kind_rank(k: str) -> int:
    return "bilfd".index(k)


def promote(*kinds: str) -> str:
    return max(kinds, key=_kind_rank)


def convert(x: C.CExpr, kind: str, to: str) -> C.CExpr:
    """Convert a value between kinds (f, i, l, b)."""
    if kind == to:
        return x
    if to == "b":
        return C.Bin("!=", x, C.Num(0.0, "f") if kind == "f" else C.Num(0))
    if isinstance(x, C.Num) and kind in "ilfd" and to in "fd":   # a literal keeps its full value in double
        return C.Num(float(x.value), to)
    return C.Cast({"f": "float", "d": "double", "i": "int", "l": "i64"}[to], x)


DTYPE_KIND = {"f32": "f", "f64": "d", "f16": "f", "bf16": "f", "i32": "i", "i64": "l", "bool": "b"}


def read_elem(dtype: str, ref: C.CExpr) -> tuple[C.CExpr, str]:
    """Widen a stored element to its compute kind."""
    if dtype == "f16":
        return C.Intrinsic("h2f", (ref,)), "f"
    if dtype == "bf16":
        return C.Intrinsic("bf2f", (ref,)), "f"
    return ref, DTYPE_KIND[dtype]


def write_elem(dtype: str, value: C.CExpr, kind: str) -> C.CExpr:
    """Round a computed value to a storage type."""
    if dtype == "f16":
        return C.Intrinsic("f2h", (convert(value, kind, "f"),))
    if dtype == "bf16":
        return C.Intrinsic("f2bf", (convert(value, kind, "f"),))
    return convert(value, kind, DTYPE_KIND[dtype])


# float functions of one argument: the CUDA/HIP math library's spelling, or a helper of codegen/cstyle.HELPERS
_UNARY_F = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "rsqrt": "rsqrtf", "tanh": "tanhf", "erf": "erff",
            "sin": "sinf", "cos": "cosf", "log1p": "log1pf", "expm1": "expm1f", "floor": "floorf", "ceil": "ceilf",
            "round": "rintf", "softplus": "gir_softplus", "silu": "gir_silu", "gelu": "gir_gelu",
            "gelu_tanh": "gir_gelu_tanh"}
# the double spellings: the C math library's names without the f suffix; gir_* helpers are overloaded
_UNARY_D = {k: v if v.startswith("gir_") else v[:-1] for k, v in _UNARY_F.items()}
_REDUCE_INIT = {"sum": "+", "mean": "+", "prod": "*", "max": "max", "min": "min"}


def combine(op: str, a: C.CExpr, ka: str, b: C.CExpr, kb: str) -> tuple[C.CExpr, str]:
    """`a OP b` for a reduction operator (sum/prod/max/min)."""
    k = promote(ka, kb, "i")
    a, b = convert(a, ka, k), convert(b, kb, k)
    if op in ("sum", "mean", "+"):
        return C.Bin("+", a, b), k
    if op in ("prod", "*"):
        return C.Bin("*", a, b), k
    # gir_max / gir_min (codegen/cstyle.HELPERS) propagate NaN as the evaluator (numpy) does; fmaxf would drop it
    return C.Call("gir_max" if op == "max" else "gir_min", (a, b)), k


class Compute:
    """Lowers compute values element by element. `buffers` maps GIR names to `codegen.lower.Buf`;
    hoisted temps (tile reductions) are appended to `pre` as declarations."""

    def __init__(self, lowerer, pre: list):
        self.lw = lowerer
        self.pre = pre
        self.memo: dict = {}

    def shape(self, e: ir.Expr) -> tuple[int, ...]:
        if isinstance(e, (ir.Const, ir.Var)):
            return ()
        if isinstance(e, ir.Ref):
            return self.lw.region(e).shape
        if isinstance(e, ir.Reduce):
            inner = self.shape(e.arg)
            axes = range(len(inner)) if e.axes is None else e.axes
            return tuple(n for k, n in enumerate(inner) if k not in axes)
        children = [e.lhs, e.rhs] if isinstance(e, ir.BinOp) else [e.operand] if isinstance(e, ir.UnOp) \
            else list(e.args)
        out: tuple[int, ...] = ()
        for c in children:
            out = broadcast_shapes(out, self.shape(c)) or out
        return out

    def at(self, e: ir.Expr, idx: tuple[int, ...], ctx: tuple[int, ...]) -> tuple[C.CExpr, str]:
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                return C.Num(e.value, "b"), "b"
            return (C.Num(e.value), "i") if isinstance(e.value, int) else (C.Num(float(e.value), "f"), "f")
        if isinstance(e, ir.Var):
            return C.Id(cname(e.name)), self.lw.index_kind
        if isinstance(e, ir.Ref):
            reg = self.lw.region(e)
            sub_idx = map_index(reg.shape, ctx, idx)
            return read_elem(reg.buf.dtype, C.Index(reg.buf.cname, reg.offset(sub_idx)))
        if isinstance(e, ir.Reduce):
            return self.reduce(e, idx, ctx)
        if isinstance(e, ir.UnOp):
            x, k = self.at(e.operand, idx, ctx)
            if e.op == "not":
                return C.Un("!", convert(x, k, "b")), "b"
            return C.Un("-", x), k
        if isinstance(e, ir.BinOp):
            return self.binop(e, idx, ctx)
        if isinstance(e, ir.Call):
            return self.call(e, [self.at(a, idx, ctx) for a in e.args])
        raise GirError("unsupported expression in a compute instruction", getattr(e, "loc", None))

    def binop(self, e: ir.BinOp, idx, ctx) -> tuple[C.CExpr, str]:
        (a, ka), (b, kb) = self.at(e.lhs, idx, ctx), self.at(e.rhs, idx, ctx)
        if e.op in ("and", "or"):
            return C.Bin("&&" if e.op == "and" else "||", convert(a, ka, "b"), convert(b, kb, "b")), "b"
        k = promote(ka, kb, "i")
        if e.op == "/":
            k = promote(k, "f")
        a, b = convert(a, ka, k), convert(b, kb, k)
        if e.op in _CMP:
            return C.Bin(e.op, a, b), "b"
        floor = "floor" if k == "d" else "floorf"
        if e.op == "//":
            return (C.Call(floor, (C.Bin("/", a, b),)), k) if k in "fd" else (C.Call("gir_floordiv", (a, b)), k)
        if e.op == "%":
            if k in "fd":
                return C.Bin("-", a, C.Bin("*", C.Call(floor, (C.Bin("/", a, b),)), b)), k
            return C.Call("gir_mod", (a, b)), k
        return C.Bin(e.op, a, b), k

    def call(self, e: ir.Call, args: list[tuple[C.CExpr, str]]) -> tuple[C.CExpr, str]:
        fn = e.fn
        if fn == "transpose":
            raise GirError("transpose() is MLU-only (__bang_transpose); on GPUs transpose through shared tiles "
                           "(load rows, store columns)", e.loc)
        if fn in ir.CASTS:
            x, k = args[0]
            if fn in ("f16", "bf16"):  # round to 16 bits, keep computing in f32
                return read_elem(fn, write_elem(fn, x, k))[0], "f"
            return convert(x, k, DTYPE_KIND[fn]), DTYPE_KIND[fn]
        if fn == "select":
            (c, kc), (a, ka), (b, kb) = args
            k = promote(ka, kb)
            return C.Cond(convert(c, kc, "b"), convert(a, ka, k), convert(b, kb, k)), k
        if fn in ("max", "min"):
            return combine(fn, *args[0], *args[1])
        if fn == "clamp":
            k = promote(*(kx for _, kx in args), "i")
            return C.Call("gir_clamp", tuple(convert(x, kx, k) for x, kx in args)), k
        if fn == "pow":
            k = promote(args[0][1], args[1][1], "f")
            return C.Call("pow" if k == "d" else "powf", (convert(*args[0], k), convert(*args[1], k))), k
        if fn == "cdiv":
            (a, ka), (b, kb) = args
            k = promote(ka, kb, "i")
            return C.Call("gir_floordiv", (add(convert(a, ka, k), sub(convert(b, kb, k), C.Num(1))),
                                           convert(b, kb, k))), k
        x, k = args[0]
        if fn == "neg":
            return C.Un("-", x), k
        if fn == "abs":
            if k in "fd":
                return C.Call("fabs" if k == "d" else "fabsf", (x,)), k
            return C.Call("llabs" if k == "l" else "abs", (x,)), k
        kf = promote(k, "f")   # float functions compute in f32, or in f64 for a double operand
        x = convert(x, k, kf)
        if fn == "recip":
            return (C.Intrinsic("recip", (x,)) if kf == "f" else C.Bin("/", C.Num(1.0, "d"), x)), kf
        if fn == "sigmoid":
            exp = "exp" if kf == "d" else "expf"
            return C.Bin("/", C.Num(1.0, kf), C.Bin("+", C.Num(1.0, kf), C.Call(exp, (C.Un("-", x),)))), kf
        if fn in _UNARY_F:
            return C.Call((_UNARY_D if kf == "d" else _UNARY_F)[fn], (x,)), kf
        raise GirError(f"function '{fn}' is not supported by the GPU code generator", e.loc)

    def reduce(self, e: ir.Reduce, idx, ctx) -> tuple[C.CExpr, str]:
        inner = self.shape(e.arg)
        axes = tuple(range(len(inner))) if e.axes is None else tuple(e.axes)
        rshape = tuple(n for k, n in enumerate(inner) if k not in axes)
        ridx = map_index(rshape, ctx, idx)
        key = (id(e), ridx)
        if key in self.memo:
            return self.memo[key]
        acc, kacc = None, "i"
        for combo in itertools.product(*(range(inner[a]) for a in axes)):
            full, it_r, it_a = [], iter(ridx), iter(combo)
            for k in range(len(inner)):
                full.append(next(it_a) if k in axes else next(it_r))
            v, kv = self.at(e.arg, tuple(full), inner)
            if kv == "b":
                v, kv = convert(v, kv, "i"), "i"
            acc, kacc = (v, kv) if acc is None else combine(_REDUCE_INIT[e.op], acc, kacc, v, kv)
        if e.op == "mean":
            count = math.prod(inner[a] for a in axes)
            kmean = promote(kacc, "f")
            acc, kacc = C.Bin("/", convert(acc, kacc, kmean), C.Num(float(count), kmean)), kmean
        name = self.lw.fresh("r")
        self.pre.append(C.Decl({"f": "float", "d": "double", "i": "int", "l": "i64"}[kacc], name, acc))
        self.memo[key] = (C.Id(name), kacc)
        return self.memo[key]
