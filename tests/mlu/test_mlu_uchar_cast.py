"""uint8 <-> float vector conversions, and casts of unknown values in timing-only mode."""
from __future__ import annotations

import numpy as np
import pytest

from mlu_testutil import expect_error, rand
from gir.targets.mlu import ShapeOnly, parse_program, simulate

ROUNDTRIP = """
__mlu_global__ void k(uint8_t* m, float* x, float* y, uint8_t* z) {
  __nram__ uint8_t mb[%(P)d];
  __nram__ float mf[%(P)d];
  __nram__ float xf[%(P)d];
  __memcpy(mb, m, %(N)d, GDRAM2NRAM);
  __memcpy(xf, x, %(N)d * 4, GDRAM2NRAM);
  __bang_uchar2float(mf, mb, %(P)d);
  __bang_mul(xf, xf, mf, %(P)d);
  __memcpy(y, xf, %(N)d * 4, NRAM2GDRAM);
  __bang_gt_scalar(xf, xf, 0.0f, %(P)d);
  __bang_float2uchar(mb, xf, %(P)d);
  __memcpy(z, mb, %(N)d, NRAM2GDRAM);
}
"""


@pytest.mark.parametrize("n", [1, 7, 64, 100, 1000])
def test_uchar_roundtrip(n):
    p = -(-n // 64) * 64            # n % 64 == 0: the uint8 side is not whole 128-byte units when p % 128
    rng = np.random.default_rng(n)
    m = rng.integers(0, 2, n).astype(np.uint8)
    x = rand(rng, n)
    program = parse_program(ROUNDTRIP % dict(N=n, P=p))
    args = dict(m=m, x=x, y=rand(rng, n), z=rng.integers(2, 200, n).astype(np.uint8))
    res = simulate(program, "k", args, 1)
    np.testing.assert_array_equal(res.outputs["y"], x * m)
    np.testing.assert_array_equal(res.outputs["z"], ((x * m) > 0).astype(np.uint8))
    timing = simulate(program, "k", {k: ShapeOnly(v.shape, v.dtype) for k, v in args.items()}, 1, values=False)
    assert timing.cycles == res.cycles


SATURATE = """
__mlu_global__ void k(float* x, uint8_t* z) {
  __nram__ float xf[32];
  __nram__ uint8_t zb[128];
  __memcpy(xf, x, 128, GDRAM2NRAM);
  __bang_float2uchar(zb, xf, 32);
  __memcpy(z, zb, 32, NRAM2GDRAM);
}
"""


def test_float2uchar_truncates_and_saturates():
    x = np.array([-3.5, 0.7, 1.9, 255.9, 300.0, np.nan] + [2.0] * 26, np.float32)
    z = np.full(32, 9, np.uint8)
    out = simulate(parse_program(SATURATE), "k", dict(x=x, z=z), 1).outputs["z"]
    np.testing.assert_array_equal(out[:6], [0, 0, 1, 255, 255, 0])


@pytest.mark.parametrize("decl,n,needle", [
    ("__nram__ uint8_t mb[64];", 48, "not a multiple of the 128-byte vector unit"),   # float side 192 bytes
    ("__nram__ uint8_t mb[32];", 64, "out of bounds"),                                  # uint8 side outside
])
def test_uchar_rules(decl, n, needle):
    text = f"""
__mlu_global__ void k(float* x) {{
  {decl}
  __nram__ float xf[64];
  __bang_uchar2float(xf, mb, {n});  // expected-error {{{{{needle}}}}}
}}
"""
    expect_error(text, "k", dict(x=rand(np.random.default_rng(0), 64)), 1)


CAST = """
__mlu_global__ void k(float* x, float* y) {
  __nram__ float a[32];
  __memcpy(a, x, 128, GDRAM2NRAM);
  float s = (float)(a[0]);
  half h = (half)(a[1] * 2.0f);
  int i = (int)(a[2]) + !(a[4] > 100.0f);
  __bang_mul_scalar(a, a, s + (float)(h) + (float)(i), 32);
  __memcpy(y, a, 128, NRAM2GDRAM);
}
"""


def test_cast_of_unknown_in_timing_only_mode():
    x = rand(np.random.default_rng(3), 32, low=1.0, high=3.0)
    args = dict(x=x, y=rand(np.random.default_rng(4), 32))
    program = parse_program(CAST)
    full = simulate(program, "k", args, 1)
    want = np.float32(x[0]) + np.float32(np.float16(x[1] * 2)) + np.float32(int(x[2]) + 1)
    np.testing.assert_allclose(full.outputs["y"], x * want, rtol=1e-6)
    timing = simulate(program, "k", {k: ShapeOnly(v.shape, v.dtype) for k, v in args.items()}, 1, values=False)
    assert timing.cycles == full.cycles


def test_cast_of_unknown_still_cannot_decide():
    text = CAST.replace("  __bang_mul_scalar", "  if ((float)(a[3]) > 0) { s = 1; }  // expected-error "
                                               "{{timing-only simulation}}\n  __bang_mul_scalar")
    args = dict(x=ShapeOnly(32, np.float32), y=ShapeOnly(32, np.float32))
    expect_error(text, "k", args, 1, values=False)
