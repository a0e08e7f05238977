"""gir.verdict (the comparison behind `gir run`) and gir.rounding (the conditioning bound it may widen with)."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.parser import parse_text
from gir.rounding import rounding_bound
from gir.verdict import ROUNDING_GROWTH, TOLERANCE, U_F32, compare
from gir.verifier import verify_module

F32 = ir.DType.f32


def _func(text: str) -> ir.Func:
    module = parse_text(text, "<test>")
    verify_module(module)
    return module.funcs[0]


def _rounded(ref: np.ndarray, rng, rel: float, dtype=np.float32) -> np.ndarray:
    """`ref` perturbed by about `rel` (norm-wise), in `dtype`."""
    noise = rng.standard_normal(ref.shape)
    return (ref + rel * np.linalg.norm(ref) / np.linalg.norm(noise) * noise).astype(dtype)


def test_norm_wise_error_against_the_per_dtype_table():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal((7, 33))
    for dt, npdt in ((ir.DType.f32, np.float32), (ir.DType.f16, np.float16)):
        tol = TOLERANCE[dt]
        good = compare(_rounded(ref, rng, tol / 4, npdt), ref, dt)
        assert good.passed and good.error < tol and good.tolerance == tol and good.reason == ""
        bad = compare(_rounded(ref, rng, tol * 4, npdt), ref, dt)
        assert not bad.passed and bad.error > tol and f"exceeds the {dt.value} tolerance" in bad.reason


def test_error_is_against_the_reference_magnitude_not_element_wise():
    rng = np.random.default_rng(2)
    ref = rng.standard_normal(100)
    ref[17] = 6e-6  # one tiny element: off by 50% element-wise, negligible against the tensor's norm
    got = ref.astype(np.float32)
    got[17] = 9e-6
    v = compare(got, ref, F32)
    assert v.passed and v.error < 1e-6
    assert abs(got[17] - ref[17]) / ref[17] > 0.4


def test_nan_positions_must_match_exactly():
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((4, 6))
    ref[1, 2] = ref[3, 0] = np.nan
    same = compare(ref.astype(np.float32), ref, F32)
    assert same.passed and same.error < 1e-7
    extra = ref.astype(np.float32)
    extra[0, 4] = extra[2, 1] = extra[2, 5] = np.nan
    v = compare(extra, ref, F32)
    assert not v.passed and v.error == np.inf
    assert v.reason == "NaN at 3 positions where the reference has a number (first at [0, 4])"
    missing = ref.astype(np.float32)
    missing[3, 0] = 1.0
    v = compare(missing, ref, F32)
    assert not v.passed and v.reason == "a number at 1 position where the reference has NaN (first at [3, 0])"


def test_inf_positions_and_signs_must_match_exactly():
    rng = np.random.default_rng(4)
    ref = rng.standard_normal(10)
    ref[3], ref[8] = np.inf, -np.inf
    assert compare(ref.astype(np.float32), ref, F32).passed
    flipped = ref.astype(np.float32)
    flipped[8] = np.inf
    v = compare(flipped, ref, F32)
    assert not v.passed and v.reason == "+inf at 1 position where the reference has -inf (first at [8])"
    flipped[0] = np.inf
    assert compare(flipped, ref, F32).reason == ("+inf at 2 positions where the reference has other values "
                                                 "(first at [0])")
    v = compare(-flipped, -ref, F32)  # the same mismatch, mirrored
    assert not v.passed and "-inf" in v.reason
    overflow = ref.astype(np.float32)
    overflow[0] = np.inf
    v = compare(overflow, ref, F32)
    assert not v.passed and v.reason == "+inf at 1 position where the reference has a number (first at [0])"
    nan_for_inf = ref.astype(np.float32)
    nan_for_inf[3] = np.nan
    assert "NaN at 1 position where the reference has +inf" in compare(nan_for_inf, ref, F32).reason


def test_integers_and_booleans_are_exact():
    rng = np.random.default_rng(5)
    ref = rng.integers(-9, 9, size=(5, 5)).astype(np.int64)
    assert compare(ref.astype(np.int32), ref, ir.DType.i32).passed
    off = ref.astype(np.int32)
    off[2, 3] += 1
    v = compare(off, ref, ir.DType.i32)
    assert not v.passed and v.tolerance == 0
    assert v.reason == "1 element differs from the exact reference (first at [2, 3])"
    big = np.array([2 ** 60, 2 ** 60 + 1], np.int64)  # equal as float64, not as integers
    assert not compare(big, big[::-1].copy(), ir.DType.i64).passed
    mask = rng.random(9) < 0.5
    assert compare(mask, mask, ir.DType.bool).passed
    assert not compare(~mask, mask, ir.DType.bool).passed


def test_empty_and_shape_mismatch():
    assert compare(np.zeros((0, 4), np.float32), np.zeros((0, 4)), F32).passed
    assert compare(np.zeros(0, np.int32), np.zeros(0, np.int64), ir.DType.i32).passed
    v = compare(np.zeros((2, 3), np.float32), np.zeros((3, 2)), F32)
    assert not v.passed and v.reason == "shape [2, 3] where the reference has [3, 2]"


def test_zero_reference():
    assert compare(np.zeros(4, np.float32), np.zeros(4), F32).passed
    assert not compare(np.full(4, 1e-30, np.float32), np.zeros(4), F32).passed


def test_rounding_bound_widens_only_ill_conditioned_results():
    rng = np.random.default_rng(6)
    ref = rng.standard_normal(8)
    got = _rounded(ref, rng, 1e-3)
    assert not compare(got, ref, F32).passed
    well = compare(got, ref, F32, 3 * np.abs(ref))  # a bound a few times the magnitude: the table stands
    assert not well.passed and well.tolerance == TOLERANCE[F32]
    ill = compare(got, ref, F32, 1e5 * np.abs(ref))
    assert ill.passed and "ill-conditioned" in ill.reason
    assert ill.tolerance == pytest.approx(ROUNDING_GROWTH * U_F32 * 1e5, rel=1e-9)
    assert compare(got, ref, ir.DType.f32, np.full(8, np.inf)).tolerance == TOLERANCE[F32]  # unbounded: ignored


MEAN = """
func f(x: f32[M, N]) -> (y: f32[M]) {
  y[i] = mean(x[i, j])
}
"""


def test_near_cancelling_mean_is_ill_conditioned():
    """A mean of values that nearly cancel: an f32 evaluation has a relative error far above 1e-5 (as a kernel
    does), norm-wise too when it is the only element; the rounding bound accounts for it."""
    func = _func(MEAN)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 1000)).astype(np.float32)
    x -= np.float32(x.astype(np.float64).mean() - 6e-6)
    from gir.evaluate import evaluate

    ref = evaluate(func, {"x": x}, compute_dtype=np.float64)["y"].astype(np.float64)
    f32 = evaluate(func, {"x": x}, compute_dtype=np.float32)["y"]
    assert abs(ref[0]) < 1e-5
    plain = compare(f32, ref, F32)
    assert not plain.passed and plain.error > 1e-4
    bound = rounding_bound(func, {"x": x})["y"]
    assert bound[0] == pytest.approx(np.abs(x).mean() + abs(ref[0]), rel=1e-6)
    judged = compare(f32, ref, F32, bound)
    assert judged.passed and judged.tolerance > 100 * plain.error
    dropped = (x[0, 1:].astype(np.float64).sum() / 1000).reshape(1)  # a real bug: one term left out
    assert not compare(dropped.astype(np.float32), ref, F32, bound).passed


def test_rounding_bound_rules():
    rng = np.random.default_rng(8)
    x = rng.standard_normal(16).astype(np.float32)
    w = np.abs(rng.standard_normal(16)).astype(np.float32) + 0.5
    func = _func("""
