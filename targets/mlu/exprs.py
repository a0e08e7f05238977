"""Compiling expressions of the kernel language to Python closures ``fn(c, f)`` (c: the task's `CoreCtx`,
f: the frame, a list of local-variable slots), with static types and constant folding.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

from . import syntax as S
from .errors import MluError, Span
from .shapeonly import UNKNOWN
from .lang import (BUILTIN_CONSTS, BUILTIN_VARS, DIRECTIONS, ELEM_TYPES, FUSION_OPS, INT_MAX, INT_MIN, SCALAR_FUNCS,
                   ElemType, c_div, c_mod)

Fn = Callable[[object, list], object]


@dataclass(frozen=True)
class Type:
    """Static type of a value: "int", "float", or "ptr" (to ``elem``); scalar variables keep their ``elem`` too."""

    kind: str
    elem: ElemType | None = None

    def __str__(self) -> str:
        if self.kind == "ptr":
            return f"{self.elem}*"
        return str(self.elem) if self.elem is not None else self.kind


INT = Type("int", ELEM_TYPES["int"])
FLOAT = Type("float", ELEM_TYPES["float"])


def type_of(ref: S.TypeRef, span: Span) -> Type:
    if ref.elem not in ELEM_TYPES:
        raise MluError(f"unknown type '{ref.elem}'", span)
    elem = ELEM_TYPES[ref.elem]
    if ref.pointer:
        return Type("ptr", elem)
    return Type("float" if elem.is_float else "int", elem)


@dataclass
class Sym:
    """A name in scope: a local/param ("var", in frame ``slot``), a "const", or an on-chip "buffer"."""

    kind: str
    type: Type
    slot: int = -1
    value: object = None
    span: Span | None = None


_BUILTIN_ATTR = {"taskId": "task_id", "taskDim": "task_dim", "clusterId": "cluster_id",
                 "clusterDim": "cluster_dim", "coreId": "core_id", "coreDim": "core_dim"}
assert set(_BUILTIN_ATTR) == set(BUILTIN_VARS)


def rounder(elem: ElemType) -> Callable[[float], float]:
    """Round a Python float to ``elem`` (float, half, bfloat16_t)."""
    ctor = {"float": np.float32, "half": np.float16, "bfloat16_t": ml_dtypes.bfloat16}[elem.name]
    return lambda v: float(ctor(v))


def converter(target: Type, source: Type, span: Span, what: str) -> Callable[[object], object] | None:
    """How a value of type ``source`` is stored into ``target`` (None: as is); raises on impossible stores."""
    if target.kind == "ptr" or source.kind == "ptr":
        if target.kind != source.kind or target.elem.dtype != source.elem.dtype:
            raise MluError(f"{what}: cannot convert {source} to {target} (use an explicit cast)", span)
        return None
    if target.kind == "int":
        def to_int(v):
            if v is UNKNOWN:  # timing-only mode: stays unknown until it decides something
                return v
            if type(v) is float:
                if not math.isfinite(v):
                    raise MluError(f"{what}: cannot convert {v} to int", span)
                v = int(v)
            if not INT_MIN <= v <= INT_MAX:
                raise MluError(f"{what}: value {v} overflows int", span)
            return v
        return to_int
    if target.elem.name == "float" and source.kind == "float" and source.elem.name == "float":
        return None
    round_to = rounder(target.elem)
    return lambda v: v if v is UNKNOWN else round_to(float(v))


class ExprCompiler:
    """Compiles expressions against a scope chain owned by the statement compiler."""

    def __init__(self, lookup: Callable[[str], Sym | None]):
        self.lookup = lookup

    def const_int(self, e: S.Expr, what: str) -> int:
        _, typ, value = self.expr(e)
        if value is None or typ.kind != "int":
            raise MluError(f"{what} must be a constant int expression", e.span)
        return value

    def expr(self, e: S.Expr) -> tuple[Fn, Type, object]:
        """(closure, static type, constant value or None)."""
        method = getattr(self, "_" + type(e).__name__.lower())
        return method(e)

    # ------------------------------------------------------------ leaves
    def _intlit(self, e: S.IntLit):
        return _const(e.value), INT, e.value

    def _floatlit(self, e: S.FloatLit):
        return _const(e.value), FLOAT, e.value

    def _name(self, e: S.Name):
        sym = self.lookup(e.name)
        if sym is not None:
            if sym.kind == "const":
                return _const(sym.value), sym.type, sym.value
            if sym.kind == "buffer":
                index = sym.slot
                return (lambda c, f: c.buffers[index]), sym.type, None
            slot = sym.slot
            return (lambda c, f: f[slot]), sym.type, None
        if e.name in _BUILTIN_ATTR:
            attr = _BUILTIN_ATTR[e.name]
            return (lambda c, f: getattr(c, attr)), INT, None
        if e.name in BUILTIN_CONSTS:
            value = BUILTIN_CONSTS[e.name]
            return _const(value), FLOAT, value
        if e.name in DIRECTIONS:
            raise MluError(f"'{e.name}' can only be the direction argument of __memcpy/__memcpy_async", e.span)
        if e.name in FUSION_OPS:
            raise MluError(f"'{e.name}' can only be the first argument of __bang_fusion", e.span)
        raise MluError(f"use of undeclared name '{e.name}'", e.span)

    def pointer(self, name: str, span: Span) -> tuple[Fn, Type]:
        fn, typ, _ = self._name(S.Name(span, name))
        if typ.kind != "ptr":
            raise MluError(f"'{name}' is not a pointer or buffer (it is {typ})", span)
        return fn, typ

    def _index(self, e: S.Index):
        base, typ = self.pointer(e.name, e.span)
        idx, itype, _ = self.expr(e.index)
        _need(itype, "int", "array index", e.index.span)
        span = e.span
        elem = typ.elem
        size = elem.itemsize
        to_py = float if elem.is_float else int

        def load(c, f):
            i = idx(c, f)
            if i is UNKNOWN:  # timing-only mode, value-dependent index (a gather): same cost, nothing to check
                base(c, f)
                c.scalar_access(None, False, span)
                return UNKNOWN
            ptr = base(c, f).add(i)
            c.scalar_access(ptr, False, span)
            off = ptr.off
            if off < 0 or off + size > ptr.region.size:
                raise MluError(f"element access at byte {off} is out of bounds of {ptr.region.describe()}", span)
            if ptr.region.data is None:  # timing-only mode
                return UNKNOWN
            return to_py(ptr.region.data[off:off + size].view(elem.dtype)[0])
        return load, Type("float" if elem.is_float else "int", elem), None

    # ------------------------------------------------------------ operators
    def _unary(self, e: S.Unary):
        fn, typ, value = self.expr(e.operand)
        if typ.kind == "ptr":
            raise MluError(f"operator '{e.op}' cannot be applied to a pointer", e.span)
        if e.op == "-":
            if value is not None:
                return _const(-value), typ, -value
            return (lambda c, f: -fn(c, f)), typ, None
        if value is not None:
            return _const(int(not value)), INT, int(not value)
        def logical_not(c, f):
            v = fn(c, f)
            return v if v is UNKNOWN else int(not v)   # timing-only: pure arithmetic, decides nothing
        return logical_not, INT, None

    def _binary(self, e: S.Binary):
        lf, lt, lv = self.expr(e.left)
        rf, rt, rv = self.expr(e.right)
        op = e.op
        if lt.kind == "ptr" or rt.kind == "ptr":
            return self._pointer_arith(e, lf, lt, rf, rt)
        if op in ("&&", "||"):
            if lv is not None and rv is not None:
                value = int(bool(lv) and bool(rv)) if op == "&&" else int(bool(lv) or bool(rv))
                return _const(value), INT, value
            if op == "&&":
                return (lambda c, f: int(bool(lf(c, f)) and bool(rf(c, f)))), INT, None
            return (lambda c, f: int(bool(lf(c, f)) or bool(rf(c, f)))), INT, None
        is_int = lt.kind == "int" and rt.kind == "int"
        result = INT if is_int or op in _COMPARE else FLOAT
        if op == "%" and not is_int:
            raise MluError("operator '%' needs int operands", e.span)
        impl = _int_op(op, e.span) if is_int else _float_op(op)
        if lv is not None and rv is not None:
            value = impl(lv, rv)
            return _const(value), result, value
        if rv is not None:
            return (lambda c, f: impl(lf(c, f), rv)), result, None
        return (lambda c, f: impl(lf(c, f), rf(c, f))), result, None

    def _pointer_arith(self, e, lf, lt, rf, rt):
        if e.op == "+" and lt.kind == "ptr" and rt.kind == "int":
            ptr, off, typ = lf, rf, lt
        elif e.op == "+" and lt.kind == "int" and rt.kind == "ptr":
            ptr, off, typ = rf, lf, rt
        elif e.op == "-" and lt.kind == "ptr" and rt.kind == "int":
            return (lambda c, f: lf(c, f).add(-rf(c, f))), lt, None
        else:
            raise MluError(f"operator '{e.op}' is not defined for {lt} and {rt} (only pointer +/- int)", e.span)
        return (lambda c, f: ptr(c, f).add(off(c, f))), typ, None

    def _ternary(self, e: S.Ternary):
        cf, ct, cv = self.expr(e.cond)
        af, at, av = self.expr(e.then)
        bf, bt, bv = self.expr(e.other)
        if at.kind == "ptr" or bt.kind == "ptr":
            if at != bt:
                raise MluError(f"branches of '?:' have different types ({at} and {bt})", e.span)
            typ = at
        else:
            typ = INT if at.kind == bt.kind == "int" else FLOAT
        if cv is not None:
            return (af, typ, av) if cv else (bf, typ, bv)
        return (lambda c, f: af(c, f) if cf(c, f) else bf(c, f)), typ, None

    def _cast(self, e: S.Cast):
        target = type_of(e.type, e.span)
        fn, typ, value = self.expr(e.operand)
        if target.kind == "ptr":
            if typ.kind != "ptr":
                raise MluError(f"cannot cast {typ} to {target}", e.span)
            elem = target.elem
            return (lambda c, f: fn(c, f).cast(elem)), target, None
        if typ.kind == "ptr":
            raise MluError(f"cannot cast pointer to {target}", e.span)
        if target.kind == "int":
            conv = converter(target, FLOAT, e.span, "cast")
        else:
            round_to = rounder(target.elem)
            conv = lambda v: v if v is UNKNOWN else round_to(v)   # timing-only: a cast decides nothing
        if value is not None:
            folded = conv(value)
            return _const(folded), target, folded
        return (lambda c, f: conv(fn(c, f))), target, None

    def _call(self, e: S.Call):
        if e.name not in SCALAR_FUNCS:
            known = list(SCALAR_FUNCS)
            hint = difflib.get_close_matches(e.name, known, 1)
            extra = f"; did you mean '{hint[0]}'?" if hint else ""
            raise MluError(f"'{e.name}' is not a function returning a value{extra}", e.span)
        arity, int_result, impl = SCALAR_FUNCS[e.name]
        if len(e.args) != arity:
            raise MluError(f"{e.name} takes {arity} argument(s), got {len(e.args)}", e.span)
        compiled = [self.expr(a) for a in e.args]
        for (_, typ, _), arg in zip(compiled, e.args):
            if typ.kind == "ptr":
                raise MluError(f"{e.name}: argument must be a number, got {typ}", arg.span)
        is_int = int_result and all(t.kind == "int" for _, t, _ in compiled)
        typ = INT if is_int else FLOAT
        cast = (lambda v: v) if is_int else float
        fns = [fn for fn, _, _ in compiled]
        if all(v is not None for _, _, v in compiled):
            value = cast(impl(*[v for _, _, v in compiled]))
            return _const(value), typ, value
        if arity == 1:
            (a,) = fns

            def call1(c, f):
                x = a(c, f)
                return x if x is UNKNOWN else cast(impl(x))
            return call1, typ, None
        a, b = fns

        def call2(c, f):
            x, y = a(c, f), b(c, f)
            return UNKNOWN if x is UNKNOWN or y is UNKNOWN else cast(impl(x, y))
        return call2, typ, None


_COMPARE = {"<", "<=", ">", ">=", "==", "!="}


def _const(value) -> Fn:
    return lambda c, f: value


def _need(typ: Type, kind: str, what: str, span: Span) -> None:
    if typ.kind != kind:
        raise MluError(f"{what} must be {kind}, got {typ}", span)


def _int_op(op: str, span: Span):
    if op in ("/", "%"):
        base = c_div if op == "/" else c_mod

        def checked(a, b):
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            if b == 0:
                raise MluError("integer division by zero", span)
            return base(a, b)
        return checked
    return _ARITH[op]


def _float_div(a, b):
    try:
        return a / b  # UNKNOWN (timing-only mode) on either side gives UNKNOWN
    except ZeroDivisionError:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _float_op(op: str):
    return _float_div if op == "/" else _ARITH[op]


_ARITH = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    # comparisons give int 0/1 (``+ 0`` rather than ``int()`` keeps UNKNOWN unknown in timing-only mode)
    "<": lambda a, b: (a < b) + 0, "<=": lambda a, b: (a <= b) + 0, ">": lambda a, b: (a > b) + 0,
    ">=": lambda a, b: (a >= b) + 0, "==": lambda a, b: (a == b) + 0, "!=": lambda a, b: (a != b) + 0,
}
