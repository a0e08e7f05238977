"""`__bang_mirror(dst, src, height, width)`: every row of a height x width matrix reversed (BANG's w-axis mirror)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mlu_testutil import expect_error, rand
from gir.targets.mlu import MLU370, ShapeOnly, parse_program, simulate

PROGRAM = """
__mlu_global__ void k(%(T)s* x, %(T)s* y) {
  __nram__ %(T)s a[%(n)s];
  __nram__ %(T)s b[%(n)s];
  __memcpy(a, x, %(n)s * sizeof(%(T)s), GDRAM2NRAM);
  __memcpy(b, y, %(n)s * sizeof(%(T)s), GDRAM2NRAM);
  __bang_mirror(b, a, %(h)s, %(w)s);
  __memcpy(y, b, %(n)s * sizeof(%(T)s), NRAM2GDRAM);
}
"""

TYPES = {"float": np.float32, "half": np.float16, "bfloat16_t": ml_dtypes.bfloat16, "int": np.int32,
         "int16_t": np.int16, "int8_t": np.int8, "uint8_t": np.uint8}


def _values(rng, n, dtype):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=n, endpoint=True).astype(dtype)
    return rand(rng, n, dtype)


@pytest.mark.parametrize("ctype,height,width", [("float", 3, 32), ("float", 1, 96), ("half", 5, 64),
                                                ("bfloat16_t", 2, 128), ("int", 4, 64), ("int16_t", 1, 64),
                                                ("int8_t", 3, 128), ("uint8_t", 2, 256)])
def test_mirror_reverses_every_row(ctype, height, width):
    rng = np.random.default_rng(height * 1000 + width)
    dtype = TYPES[ctype]
    n = height * width + 2 * 128 // np.dtype(dtype).itemsize     # elements past the matrix must stay untouched
    x, y = _values(rng, n, dtype), _values(rng, n, dtype)
    text = PROGRAM % dict(T=ctype, n=n, h=height, w=width)
    out = simulate(parse_program(text, filename="mirror.mlu"), "k", dict(x=x, y=y), 1).outputs["y"]
    k = height * width
    np.testing.assert_array_equal(out[:k].reshape(height, width), x[:k].reshape(height, width)[:, ::-1])
    np.testing.assert_array_equal(out[k:], y[k:])


def test_mirror_cost_is_transpose_class_per_unit_and_timing_only_agrees():
    h, w = 16, 256
    text = PROGRAM % dict(T="float", n=h * w, h=h, w=w)
    program = parse_program(text)
    rng = np.random.default_rng(1)
    full = simulate(program, "k", dict(x=rand(rng, h * w), y=rand(rng, h * w)), 1)
    units = h * w * 4 // MLU370.vector_unit_bytes
    assert full.pipe_busy["compute"] == pytest.approx(MLU370.vector_op_cycles + units * MLU370.cycles_transpose)
    shapes = dict(x=ShapeOnly((h * w,), np.float32), y=ShapeOnly((h * w,), np.float32))
    timing = simulate(program, "k", shapes, 1, values=False)
    assert timing.cycles == full.cycles and timing.pipe_busy == full.pipe_busy


X = np.arange(1, 513, dtype=np.float32)


def test_mirror_row_not_whole_units():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __nram__ float b[256];
  __bang_mirror(b, a, 8, 24);   // expected-error {{a row of width=24 x float is 96 bytes, not a multiple of the 128}}
}""", args=dict(x=X))


def test_mirror_overlap_is_rejected():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __memcpy(a, x, 1024, GDRAM2NRAM);
  __bang_mirror(a + 32, a, 2, 64);   // expected-error {{__bang_mirror: dst and src overlap}}
}""", args=dict(x=X))


def test_mirror_in_place_is_rejected():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __memcpy(a, x, 1024, GDRAM2NRAM);
  __bang_mirror(a, a, 1, 256);   // expected-error {{dst and src overlap}}
}""", args=dict(x=X))


def test_mirror_out_of_buffer():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __nram__ float b[128];
  __memcpy(a, x, 1024, GDRAM2NRAM);
  __bang_mirror(b, a, 4, 64);   // expected-error {{out of bounds}}
}""", args=dict(x=X))


def test_mirror_types_must_match():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __nram__ half b[256];
  __bang_mirror(b, a, 2, 64);   // expected-error {{operands have different element types}}
}""", args=dict(x=X))


def test_mirror_height_must_be_positive():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __nram__ float b[256];
  __bang_mirror(b, a, 0, 64);   // expected-error {{height must be positive, got 0}}
}""", args=dict(x=X))


def test_mirror_operand_must_be_nram():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float b[256];
  __bang_mirror(b, x, 2, 64);   // expected-error {{operand 'src' must point to NRAM}}
}""", args=dict(x=X))
