"""The reference evaluator: runs operator-layer programs on numpy.

This is the semantic oracle every backend is checked against. Each statement is
evaluated over its iteration space (one numpy axis per index variable) with
broadcasting; reductions reduce the axes of the variables they bind.

Precision: float arithmetic happens in `compute_dtype` (float64 for an oracle,
float32 to mimic a kernel that accumulates in f32). Intermediates stay in
`compute_dtype`; results are rounded to their declared type.
"""
from __future__ import annotations

import math

import numpy as np

from gir import ir
from gir.errors import GirError, UsageError
from gir.scan import SCANS, ScanParts, evaluate_scan
from gir.shapes import FuncInfo, StmtInfo, func_info
from gir.views import bind_outer, complete_sizes, outer_type, param_sizes, to_outer, to_view

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_SQRT1_2 = 1 / math.sqrt(2)
_GELU_TANH_C = math.sqrt(2 / math.pi)


def _softplus(x):
    """log(1 + e^x), as log1p(exp(x)); x itself above 20 (where they agree to 1e-9 relative, and exp could
    overflow)."""
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def _gelu(x):
    """0.5 x (1 + erf(x / sqrt 2)), as 0.5 x erfc(-x / sqrt 2): the same value without 1 + erf cancelling for
    x << 0."""
    return 0.5 * x * _erfc(-x * _SQRT1_2)


def _gelu_tanh(x):
    """0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), as x / (1 + exp(-2u)): the same value without
    1 + tanh cancelling for x << 0."""
    u = _GELU_TANH_C * (x + 0.044715 * x * x * x)
    return x / (1 + np.exp(-2 * u))


# Float functions of one argument: the arithmetic of each builtin, in the compute dtype (docs/gir.md, "Math
# builtins"). abs and neg keep integer operands and are in `_Evaluator.call`.
UNARY_FLOAT = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "erf": _erf,
    "rsqrt": lambda v: 1 / np.sqrt(v), "recip": lambda v: 1 / v,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "sin": np.sin, "cos": np.cos, "log1p": np.log1p, "expm1": np.expm1,
    "softplus": _softplus, "silu": lambda v: v / (1 + np.exp(-v)), "gelu": _gelu, "gelu_tanh": _gelu_tanh,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint,   # round: half to even, as numpy.rint and ONNX Round
}


def bind_sizes(func: ir.Func, inputs: dict[str, np.ndarray], sizes: dict[str, int] | None = None) -> dict[str, int]:
    """Size symbols from the inputs' shapes (and `sizes`), checked for consistency."""
    bound = dict(sizes or {})
    for p in func.params:
        if p.name not in inputs:
            raise GirError(f"missing input '{p.name}'", p.loc)
        arr = inputs[p.name]
        kind = getattr(arr, "dtype", np.asarray(arr).dtype)
        if not (kind.kind in "biuf" or kind.name == "bfloat16"):
            raise GirError(f"input '{p.name}' has element type {kind}, expected {p.type.dtype.value}", p.loc)
        shape = np.shape(arr)
        if len(shape) != p.type.rank:
            raise GirError(f"input '{p.name}' has rank {len(shape)}, expected {p.type.rank}", p.loc)
        for d, n in zip(p.type.shape, shape):
            if isinstance(d, int):
                if d != n:
                    raise GirError(f"input '{p.name}' has extent {n} where {d} is declared", p.loc)
            elif bound.setdefault(d, n) != n:
                raise GirError(f"size {d} is {bound[d]} but input '{p.name}' gives {n}", p.loc)
    complete_sizes(func, bound)  # derived sizes of reshape views (gir/views.py), divisions checked exact
    from gir.passes.analysis.index_bounds import check_sizes  # quasi-affine / guarded indices at these sizes

    check_sizes(func, bound)
    return bound


def shape_of(ttype: ir.TensorType, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else sizes[d] for d in ttype.shape)


