"""Vector built-ins (``__bang_*``): operand checks, numpy semantics, and compute-pipe cost.

Rules shared by every op (see LANGUAGE.md):
  * operands are NRAM pointers (the right operand of __bang_matmul is WRAM) and start at an address that is a
    multiple of ``machine.vector_align_bytes``;
  * a vector operand of ``n`` elements of type T must span whole vector units: ``n * sizeof(T)`` is a multiple of
    ``machine.vector_unit_bytes`` (exempt: the 1-element result of full reductions and the ``rows``-element result
    of ``*_rows`` reductions, which only need the alignment);
  * all operands have the same element type except in conversions and __bang_matmul;
  * 16-bit floats are computed in float32 and rounded once when stored; reductions accumulate in float32.
Cost on the compute pipe: ``vector_op_cycles + units * cycles_<class>``, units = bytes of the widest operand / 128.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .core import CoreCtx
from .errors import MluError, Span
from .lang import NRAM, SPACE_NAMES, ElemType
from .memory import Ptr, check_range, view

F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class VecOp:
    """A vector built-in: its argument kinds ('p' pointer, 'i' int, 'x' number) and implementation."""

    name: str
    params: str
    run: Callable[[CoreCtx, tuple, Span], None]


VECTOR_OPS: dict[str, VecOp] = {}


def _register(name: str, params: str, run) -> None:
    VECTOR_OPS[name] = VecOp(name, params, run)


# ---------------------------------------------------------------- operand helpers
class _Op:
    """Collects checked operands of one op invocation, then records its cost and accesses."""

    def __init__(self, c: CoreCtx, name: str, span: Span):
        self.c, self.name, self.span = c, name, span
        self.values = c.values  # False in timing-only mode: operands are checked but have no data
        self.reads: list = []
        self.writes: list = []
        self.max_bytes = 0

    def operand(self, ptr: Ptr, count: int, role: str, write: bool = False, whole_units: bool = True,
                spaces: tuple[str, ...] = (NRAM,)) -> np.ndarray | None:
        """Check one operand and record its access; its checked view, or None in timing-only mode."""
        m = self.c.machine
        if not isinstance(ptr, Ptr):
            raise MluError(f"{self.name}: operand '{role}' must be a pointer")
        if ptr.region.space not in spaces:
            want = " or ".join(SPACE_NAMES[s] for s in spaces)
            raise MluError(f"{self.name}: operand '{role}' must point to {want}, but '{ptr.region.name}' is in "
                           f"{SPACE_NAMES[ptr.region.space]}")
        if count <= 0:
            raise MluError(f"{self.name}: element count of operand '{role}' must be positive, got {count}")
        addr = ptr.region.addr + ptr.off
        if addr % m.vector_align_bytes:
            raise MluError(f"{self.name}: operand '{role}' ({ptr.region.name} + {ptr.off} bytes) is not "
                           f"{m.vector_align_bytes}-byte aligned")
        nbytes = count * ptr.elem.itemsize
        if whole_units and nbytes % m.vector_unit_bytes:
            raise MluError(f"{self.name}: operand '{role}' spans {nbytes} bytes ({count} x {ptr.elem}), not a "
                           f"multiple of the {m.vector_unit_bytes}-byte vector unit")
        if self.values:
            data = view(ptr, count, f"{self.name} operand '{role}'")
        else:
            data = None
            check_range(ptr, nbytes, f"{self.name} operand '{role}'")
        (self.writes if write else self.reads).append((ptr.region, ptr.off, ptr.off + nbytes))
        self.max_bytes = max(self.max_bytes, nbytes)
        return data

    def same_type(self, *ptrs: Ptr, floats_only: bool = False) -> ElemType:
        elem = ptrs[0].elem
        for ptr in ptrs[1:]:
            if ptr.elem != elem:
                raise MluError(f"{self.name}: operands have different element types ({elem} and {ptr.elem})")
        if floats_only and not elem.is_float:
            raise MluError(f"{self.name}: not supported for {elem} operands")
        return elem

    def finish(self, op_class: str, units_bytes: int | None = None, cycles: float | None = None) -> None:
        m = self.c.machine
        if cycles is None:
            nbytes = self.max_bytes if units_bytes is None else units_bytes
            units = math.ceil(nbytes / m.vector_unit_bytes)
            cycles = units * m.op_class_cycles(op_class)
        self.c.compute(m.vector_op_cycles + cycles, self.reads, self.writes, self.name, self.span)


def _wide(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == F32 or x.dtype.kind in "iu" else x.astype(F32)


def _count(name: str, value, what: str = "n") -> int:
    if value <= 0:
        raise MluError(f"{name}: {what} must be positive, got {value}")
    return value


# ---------------------------------------------------------------- element-wise families
def _cmp(fn):
    return lambda a, b: fn(a, b).astype(a.dtype if a.dtype.kind in "iu" else F32)


_BINARY = {  # name: (numpy function, op class, allowed on ints)
    "add": (np.add, "simple", True), "sub": (np.subtract, "simple", True), "mul": (np.multiply, "simple", True),
    "div": (np.divide, "div", False), "maximum": (np.maximum, "simple", True),
    "minimum": (np.minimum, "simple", True), "pow": (np.power, "special", False),
    "ge": (_cmp(np.greater_equal), "simple", True), "gt": (_cmp(np.greater), "simple", True),
    "le": (_cmp(np.less_equal), "simple", True), "lt": (_cmp(np.less), "simple", True),
    "eq": (_cmp(np.equal), "simple", True), "ne": (_cmp(np.not_equal), "simple", True),
}
_SCALAR = dict(_BINARY, rsub=(lambda a, s: s - a, "simple", True), rdiv=(lambda a, s: s / a, "div", False))
_CYCLE = ("add", "sub", "mul", "div", "maximum", "minimum")


def _make_binary(name, fn, op_class, int_ok):
    def run(c, args, span):
        dst, a, b, n = args
        op = _Op(c, name, span)
        op.same_type(dst, a, b, floats_only=not int_ok)
        _count(name, n)
        va, vb = op.operand(a, n, "a"), op.operand(b, n, "b")
        out = op.operand(dst, n, "dst", write=True)
        if op.values:
            out[...] = fn(_wide(va), _wide(vb))
        op.finish(op_class)
    return run


def _make_scalar(name, fn, op_class, int_ok):
    def run(c, args, span):
        dst, a, value, n = args
        op = _Op(c, name, span)
        elem = op.same_type(dst, a, floats_only=not int_ok)
        _count(name, n)
        va = op.operand(a, n, "a")
        out = op.operand(dst, n, "dst", write=True)
        if op.values:
            va = _wide(va)
            scalar = np.array(value).astype(elem.dtype).astype(va.dtype)
            out[...] = fn(va, scalar)
        op.finish(op_class)
    return run


def _make_cycle(name, fn, op_class, int_ok):
    def run(c, args, span):
        dst, a, b, n, m = args
        op = _Op(c, name, span)
        op.same_type(dst, a, b, floats_only=not int_ok)
        _count(name, n)
        _count(name, m, "m")
        if n % m:
            raise MluError(f"{name}: n={n} is not a multiple of m={m}")
        va, vb = op.operand(a, n, "a"), op.operand(b, m, "b")
        out = op.operand(dst, n, "dst", write=True)
        if op.values:
            out[...] = fn(_wide(va).reshape(-1, m), _wide(vb)[None, :]).reshape(-1)
        op.finish(op_class)
    return run


try:  # scipy is optional: fast vectorised erf/erfc when present, math.erf element by element otherwise
    from scipy.special import erf as _erf, erfc as _erfc
except ImportError:  # pragma: no cover - depends on the environment
    _erf_py, _erfc_py = np.frompyfunc(math.erf, 1, 1), np.frompyfunc(math.erfc, 1, 1)

    def _erf(x):
        return _erf_py(x).astype(x.dtype)

    def _erfc(x):
        return _erfc_py(x).astype(x.dtype)


def _gelu(x):
    """0.5x(1 + erf(x / sqrt 2)), as 0.5x erfc(-x / sqrt 2) (no cancellation for x << 0)."""
    return 0.5 * x * _erfc(x * np.float32(-1 / math.sqrt(2)))


def _gelu_tanh(x):
    """0.5x(1 + tanh(u)), u = sqrt(2/pi)(x + 0.044715x^3), as x / (1 + exp(-2u))."""
    u = np.float32(math.sqrt(2 / math.pi)) * (x + np.float32(0.044715) * x * x * x)
    return x / (1 + np.exp(np.float32(-2) * u))


def _softplus(x):
    """log1p(exp(x)); x itself above 20."""
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, np.float32(20)))))


_UNARY = {  # name: (function on float32 / int arrays, op class, allowed on ints)
    "exp": (np.exp, "special", False), "log": (np.log, "special", False), "sqrt": (np.sqrt, "special", False),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "special", False), "recip": (lambda x: 1 / x, "div", False),
    "gelu": (_gelu, "special", False), "tanh": (np.tanh, "special", False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "special", False), "erf": (_erf, "special", False),
    "abs": (np.abs, "simple", True), "relu": (lambda x: np.maximum(x, 0), "simple", True),
    "neg": (np.negative, "simple", True), "square": (np.square, "simple", True),
    "sin": (np.sin, "special", False), "cos": (np.cos, "special", False), "log1p": (np.log1p, "special", False),
    "expm1": (np.expm1, "special", False), "softplus": (_softplus, "special", False),
    "silu": (lambda x: x / (1 + np.exp(-x)), "special", False), "gelu_tanh": (_gelu_tanh, "special", False),
    "floor": (np.floor, "simple", False), "ceil": (np.ceil, "simple", False),
    "round": (np.rint, "simple", False),   # half to even
}


def _make_unary(name, fn, op_class, int_ok):
    def run(c, args, span):
        dst, a, n = args
        op = _Op(c, name, span)
        op.same_type(dst, a, floats_only=not int_ok)
        _count(name, n)
        va = op.operand(a, n, "a")
        out = op.operand(dst, n, "dst", write=True)
        if op.values:
            with np.errstate(all="ignore"):   # IEEE results: overflow to inf, log of a negative NaN
                out[...] = fn(_wide(va))
        op.finish(op_class)
    return run


def _select(c, args, span):
    dst, cond, a, b, n = args
    name = "__bang_select"
    op = _Op(c, name, span)
    op.same_type(dst, cond, a, b)
    _count(name, n)
    vc, va, vb = op.operand(cond, n, "cond"), op.operand(a, n, "a"), op.operand(b, n, "b")
    out = op.operand(dst, n, "dst", write=True)
    if op.values:
        out[...] = np.where(vc != 0, va, vb)
    op.finish("simple")


def _write_value(c, args, span):
    dst, n, value = args
    op = _Op(c, "__bang_write_value", span)
    _count(op.name, n)
    out = op.operand(dst, n, "dst", write=True)
    if op.values:
        out[...] = value
    op.finish("simple")


for _n, (_f, _cls, _ints) in _BINARY.items():
    _register(f"__bang_{_n}", "pppi", _make_binary(f"__bang_{_n}", _f, _cls, _ints))
for _n, (_f, _cls, _ints) in _SCALAR.items():
    _register(f"__bang_{_n}_scalar", "ppxi", _make_scalar(f"__bang_{_n}_scalar", _f, _cls, _ints))
for _n in _CYCLE:
    _f, _cls, _ints = _BINARY[_n]
    _register(f"__bang_cycle_{_n}", "pppii", _make_cycle(f"__bang_cycle_{_n}", _f, _cls, _ints))
for _n, (_f, _cls, _ints) in _UNARY.items():
    _register(f"__bang_active_{_n}", "ppi", _make_unary(f"__bang_active_{_n}", _f, _cls, _ints))
_register("__bang_select", "ppppi", _select)
_register("__bang_write_value", "pix", _write_value)
