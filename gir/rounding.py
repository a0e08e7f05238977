"""How large f32 rounding can make the error of an operator-layer program at given inputs (its conditioning).

`rounding_bound(func, inputs)` evaluates the program (in float64, with the reference evaluator's semantics)
together with a first-order bound `h` on the error an f32 evaluation can carry, in units of the f32 unit
roundoff u: the computed value is within about `u * h` of the exact one. Inputs are exact (h = 0): a kernel
and the reference read the same values. Each operation propagates the bounds of its operands through its
derivative and adds one rounding of its own result:

    a + b, a - b   h_a + h_b + |a ± b|          f(a)             |f'(a)| h_a + |f(a)|
    a * b          |b| h_a + |a| h_b + |ab|     max, min, clamp  the larger bound of the operands (exact)
    a / b          h_a/|b| + |a| h_b/b² + |a/b| sum             Σ h + Σ |term|  (one rounding per term)
    mean           (Σ h + Σ |term|) / n + |mean|                prod  |prod| (Σ h/|term| + n)

Comparisons, integer arithmetic, casts to integers and floor/ceil/round are exact or discontinuous; their
bound is 0. A float
constant that f32 cannot represent carries its own rounding. The bound is what gir.verdict compares with a
result's magnitude: where h is many times |value| (a mean of terms that nearly cancel), f32 arithmetic cannot
give many correct digits, and an honest check must not ask for them.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from gir import ir
from gir.evaluate import _erf, _Evaluator, _is_float, reduce_values
from gir.scan import SCANS, ScanParts, evaluate_scan
from gir.shapes import StmtInfo, func_info

_SQRT_PI = math.sqrt(math.pi)
_U = {"f32": 1.0, "f64": 2.0 ** -29, "f16": 2.0 ** 13, "bf16": 2.0 ** 16}  # unit roundoff of a cast's type, in units of f32's

# derivative f'(x) of an element-wise function, from x and y = f(x)
_DERIVATIVE = {
    "exp": lambda x, y: y,
    "log": lambda x, y: 1 / x,
    "sqrt": lambda x, y: 0.5 / y,
    "rsqrt": lambda x, y: 0.5 * y / x,
    "tanh": lambda x, y: 1 - y * y,
    "sigmoid": lambda x, y: y * (1 - y),
    "erf": lambda x, y: 2 / _SQRT_PI * np.exp(-x * x),
    "recip": lambda x, y: y * y,
    "sin": lambda x, y: np.cos(x),
    "cos": lambda x, y: np.sin(x),
    "log1p": lambda x, y: 1 / (1 + x),
    "expm1": lambda x, y: y + 1,
    "softplus": lambda x, y: 1 / (1 + np.exp(-x)),
    "silu": lambda x, y: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
    "gelu": lambda x, y: 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi),
    "gelu_tanh": lambda x, y: _gelu_tanh_slope(x),
}
_STEPS = ("floor", "ceil", "round")   # piecewise constant: exact integers, discontinuous (bound 0, as comparisons)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gelu_tanh_slope(x):
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


def rounding_bound(func: ir.Func, inputs: dict[str, np.ndarray],
                   sizes: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """{result name: float64 array h of the result's shape}; see the module docstring."""
    ev = _Bound(func_info(func), inputs, sizes, np.dtype(np.float64))
    with np.errstate(all="ignore"):  # NaN and inf values are the program's; their bounds are not used
        ev.run()
    return {p.name: ev.bound[p.name] for p in func.results}


def expected_and_bounds(func: ir.Func, inputs: dict[str, np.ndarray], sizes: dict[str, int] | None = None):
    """(float64 reference results, rounding bounds) of `func` on `inputs` in their declared shapes, both in the
    results' declared shapes: what `gir run` and `gir bench` judge a target against. `sizes` (every size) is
    needed, and used, only for a function with reshape views, whose own sizes no input gives."""
    from gir.evaluate import evaluate
    from gir.views import has_views, to_outer

    bound = dict(sizes) if sizes is not None and has_views(func) else None
    with np.errstate(all="ignore"):  # NaN and inf are compared by the verdict, not warned about
        expected = evaluate(func, inputs, bound, compute_dtype=np.float64)
        bounds = rounding_bound(func, inputs, bound)
    return expected, (to_outer(func, bounds, bound) if bound is not None else bounds)


def _scaled(d, h):
    """|d| * h, with 0 where h is 0 (an exact operand contributes nothing, even where d is infinite)."""
    d, h = np.asarray(d, np.float64), np.asarray(h, np.float64)
    return np.where(h == 0, 0.0, np.abs(d) * h)


class _Bound(_Evaluator):
    """The reference evaluator, computing (value, bound) pairs; values are as `evaluate` computes them."""

    def __init__(self, info, inputs, sizes, cdt):
        super().__init__(info, inputs, sizes, cdt)
        self.bound = {p.name: np.broadcast_to(0.0, np.shape(self.env[p.name])) for p in info.func.params}

    def stmt(self, st: StmtInfo) -> np.ndarray:
        # as _Evaluator.stmt, for the pair
        self.st = st
        self.axes = {v: k for k, v in enumerate(st.out_vars + tuple(v for v in st.ranges if v not in st.out_vars))}
        self.ndim = len(self.axes)
        self.reduce_counter = 0
        value, h = self.pair(st.stmt.value)
        full = [self.extent(st.ranges[v]) if k < len(st.out_vars) else 1 for v, k in self.axes.items()]
        out_shape = tuple(full[: len(st.out_vars)])

        def shaped(a):
            a = np.asarray(a)
            a = a.reshape((1,) * (self.ndim - a.ndim) + a.shape)
            return np.array(np.broadcast_to(a, full).reshape(out_shape))
        self.bound[st.stmt.target.name] = shaped(np.asarray(h, np.float64))
        return shaped(value)

    def pair(self, e):
        if isinstance(e, ir.Const):
            v = self.expr(e)
            inexact = isinstance(e.value, float) and math.isfinite(e.value) and float(np.float32(e.value)) != e.value
            return v, abs(e.value) if inexact else 0.0
        if isinstance(e, ir.Var):
            return self.expr(e), 0.0
        if isinstance(e, ir.Ref):
            return self.ref_pair(e)
        if isinstance(e, ir.Reduce):
            return self.reduce_pair(e)
        if isinstance(e, ir.UnOp):
            x, h = self.pair(e.operand)
            return (np.logical_not(x), 0.0) if e.op == "not" else (-x, h)
        if isinstance(e, ir.BinOp):
            (a, ha), (b, hb) = self.pair(e.lhs), self.pair(e.rhs)
            v = self.binop(e.op, a, b)
            return v, self.binop_bound(e.op, a, ha, b, hb, v)
        if isinstance(e, ir.Call) and e.fn in SCANS:
            return self.scan_pair(ScanParts(e))
        if isinstance(e, ir.Call):
            guard = e.fn == "select"  # guarded reads are clipped, as in _Evaluator.expr
            self.guarded += guard
            try:
                args = [self.pair(a) for a in e.args]
            finally:
                self.guarded -= guard
            v = self.call(e.fn, [a for a, _ in args])
            return v, self.call_bound(e.fn, args, v)
        raise TypeError(e)

    def scan_pair(self, p: ScanParts):
        """A scan: cumsum as a running sum (one rounding per term), cummax/cummin exact, cumprod as prod."""
        value = self.scan(p)
        if not _is_float(value.dtype):
            return value, 0.0
        _, h = self.pair(p.arg)
        x = np.asarray(self.expr(p.arg), np.float64)
        full = [self.extent(self.st.ranges[v]) for v in self.axes]
        x = np.broadcast_to(x.reshape((1,) * (self.ndim - x.ndim) + x.shape), full)
        h = np.broadcast_to(np.asarray(h, np.float64).reshape((1,) * (self.ndim - np.ndim(h)) + np.shape(h)), full)
        ax = self.axes[p.axis]

        def run(op, a):
            return evaluate_scan(op, np.ascontiguousarray(a, np.float64), ax, p.exclusive, p.reverse)
        with np.errstate(all="ignore"):
            if p.op in ("cummax", "cummin"):   # (an operand of -inf never is the maximum of finite values, nor
                # +inf the minimum: its bound, inf when it came from an overflow, does not carry past it)
                loser = np.isneginf(x) if p.op == "cummax" else np.isposinf(x)
                return value, np.where(np.isfinite(value), run("cummax", np.where(loser, 0.0, h)), 0.0)
            if p.op == "cumprod":
                rel = run("cumsum", np.where(h == 0, 0.0, h / np.abs(x)) + 1.0)
                return value, np.abs(value) * rel
            return value, run("cumsum", h + np.abs(x))

    def ref_pair(self, e: ir.Ref):
        value = self.ref(e)
        env = self.env
        self.env = {**env, e.name: self.bound[e.name]}  # the same indexing, on the bound
        try:
            return value, self.ref(e)
        finally:
            self.env = env

    def reduce_pair(self, e: ir.Reduce):
        # as _Evaluator.reduce, for the pair
        n = self.reduce_counter
        self.reduce_counter += 1
        x, h = self.pair(e.arg)
        x = np.asarray(x)
        if (x.dtype == np.bool_ and e.op not in ("max", "min") + ir.ARG_REDUCTIONS
                or x.dtype.kind in "iu" and e.op == "mean"):
            x = x.astype(self.cdt)
        x = x.reshape((1,) * (self.ndim - x.ndim) + x.shape)
        shape = list(x.shape)
        for v in self.st.reduce_vars.get(n, ()):
            shape[self.axes[v]] = self.extent(self.st.ranges[v])
        x = np.broadcast_to(x, shape)
        axes = tuple(self.axes[v] for v in self.st.reduce_vars.get(n, ()))
        value = reduce_values(e, x, axes, self.int_dtype(e.arg))   # as the evaluator (empty ranges included)
        if not _is_float(x.dtype) or e.op in ir.ARG_REDUCTIONS:   # (a position is judged exactly)
            return value, 0.0
        if x.size == 0:   # an identity: exact
            return value, 0.0
        h = np.broadcast_to(np.asarray(h, np.float64).reshape((1,) * (len(shape) - np.ndim(h)) + np.shape(h)),
                            shape)
        with np.errstate(all="ignore"):
            if e.op in ("max", "min"):
                return value, np.max(h, axis=axes, keepdims=True)
            if e.op == "prod":
                count = math.prod(shape[a] for a in axes)
                return value, np.abs(value) * (np.sum(np.where(h == 0, 0.0, h / np.abs(x)), axis=axes,
                                                      keepdims=True) + count)
            total = np.sum(h, axis=axes, keepdims=True) + np.sum(np.abs(x), axis=axes, keepdims=True)
            if e.op == "mean":
                return value, total / math.prod(shape[a] for a in axes) + np.abs(value)
            return value, total

    def binop_bound(self, op: str, a, ha, b, hb, v):
        if not _is_float(np.asarray(v).dtype):
            return 0.0  # comparisons, logic and integer arithmetic
        own = np.abs(v)
        with np.errstate(all="ignore"):
            if op in ("+", "-", "//", "%"):
                return ha + hb + own
            if op == "*":
                return _scaled(b, ha) + _scaled(a, hb) + own
            if op == "/":
                a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
                return _scaled(1 / b, ha) + _scaled(a / (b * b), hb) + own
        raise ValueError(op)

    def call_bound(self, fn: str, args, v):
        if not _is_float(np.asarray(v).dtype):
            return 0.0  # casts to integers or bool
        with np.errstate(all="ignore"):
            if fn in ir.CASTS:  # a float cast rounds once more, unless the value is exact (then both sides agree)
                h = args[0][1]
                return np.where(np.asarray(h) == 0, 0.0, h + _U[fn] * np.abs(v))
            if fn == "select":
                (c, _), (_, ha), (_, hb) = args
                return np.where(c, ha, hb)
            if fn in ("max", "min", "clamp"):
                return functools.reduce(np.maximum, [h for _, h in args])
            if fn in _STEPS:
                return 0.0
            if fn in ("abs", "neg"):
                return args[0][1]
            if fn == "pow":
                (a, ha), (b, hb) = args
                a = np.asarray(a, np.float64)
                return _scaled(b * v / a, ha) + _scaled(v * np.log(np.abs(a)), hb) + np.abs(v)
            (x, h), = args
            return _scaled(_DERIVATIVE[fn](np.asarray(x, np.float64), np.asarray(v, np.float64)), h) + np.abs(v)


__all__ = ["rounding_bound"]
