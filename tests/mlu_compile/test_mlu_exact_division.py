"""A quotient read by a step function divides exactly on the MLU (passes/schedule_mlu/exactdiv.py): the row and
tile recipes' `x * (1 / s)` is one ulp low for x = s = 41, so `floor(x / c[])` gave 0 on mlu-sim and 1 on sim (a
review's finding); quotients that only flow on into arithmetic keep the reciprocal."""
from __future__ import annotations

import numpy as np
import pytest

import gir
from gir.parser import parse_text
from gir.passes.schedule_mlu.exactdiv import needs_exact_division
from gir.shapes import func_info

FLOOR_SCALAR = "func f(x: f32[M, N], c: f32[]) -> (y: f32[M, N]) {\n  y[i, j] = floor(x[i, j] / c[])\n}\n"
FLOOR_ROW = "func f(x: f32[M, N], r: f32[M]) -> (y: f32[M, N]) {\n  y[i, j] = floor(x[i, j] / r[i])\n}\n"
I32_VIA = ("func f(x: f32[M, N], r: f32[M]) -> (y: i32[M, N]) {\n  q[i, j] = x[i, j] / r[i]\n"
           "  y[i, j] = i32(q[i, j] + 0.0)\n}\n")
COMPARE = ("func f(x: f32[M, N], r: f32[M]) -> (y: f32[M, N]) {\n"
           "  y[i, j] = select(x[i, j] / r[i] >= 1.0, 1.0, 0.0)\n}\n")


def _needs(text: str) -> bool:
    info = func_info(parse_text(text).funcs[0])
    return needs_exact_division([st.stmt for st in info.stmts], info.types)


def test_which_functions_divide_exactly():
    assert all(_needs(t) for t in (FLOOR_SCALAR, FLOOR_ROW, I32_VIA, COMPARE))
    softmax = ("func f(x: f32[M, N], t: i32[M]) -> (y: f32[M, N], k: i32[M]) {\n  s[i] = sum(exp(x[i, j]))\n"
               "  y[i, j] = exp(x[i, j]) / s[i]\n  k[i] = argmax(select(t[i] == 0, x[i, j], 0.0))\n}\n")
    assert not _needs(softmax)   # (a compare, but not of a quotient)


@pytest.mark.parametrize("text", [FLOOR_SCALAR, FLOOR_ROW, I32_VIA, COMPARE])
@pytest.mark.parametrize("m,n", [(4, 4096), (64, 1000), (1, 100000)])
def test_quotients_of_equal_values_are_one(text, m, n):
    x = np.full((m, n), 41.0, np.float32)
    d = np.float32(41.0) if "c: f32[]" in text else np.full(m, 41.0, np.float32)
    k = gir.compile(text, target="mlu-sim", sizes={"M": m, "N": n}, cache=False)
    assert np.array_equal(np.unique(np.asarray(k(x, d))), [1])


def test_quotient_and_step_in_different_segments():
    """The split puts `q = x / c` and `floor(q)` in different segments: the exactness of the whole function
    holds for every segment (the tile recipe decided it per segment: floor(41 / 41) = 0, a review's finding)."""
    text = ("func f(x: f32[A, B]) -> (y: f32[A, B], n: i32[]) {\n  c[] = min(x[i, j])\n  q[i, j] = x[i, j] / c[]\n"
            "  n[] = i32(max(x[i, j]))\n  y[i, j] = floor(q[i, j])\n}\n")
    k = np.arange(7 * 41).reshape(7, 41)
    x = ((k % 13 + 1) * 41).astype(np.float32)
    y, n = gir.compile(text, target="mlu-sim", sizes={"A": 7, "B": 41}, cache=False)(x)
    assert np.array_equal(np.asarray(y), np.floor(x / 41)) and int(n) == 533


MEAN_ROW = "func f(x: f32[M, N]) -> (y: f32[M], z: bool[M]) {\n  y[i] = floor(mean(x[i, j]))\n  z[i] = mean(x[i, j]) >= 1.0\n}\n"
MEAN_COL = "func f(x: f32[M, N]) -> (y: f32[N], z: f32[N]) {\n  y[j] = mean(x[i, j])\n  z[j] = floor(y[j])\n}\n"
MEAN_ALL = "func f(x: f32[M, N]) -> (y: i32[]) {\n  y[] = i32(mean(x[i, j]))\n}\n"
MEAN_TILE = "func f(x: f32[A, M, N]) -> (y: f32[A, N]) {\n  y[a, j] = ceil(mean(x[a, i, j]) - 1.0)\n}\n"


def test_a_mean_is_a_quotient():
    assert all(_needs(t) for t in (MEAN_ROW, MEAN_COL, MEAN_ALL, MEAN_TILE))
    layernorm = ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  mu[i] = mean(x[i, j])\n"
                 "  y[i, j] = (x[i, j] - mu[i]) * rsqrt(mean((x[i, k] - mu[i]) * (x[i, k] - mu[i])) + 1e-5)\n}\n")
    assert not _needs(layernorm)   # (the mean flows on into arithmetic only: a multiply by 1 / N stays)


@pytest.mark.parametrize("text,sizes", [
    (MEAN_ROW, {"M": 41, "N": 41}), (MEAN_ROW, {"M": 300, "N": 41}), (MEAN_ROW, {"M": 7, "N": 100003}),
    (MEAN_COL, {"M": 41, "N": 4099}), (MEAN_COL, {"M": 41, "N": 100003}),
    (MEAN_ALL, {"M": 41, "N": 41}), (MEAN_ALL, {"M": 7, "N": 100003}),
    (MEAN_TILE, {"A": 3, "M": 41, "N": 67})])
def test_mean_of_ones_is_one(text, sizes):
    """`floor(mean(x))` of rows of ones: the sum times fl(1 / 41) is 0.99999994 and floored to 0 on mlu-sim (1 on
    sim); the mean is the sum divided by the count where a step function reads it."""
    shape = [sizes[s] for s in (("A", "M", "N") if "A" in sizes else ("M", "N"))]
    outs = gir.compile(text, target="mlu-sim", sizes=sizes, cache=False)(np.ones(shape, np.float32))
    for out in outs if isinstance(outs, tuple) else (outs,):
        v = np.asarray(out)
        assert np.array_equal(v, np.ones_like(v) if "ceil" not in text else np.zeros_like(v)), v
