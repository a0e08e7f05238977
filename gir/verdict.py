"""Judging a computed result against its float64 reference: the verdict of `gir run`.

The rule, for each result tensor (docs/simulator.md, "Checking results"):

1. The shapes are equal. An empty tensor passes.
2. Non-finite values are compared exactly: the result has NaN exactly where the reference has NaN, and +inf
   (or -inf) exactly where the reference has +inf (or -inf).
3. On the remaining elements, all finite in both, the error is norm-wise against the reference's magnitude,

       error = ||result - reference||_2 / max(||reference||_2, TINY)

   and the result passes when `error <= tolerance`. The tolerance is `TOLERANCE[dtype]` (0 for integers and
   booleans: they must be exact). For a float result whose rounding bound `rounding` is given (gir.rounding:
   per element, in units of the f32 unit roundoff, how large the rounding errors of an f32 evaluation of the
   program can make it), the tolerance is widened to

       max(TOLERANCE[dtype], ROUNDING_GROWTH * U_F32 * ||rounding||_2 / max(||reference||_2, TINY))

   which exceeds the table only where the result is ill-conditioned, e.g. a mean whose terms nearly cancel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gir import ir

TOLERANCE = {ir.DType.f32: 1e-5, ir.DType.f64: 1e-12, ir.DType.f16: 1e-2, ir.DType.bf16: 1e-2,
             ir.DType.i32: 0.0, ir.DType.i64: 0.0, ir.DType.bool: 0.0}
TINY = float(np.finfo(np.float64).tiny)
U_F32 = 2.0 ** -24      # unit roundoff of f32, the precision kernels compute in (16-bit values are widened)
U_F64 = 2.0 ** -53      # unit roundoff of f64 (f64 values are computed in f64)
ROUNDING_GROWTH = 8.0   # headroom over the first-order bound (the order of additions in a reduction)


@dataclass(frozen=True)
class Verdict:
    error: float      # norm-wise relative error of the finite elements; inf when shapes or NaN/inf patterns differ
    tolerance: float
    passed: bool
    reason: str       # why it failed, or why the tolerance is wider than the table; "" otherwise


def compare(result, reference, dtype: ir.DType, rounding=None) -> Verdict:
    """The verdict on `result` (any numeric dtype) against `reference` (float64, or exact for integer/bool
    results). `rounding`: an optional per-element rounding bound of the reference (gir.rounding)."""
    got, want = _as_float64(result), _as_float64(reference)
    table = TOLERANCE[dtype]
    if got.shape != want.shape:
        return Verdict(np.inf, table, False, f"shape {list(got.shape)} where the reference has {list(want.shape)}")
    if not dtype.is_float:  # integers and booleans: exact, compared in their own type (i64 beyond 2^53)
        wrong = np.asarray(result) != np.asarray(reference)
        error = _norm(got - want) / max(_norm(want), TINY) if wrong.any() else 0.0
        if not wrong.any():
            return Verdict(error, table, True, "")
        n = int(wrong.sum())
        return Verdict(error, table, False, f"{n} element{'s differ' if n != 1 else ' differs'} from the exact "
                                            f"reference (first at {_first(wrong)})")
    mismatch = _special_mismatch(got, want)
    if mismatch:
        return Verdict(np.inf, table, False, mismatch)
    finite = np.isfinite(want)
    diff, ref = got[finite] - want[finite], want[finite]
    scale = max(_norm(ref), TINY)
    error = _norm(diff) / scale
    tolerance, reason = table, ""
    if rounding is not None and ref.size:
        bound = np.broadcast_to(np.asarray(rounding, np.float64), want.shape)[finite]
        bound = np.where(np.isfinite(bound), bound, 0.0)  # an unbounded element does not widen the tolerance
        unit, prec = (U_F64, "f64") if dtype == ir.DType.f64 else (U_F32, "f32")   # f64 is computed in f64
        widened = ROUNDING_GROWTH * unit * _norm(bound) / scale
        if widened > table:
            tolerance = widened
            reason = (f"tolerance widened from {table:.0e}: the result is ill-conditioned (its {prec} rounding bound "
                      f"is {widened / (ROUNDING_GROWTH * unit):.3g}x its magnitude)")
    passed = bool(error <= tolerance)
    if not passed:
        reason = f"error {error:.3e} exceeds the {dtype.value} tolerance {tolerance:.3g}"
    return Verdict(error, tolerance, passed, reason)


def _as_float64(a) -> np.ndarray:
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype != np.float64 else a


def _norm(a: np.ndarray) -> float:
    """||a||_2 of finite values, without overflow in the squares."""
    big = float(np.max(np.abs(a))) if a.size else 0.0
    return big * float(np.linalg.norm(a / big)) if big > 0 else 0.0


def _first(mask: np.ndarray) -> str:
    return str([int(i) for i in np.argwhere(mask)[0]])


def _count(n: int) -> str:
    return f"{n} position{'s' if n != 1 else ''}"


def _special_mismatch(got: np.ndarray, want: np.ndarray) -> str:
    """The first difference of the NaN / +inf / -inf patterns, in words; "" when they agree."""
    kinds = (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf))
    for name, test in kinds:
        g, w = test(got), test(want)
        extra = g & ~w
        if extra.any():
            has = _describe(want[extra])
            return f"{name} at {_count(int(extra.sum()))} where the reference has {has} (first at {_first(extra)})"
        missing = w & ~g
        if missing.any():
            has = _describe(got[missing])
            return (f"{has} at {_count(int(missing.sum()))} where the reference has {name} "
                    f"(first at {_first(missing)})")
    return ""


def _describe(values: np.ndarray) -> str:
    """What a (non-empty) set of values is, for a message: 'a number', 'NaN', '+inf', '-inf' or 'other values'."""
    present = [name for name, test in (("a number", np.isfinite), ("NaN", np.isnan), ("+inf", np.isposinf),
                                       ("-inf", np.isneginf)) if test(values).any()]
    return present[0] if len(present) == 1 else "other values"


__all__ = ["Verdict", "compare", "TOLERANCE", "TINY", "U_F32", "ROUNDING_GROWTH"]