def evaluate(func: ir.Func, inputs: dict[str, np.ndarray], sizes: dict[str, int] | None = None,
             compute_dtype=np.float64) -> dict[str, np.ndarray]:
    """Run an operator-layer function; returns {result name: array of its declared dtype}."""
    if func.is_explicit:
        raise GirError(f"'{func.name}' holds kernels; run it on a target (gir run --target sim)", func.loc)
    info = func_info(func)
    ev = _Evaluator(info, inputs, sizes, np.dtype(compute_dtype))
    try:
        return to_outer(func, ev.run(), ev.sizes)  # results of reshape views in their declared shape
    except MemoryError:
        raise GirError(f"out of memory evaluating '{func.name}' at sizes "
                       f"{', '.join(f'{k}={v}' for k, v in ev.sizes.items())}", func.loc,
                       ["an intermediate tensor is too large; use smaller sizes"]) from None


MAX_DATA_BYTES = 1 << 31  # inputs + results (+ function-level buffers) that eval/run will allocate


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def check_footprint(func: ir.Func, sizes: dict[str, int], limit: int = MAX_DATA_BYTES) -> None:
    """GirError (at the largest tensor's declaration) if the tensors of `func` at `sizes` need more than
    `limit` bytes: huge --sizes must give a clear message, not a MemoryError."""
    decls = [(p.name, outer_type(p), p.loc) for p in func.params + func.results]
    decls += [(a.name, a.type, a.loc) for a in func.body if isinstance(a, ir.Alloc)]
    total, biggest = 0, None
    for name, ttype, loc in decls:
        if any(isinstance(d, str) and d not in sizes for d in ttype.shape):
            continue
        n = math.prod(shape_of(ttype, sizes)) * ttype.dtype.numpy.itemsize
        total += n
        if biggest is None or n > biggest[0]:
            biggest = (n, name, ttype, loc)
    if total > limit:
        n, name, ttype, loc = biggest
        shape = ", ".join(str(d) for d in shape_of(ttype, sizes))
        raise GirError(f"the tensors of '{func.name}' would need {_human(total)} at these sizes "
                       f"(the limit is {_human(limit)})", loc,
                       [f"the largest is '{name}': {ttype.dtype.value}[{shape}], {_human(n)}",
                        "use smaller --sizes"])


DOMAIN_RANGE = (0.5, 2.0)  # default values of inputs that must be positive (see domain_ranges)
_POSITIVE_ARG = ("log", "sqrt", "rsqrt", "pow", "log1p")  # functions whose (first) argument must be positive
#                                                         (log1p: above -1; DOMAIN_RANGE is inside)


def domain_ranges(func: ir.Func) -> dict[str, tuple[float, float]]:
    """{input: DOMAIN_RANGE} for each float input that an operator-layer function reads directly (possibly
    through a cast) as the argument of log, log1p, sqrt or rsqrt, or as the base of pow: normal values would be
    outside their domain half of the time. Explicit functions: {}."""
    from gir.walk import walk

    floats = {p.name for p in func.params if p.type.dtype.is_float}
    out: dict[str, tuple[float, float]] = {}
    for item in func.body:
        if not isinstance(item, ir.Assign):
            continue
        for e in walk(item.value):
            if isinstance(e, ir.Call) and e.fn in _POSITIVE_ARG and e.args:
                arg = e.args[0]
                while isinstance(arg, ir.Call) and arg.fn in ir.CASTS and len(arg.args) == 1:
                    arg = arg.args[0]
                if isinstance(arg, ir.Ref) and arg.name in floats:
                    out[arg.name] = DOMAIN_RANGE
    return out


