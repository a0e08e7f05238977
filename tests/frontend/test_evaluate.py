"""The reference evaluator on tricky semantics, checked against numpy on fresh random inputs."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from gir import ir
from gir.errors import GirError
from gir.evaluate import evaluate
from gir.parser import parse_text
from gir.shapes import func_info

SHAPES = [(1, 1), (1, 7), (5, 33), (3, 128)]


def func(src: str) -> ir.Func:
    return parse_text(src).funcs[0]


def rng(seed=0):
    return np.random.default_rng(seed)


def run(src, **inputs):
    return evaluate(func(src), inputs)


@pytest.mark.parametrize("m, n", SHAPES)
def test_sibling_and_nested_reductions(m, n):
    x = rng(m * n).standard_normal((m, n)).astype(np.float32)
    # k is used only inside max (bound there); j only inside the outer sum
    out = run("func f(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = sum(x[i, j] * max(x[i, k]))\n}\n", x=x)
    np.testing.assert_allclose(out["y"], x.astype(np.float64).sum(1) * x.max(1), rtol=1e-5, atol=1e-6)
    # the same index in two sibling reductions: each reduces its own uses
    out = run("func f(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = sum(x[i, j]) + max(x[i, j])\n}\n", x=x)
    np.testing.assert_allclose(out["y"], x.astype(np.float64).sum(1) + x.max(1), rtol=1e-5, atol=1e-6)
    # nested: i is used inside and outside the inner sum, so the outer max binds it; j stays with sum
    out = run("func f(x: f32[M, N]) -> (y: f32[]) {\n  y[] = max(sum(x[i, j]) * x[i, 0])\n}\n", x=x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out["y"], (x64.sum(1) * x64[:, 0]).max(), rtol=1e-5, atol=1e-6)


def test_reduction_over_nothing_is_an_error():
    with pytest.raises(GirError, match="reduces over nothing"):
        func_info(func("func f(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = sum(x[i, j] - max(x[i, j]))\n}\n"))


@pytest.mark.parametrize("m, n", SHAPES)
def test_broadcast_transpose_reverse(m, n):
    g = rng(7 + m)
    x = g.standard_normal((m, n)).astype(np.float32)
    b = g.standard_normal(n).astype(np.float32)
    src = ("func f(x: f32[M, N], b: f32[N]) -> (y: f32[M, N], t: f32[N, M], r: f32[M, N]) {\n"
           "  y[i, j] = x[i, j] + b[j]\n  t[j, i] = x[i, j]\n  r[i, j] = x[i, N - 1 - j]\n}\n")
    out = run(src, x=x, b=b)
    np.testing.assert_allclose(out["y"], x + b, rtol=1e-6)
    np.testing.assert_array_equal(out["t"], x.T)
    np.testing.assert_array_equal(out["r"], x[:, ::-1])


def test_permute_3d_and_affine_stride():
    x = rng(3).standard_normal((2, 3, 5)).astype(np.float32)
    out = run("func f(x: f32[A, B, C]) -> (y: f32[C, A, B]) {\n  y[k, i, j] = x[i, j, k]\n}\n", x=x)
    np.testing.assert_array_equal(out["y"], x.transpose(2, 0, 1))
    x = rng(4).standard_normal(9).astype(np.float32)
    out = run("func f(x: f32[9]) -> (y: f32[4]) {\n  y[i] = x[2 * i + 1]\n}\n", x=x)
    np.testing.assert_array_equal(out["y"], x[1:9:2])


@pytest.mark.parametrize("n", [1, 7, 64])
def test_bool_masks(n):
    g = rng(n)
    x = g.standard_normal(n).astype(np.float32)
    m = g.random(n) < 0.5
    src = ("func f(x: f32[N], m: bool[N]) -> (y: f32[N], pos: bool[N], cnt: i32[]) {\n"
           "  y[i] = select(m[i] and x[i] > 0.0, x[i], -1.0)\n  pos[i] = not (x[i] <= 0.0) or m[i]\n"
           "  cnt[] = sum(i32(m[i]))\n}\n")
    out = run(src, x=x, m=m)
    np.testing.assert_array_equal(out["y"], np.where(m & (x > 0), x, -1.0).astype(np.float32))
    assert out["pos"].dtype == np.bool_
    np.testing.assert_array_equal(out["pos"], (x > 0) | m)
    assert out["cnt"].shape == () and int(out["cnt"]) == int(m.sum())


def test_int_tensors():
    g = rng(11)
    a = g.integers(-50, 50, size=13).astype(np.int32)
    b = g.integers(1, 9, size=13).astype(np.int64)
    src = ("func f(a: i32[N], b: i64[N]) -> (y: i32[N], z: i64[N], w: f32[N]) {\n"
           "  y[i] = a[i] * 3 - a[i] // 4\n  z[i] = a[i] % b[i] + b[i]\n  w[i] = a[i] / 2\n}\n")
    out = run(src, a=a, b=b)
    np.testing.assert_array_equal(out["y"], a * 3 - a // 4)
    assert out["y"].dtype == np.int32 and out["z"].dtype == np.int64
    np.testing.assert_array_equal(out["z"], a % b + b)
    np.testing.assert_array_equal(out["w"], (a / 2).astype(np.float32))  # '/' is always a float division


def test_float_to_int_cast_truncates_and_intermediate_types():
    x = np.array([-2.7, -0.5, 0.5, 3.9], dtype=np.float32)
    src = "func f(x: f32[N]) -> (y: i32[N]) {\n  t[i] = x[i] * 2.0\n  k[i] = i32(x[i])\n  y[i] = i32(t[i]) + k[i]\n}\n"
    info = func_info(func(src))
    assert info.types["t"].dtype == ir.DType.f32 and info.types["k"].dtype == ir.DType.i32
    out = run(src, x=x)
    np.testing.assert_array_equal(out["y"], np.trunc(x * 2).astype(np.int32) + np.trunc(x).astype(np.int32))


@pytest.mark.parametrize("dt, npdt", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_casts_and_16bit_results_round(dt, npdt):
    x = (rng(5).standard_normal(37) * 3).astype(np.float32)
    src = (f"func f(x: f32[N]) -> (r: f32[N], h: {dt}[N]) {{\n"
           f"  r[i] = f32({dt}(x[i])) - x[i]\n  h[i] = x[i] * 1.5\n}}\n")
    out = run(src, x=x)
    np.testing.assert_array_equal(out["r"], x.astype(npdt).astype(np.float32) - x)
    assert np.any(out["r"] != 0)  # the cast really rounds
    assert out["h"].dtype == np.dtype(npdt)
    np.testing.assert_array_equal(out["h"], (x.astype(np.float64) * 1.5).astype(npdt))


def test_16bit_reduction_accumulates_wide():
    n = 8192
    x = (rng(9).random(n) + 0.5).astype(np.float16)
    out = evaluate(func("func f(x: f16[N]) -> (s: f16[]) {\n  s[] = sum(x[i])\n}\n"), {"x": x},
                   compute_dtype=np.float32)
    want = x.astype(np.float64).sum()
    assert abs(float(out["s"]) - want) <= 2 * float(np.spacing(np.float16(want)))
    naive = np.float16(0)
    for v in x:  # an f16 accumulator stalls once the sum is large
        naive = np.float16(naive + v)
    assert abs(float(naive) - want) > 1000


@pytest.mark.parametrize("m, n", SHAPES)
def test_scalar_result(m, n):
    x = rng(m + n).standard_normal((m, n)).astype(np.float32)
    out = run("func f(x: f32[M, N]) -> (loss: f32[]) {\n  loss[] = mean(x[i, j] * x[i, j])\n}\n", x=x)
    assert out["loss"].shape == ()
    np.testing.assert_allclose(out["loss"], np.mean(x.astype(np.float64) ** 2), rtol=1e-6)


def test_float32_vs_float64_modes():
    x = (1.0 + rng(2).random(6)).astype(np.float32)
    f = func("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = (x[i] + 1.0e-10) - x[i]\n}\n")
    y64 = evaluate(f, {"x": x})["y"]
    y32 = evaluate(f, {"x": x}, compute_dtype=np.float32)["y"]
    np.testing.assert_allclose(y64, 1e-10, rtol=1e-5)
    np.testing.assert_array_equal(y32, 0.0)


def test_out_of_bounds_affine_index():
    f = func("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i + 1]\n}\n")
    with pytest.raises(GirError, match="out of bounds") as exc:
        evaluate(f, {"x": rng().standard_normal(5).astype(np.float32)})
    assert exc.value.loc is not None and exc.value.loc.line == 2


def test_bad_inputs():
    f = func("func f(x: f32[N], w: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] * w[i]\n}\n")
    x = rng().standard_normal(4)
    with pytest.raises(GirError, match="missing input 'w'"):
        evaluate(f, {"x": x})
    with pytest.raises(GirError, match="size N is 4 but input 'w' gives 3"):
        evaluate(f, {"x": x, "w": x[:3]})
    with pytest.raises(GirError, match="has rank 2"):
        evaluate(f, {"x": x, "w": x.reshape(2, 2)})