func f(x: f32[N], w: f32[N]) -> (copy: f32[N], s: f32[N], p: f32[N], q: f32[N], e: f32[N], m: f32[N], t: f32[]) {
  copy[i] = x[i]
  s[i] = x[i] + w[i]
  p[i] = (x[i] + w[i]) * w[i]
  q[i] = w[i] / (x[i] + w[i])
  e[i] = exp(x[i] + w[i])
  m[i] = max(x[i] + w[i], w[i])
  t[] = sum(x[i])
}
""")
    b = rounding_bound(func, {"x": x, "w": w})
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    s = xd + wd
    assert not b["copy"].any()                                   # inputs are exact
    np.testing.assert_allclose(b["s"], np.abs(s))                # one rounding
    np.testing.assert_allclose(b["p"], np.abs(s) * wd + np.abs(s * wd))
    np.testing.assert_allclose(b["q"], wd * np.abs(s) / s ** 2 + np.abs(wd / s))
    np.testing.assert_allclose(b["e"], np.exp(s) * np.abs(s) + np.exp(s))
    np.testing.assert_allclose(b["m"], np.abs(s))                # max is exact: the larger operand bound
    assert float(b["t"]) == pytest.approx(np.abs(xd).sum())      # one rounding per term


def test_rounding_bound_of_inexact_constants_and_casts():
    func = _func("""
func f(x: f32[N], k: i32[N]) -> (a: f32[N], b: f32[N], c: f32[N], d: f32[N]) {
  a[i] = x[i] * 0.5
  b[i] = x[i] * 0.1
  c[i] = f16(x[i])
  d[i] = f32(k[i]) + 1.0
}
""")
    x = np.array([1.5, -3.0, 0.25, 7.0], np.float32)
    b = rounding_bound(func, {"x": x, "k": np.array([1, 2, 3, 4], np.int32)})
    np.testing.assert_allclose(b["a"], np.abs(x) * 0.5)          # 0.5 is exact in f32: the product's rounding
    np.testing.assert_allclose(b["b"], np.abs(x) * 0.1 * 2)      # 0.1 is not: its own rounding, and the product's
    assert not b["c"].any()                                      # an exact value rounds the same on both sides
    np.testing.assert_allclose(b["d"], [2, 3, 4, 5])


def test_rounding_bound_of_a_running_max_ignores_operands_that_never_win():
    # p's first element overflows to -inf (an infinite bound); the running max of the rest never takes it, so its
    # bound stays finite and keeps the widening the long product earned (a random scan program, seed 30326, was
    # judged against the bare f32 tolerance)
    func = _func("""
func f(x: f32[N]) -> (p: f32[N], m: f32[N], n: f32[N]) {
  p[i] = cumprod(x[i], i, reverse=1)
  m[i] = cummax(p[i], i)
  n[i] = cummin(0.0 - p[i], i)
}
""")
    x = np.full(300, 1.001, np.float32)
    x[0] = -np.inf
    b = rounding_bound(func, {"x": x})
    assert np.isneginf(np.float32(x[0])) and np.isfinite(b["m"][1:]).all() and np.isfinite(b["n"][1:]).all()
    assert b["m"][1] > 100 * 1.001 ** 299   # (the product of 299 terms: about one rounding per term)