def random_inputs(func: ir.Func, sizes: dict[str, int], rng: np.random.Generator,
                  ranges: dict[str, tuple[float, float]] | None = None,
                  given: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Fresh random inputs, never zeros: standard normal floats, small positive integers, random booleans.

    `ranges`: {float input: (lo, hi)} draws that input uniformly from [lo, hi) instead; by default
    `domain_ranges(func)`, so that log(x) or sqrt(x) of an input runs inside its domain. `given`: inputs that
    are not drawn (they are returned as they are)."""
    given = given or {}
    ranges = domain_ranges(func) if ranges is None else ranges
    out = {}
    for p in func.params:
        missing = [d for d in param_sizes(p) if d not in sizes]
        if missing and p.name not in given:
            raise UsageError(f"size {missing[0]} of input '{p.name}' is not given (use --sizes "
                           f"{missing[0]}=...)")  # a command-line problem: one line, no source excerpt
    check_footprint(func, sizes)
    for p in func.params:
        if p.name in given:
            out[p.name] = given[p.name]
            continue
        shape = shape_of(outer_type(p), sizes)  # the declared shape (a reshape view's outer one)
        dt = p.type.dtype
        if dt == ir.DType.bool:
            out[p.name] = rng.random(shape) < 0.5
        elif dt.is_int:
            out[p.name] = rng.integers(1, 8, size=shape).astype(dt.numpy)
        elif p.name in ranges:
            lo, hi = ranges[p.name]
            out[p.name] = rng.uniform(lo, hi, shape).astype(dt.numpy)
        else:
            out[p.name] = rng.standard_normal(shape).astype(dt.numpy)
    return out


class _Evaluator:
    def __init__(self, info: FuncInfo, inputs, sizes, cdt: np.dtype):
        self.info = info
        self.cdt = cdt
        sizes = bind_outer(info.func, inputs, sizes)  # inputs of reshape views come in their declared shape
        inputs = to_view(info.func, inputs, sizes)
        self.sizes = bind_sizes(info.func, inputs, sizes)
        check_footprint(info.func, self.sizes)
        self.env: dict[str, np.ndarray] = {}
        self.guarded = 0  # depth of select branches around the expression being evaluated
        for p in info.func.params:
            arr = np.asarray(inputs[p.name])
            self.env[p.name] = arr.astype(cdt) if p.type.dtype.is_float else arr.astype(p.type.dtype.numpy)

    def run(self) -> dict[str, np.ndarray]:
        results = {p.name: p for p in self.info.func.results}
        for st in self.info.stmts:
            value = self.stmt(st)
            name = st.stmt.target.name
            if name in results:
                dt = results[name].type.dtype
                value = _cast(value, dt)
                self.env[name] = value.astype(self.cdt) if dt.is_float else value
            else:
                self.env[name] = value
        return {p.name: _cast(self.env[p.name], p.type.dtype) for p in self.info.func.results}

    def extent(self, d: ir.Dim) -> int:
        return d if isinstance(d, int) else self.sizes[d]

    def stmt(self, st: StmtInfo) -> np.ndarray:
        self.st = st
        self.axes = {v: k for k, v in enumerate(st.out_vars + tuple(v for v in st.ranges if v not in st.out_vars))}
        self.ndim = len(self.axes)
        self.reduce_counter = 0
        value = np.asarray(self.expr(st.stmt.value))
        full = [self.extent(st.ranges[v]) if k < len(st.out_vars) else 1 for v, k in self.axes.items()]
        value = value.reshape((1,) * (self.ndim - value.ndim) + value.shape)
        out_shape = tuple(full[: len(st.out_vars)])
        return np.array(np.broadcast_to(value, full).reshape(out_shape))

    def arange(self, var: str) -> np.ndarray:
        shape = [1] * self.ndim
        shape[self.axes[var]] = self.extent(self.st.ranges[var])
        return np.arange(shape[self.axes[var]], dtype=np.int64).reshape(shape)

    def expr(self, e):
        if isinstance(e, ir.Const):
            if isinstance(e.value, float):
                return np.asarray(e.value, dtype=self.cdt)
            return np.asarray(e.value)
        if isinstance(e, ir.Var):
            if e.name in self.axes:
                return self.arange(e.name)
            return np.asarray(self.sizes[e.name], dtype=np.int64)
        if isinstance(e, ir.Ref):
            return self.ref(e)
        if isinstance(e, ir.Reduce):
            return self.reduce(e)
        if isinstance(e, ir.UnOp):
            x = self.expr(e.operand)
            return np.logical_not(x) if e.op == "not" else -x
        if isinstance(e, ir.BinOp):
            return self.binop(e.op, self.expr(e.lhs), self.expr(e.rhs))
        if isinstance(e, ir.Call) and e.fn in SCANS:
            return self.scan(ScanParts(e))
        if isinstance(e, ir.Call) and e.fn == "select" and len(e.args) == 3:
            self.guarded += 1  # a guarded read is proved in bounds where its branch is taken (index_bounds.py)
            try:
                return self.call(e.fn, [self.expr(a) for a in e.args])
            finally:
                self.guarded -= 1
        if isinstance(e, ir.Call):
            return self.call(e.fn, [self.expr(a) for a in e.args])
        raise TypeError(e)

    def ref(self, e: ir.Ref) -> np.ndarray:
        arr = self.env[e.name]
        if not e.index:
            return np.asarray(arr)
        idx = []
        for dim, i in zip(arr.shape, e.index):
            v = np.asarray(self.expr(i), dtype=np.int64)
            if self.guarded:
                v = np.clip(v, 0, dim - 1)
            if v.size and (v.min() < 0 or v.max() >= dim):
                bad = int(v.min()) if v.min() < 0 else int(v.max())
                raise GirError(f"index {bad} out of bounds for a dimension of extent {dim} of '{e.name}'",
                               getattr(i, "loc", None) or e.loc)
            idx.append(v.reshape((1,) * (self.ndim - v.ndim) + v.shape) if self.ndim else v)
        return arr[tuple(idx)]

    def reduce(self, e: ir.Reduce) -> np.ndarray:
        n = self.reduce_counter
        self.reduce_counter += 1
        x = np.asarray(self.expr(e.arg))
        if (x.dtype == np.bool_ and e.op not in ("max", "min") + ir.ARG_REDUCTIONS
                or x.dtype.kind in "iu" and e.op == "mean"):
            x = x.astype(self.cdt)
        x = x.reshape((1,) * (self.ndim - x.ndim) + x.shape)
        bound = self.st.reduce_vars.get(n, ())
        shape = list(x.shape)
        for v in bound:
            shape[self.axes[v]] = self.extent(self.st.ranges[v])
        x = np.broadcast_to(x, shape)
        axes = tuple(self.axes[v] for v in bound)
        return reduce_values(e, x, axes, self.int_dtype(e.arg))

    def int_dtype(self, e) -> np.dtype:
        """The integer type of an integer value: i64 if it reads an i64 tensor (gir/shapes.py), else i32."""
        from gir.walk import walk

        wide = any(isinstance(x, ir.Ref) and self.info.types[x.name].dtype == ir.DType.i64 for x in walk(e)
                   if isinstance(x, ir.Ref) and x.name in self.info.types)
        return np.dtype(np.int64 if wide else np.int32)

    def scan(self, p: ScanParts) -> np.ndarray:
        """A scan is a whole statement (gir/scan.py): its operand over the output axes, scanned along one."""
        x = np.asarray(self.expr(p.arg))
        x = x.reshape((1,) * (self.ndim - x.ndim) + x.shape)
        x = np.broadcast_to(x, [self.extent(self.st.ranges[v]) for v in self.axes])
        target = self.info.types[self.st.stmt.target.name].dtype
        if x.dtype.kind in "iu" and target in (ir.DType.i32, ir.DType.i64):
            # an integer scan runs in its result's type: an operand computed in a wider type (`x[j] - 3`) would
            # start an exclusive cummax from that type's minimum (INT64_MIN, 0 once stored as i32)
            x = x.astype(target.numpy)
        return evaluate_scan(p.op, np.ascontiguousarray(x), self.axes[p.axis], p.exclusive, p.reverse)

    def _floats(self, *xs):
        if any(_is_float(np.asarray(x).dtype) for x in xs):
            return [np.asarray(x).astype(self.cdt, copy=False) for x in xs]
        return [np.asarray(x) for x in xs]

    def binop(self, op: str, a, b):
        if op == "and":
            return np.logical_and(a, b)
        if op == "or":
            return np.logical_or(a, b)
        if op == "/":
            a, b = np.asarray(a).astype(self.cdt), np.asarray(b).astype(self.cdt)
            with np.errstate(divide="ignore", invalid="ignore"):
                return a / b
        a, b = self._floats(a, b)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod,
                    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                    "==": np.equal, "!=": np.not_equal}[op](a, b)

    def call(self, fn: str, args):
        if fn in ir.CASTS:
            dt = ir.DType(fn)
            out = _cast(np.asarray(args[0]), dt)
            return out.astype(self.cdt) if dt.is_float else out
        if fn == "select":
            a, b = self._floats(args[1], args[2])
            return np.where(args[0], a, b)
        if fn in ("max", "min", "pow"):
            a, b = self._floats(*args)
            return {"max": np.maximum, "min": np.minimum, "pow": np.power}[fn](a, b)
        if fn == "clamp":   # min(max(x, lo), hi); a NaN operand gives NaN, as numpy.clip
            x, lo, hi = self._floats(*args)
            return np.minimum(np.maximum(x, lo), hi)
        x = np.asarray(args[0])
        if fn in ("abs", "neg"):
            return np.abs(x) if fn == "abs" else -x
        x = x.astype(self.cdt)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            return np.asarray(UNARY_FLOAT[fn](x)).astype(self.cdt, copy=False)


def identity(op: str, dtype: np.dtype):
    """The value of a reduction over an empty range, as ONNX's reductions over an empty set: sum 0, prod 1, max
    -inf and min +inf (an integer type's smallest / largest value; booleans: false / true, i.e. any / all), mean
    NaN (0 / 0)."""
    if op in ("sum", "prod"):
        return 0 if op == "sum" else 1
    if op == "mean":
        return np.nan
    if dtype == np.bool_:
        return op == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    return -np.inf if op == "max" else np.inf


def reduce_values(e: ir.Reduce, x: np.ndarray, axes: tuple[int, ...], int_dtype: np.dtype) -> np.ndarray:
    """Reduce `x` (broadcast to its full shape) over `axes` with keepdims; an empty range gives the identity (an
    arg-reduction over one is a located error: no position exists, as ONNX ArgMax)."""
    if e.op in ir.ARG_REDUCTIONS:   # one index (gir/shapes.py); the first extreme, a NaN first (as numpy)
        if x.shape[axes[0]] == 0:
            raise GirError(f"{e.op}() over an empty range: the index it reduces has extent 0, so there is no "
                           "position to give", e.loc)
        pick = np.argmax if e.op == "argmax" else np.argmin
        return np.expand_dims(pick(x, axis=axes[0]), axes[0]).astype(np.int64)
    if any(x.shape[a] == 0 for a in axes):
        shape = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
        dt = x.dtype if x.dtype.kind in "fb" or e.op != "mean" else np.dtype(np.float64)   # (mean: x is float)
        return np.full(shape, identity(e.op, int_dtype if dt.kind in "iu" else dt), dtype=dt)
    fn = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean}[e.op]
    return fn(x, axis=axes, keepdims=True)


def _is_float(dt: np.dtype) -> bool:
    """numpy floats and ml_dtypes' bfloat16 (whose kind is 'V')."""
    return dt.kind == "f" or dt.name == "bfloat16"


def _cast(value: np.ndarray, dt: ir.DType) -> np.ndarray:
    value = np.asarray(value)
    if dt == ir.DType.bool:
        return value != 0
    if dt.is_int and _is_float(value.dtype):
        with np.errstate(invalid="ignore"):
            return np.trunc(value).astype(dt.numpy)
    with np.errstate(over="ignore", invalid="ignore"):  # rounding to the declared type may overflow to inf
        return value.astype(dt.numpy)


__all__ = ["evaluate", "bind_sizes", "random_inputs", "domain_ranges", "shape_of", "FuncInfo"]
