"""Each vector built-in and scalar construct against numpy, on one task with 256-element operands."""
from __future__ import annotations

import math
import zlib

import ml_dtypes
import numpy as np
import pytest

_erf = np.vectorize(math.erf)

from mlu_testutil import rand
from gir.targets.mlu import parse_program, simulate

HARNESS = """
const int N = 256;
__mlu_global__ void k(float* a, float* b, float* out) {
  __nram__ float va[N];
  __nram__ float vb[N];
  __nram__ float vo[N];
  __nram__ half h[N];
  __nram__ bfloat16_t bh[N];
  __nram__ int iv[N];
  __wram__ float w[N];
  __memcpy(va, a, N * 4, GDRAM2NRAM);
  __memcpy(vb, b, N * 4, GDRAM2NRAM);
  __memcpy(vo, out, N * 4, GDRAM2NRAM);
  %s
  __memcpy(out, vo, N * 4, NRAM2GDRAM);
}
"""

# a: random signs, |a| in [0.5, 2]; b: positive in [0.5, 2].
CASES = {
    "sub": ("__bang_sub(vo, va, vb, N);", lambda a, b: a - b, None),
    "mul": ("__bang_mul(vo, va, vb, N);", lambda a, b: a * b, None),
    "div": ("__bang_div(vo, va, vb, N);", lambda a, b: a / b, None),
    "maximum": ("__bang_maximum(vo, va, vb, N);", np.maximum, None),
    "minimum": ("__bang_minimum(vo, va, vb, N);", np.minimum, None),
    "pow": ("__bang_pow(vo, vb, va, N);", lambda a, b: b ** a, None),
    "add_scalar": ("__bang_add_scalar(vo, va, 1.25, N);", lambda a, b: a + 1.25, None),
    "mul_scalar": ("__bang_mul_scalar(vo, va, -3, N);", lambda a, b: a * -3, None),
    "rsub_scalar": ("__bang_rsub_scalar(vo, va, 3.0f, N);", lambda a, b: 3 - a, None),
    "rdiv_scalar": ("__bang_rdiv_scalar(vo, vb, 2.0f, N);", lambda a, b: 2 / b, None),
    "cycle_mul": ("__bang_cycle_mul(vo, va, vb, N, 64);", lambda a, b: (a.reshape(-1, 64) * b[:64]).ravel(), None),
    "cycle_sub": ("__bang_cycle_sub(vo, va, vb + 32, N, 32);",
                  lambda a, b: (a.reshape(-1, 32) - b[32:64]).ravel(), None),
    "exp": ("__bang_active_exp(vo, va, N);", np.exp, None),
    "log": ("__bang_active_log(vo, vb, N);", lambda a, b: np.log(b), None),
    "sqrt": ("__bang_active_sqrt(vo, vb, N);", lambda a, b: np.sqrt(b), None),
    "rsqrt": ("__bang_active_rsqrt(vo, vb, N);", lambda a, b: 1 / np.sqrt(b), None),
    "recip": ("__bang_active_recip(vo, va, N);", lambda a, b: 1 / a, None),
    "tanh": ("__bang_active_tanh(vo, va, N);", np.tanh, None),
    "sigmoid": ("__bang_active_sigmoid(vo, va, N);", lambda a, b: 1 / (1 + np.exp(-a)), None),
    "gelu": ("__bang_active_gelu(vo, va, N);", lambda a, b: 0.5 * a * (1 + _erf(a / math.sqrt(2))), None),
    "abs": ("__bang_active_abs(vo, va, N);", np.abs, None),
    "relu": ("__bang_active_relu(vo, va, N);", lambda a, b: np.maximum(a, 0), None),
    "ge_select": ("__bang_ge(vo, va, vb, N); __bang_select(vo, vo, va, vb, N);", np.maximum, None),
    "lt_scalar": ("__bang_lt_scalar(vo, va, 0, N);", lambda a, b: (a < 0).astype(float), None),
    "write_value": ("__bang_write_value(vo + 32, 64, -7.5);", lambda a, b: np.full(64, -7.5), slice(32, 96)),
    "reduce_sum": ("__bang_reduce_sum(vo, va, N);", lambda a, b: a.sum(keepdims=True), slice(0, 1)),
    "reduce_max": ("__bang_reduce_max(vo, va, N);", lambda a, b: a.max(keepdims=True), slice(0, 1)),
    "reduce_min_rows": ("__bang_reduce_min_rows(vo, va, 8, 32);", lambda a, b: a.reshape(8, 32).min(1),
                        slice(0, 8)),
    "reduce_sum_cols": ("__bang_reduce_sum_cols(vo, va, 8, 32);", lambda a, b: a.reshape(8, 32).sum(0),
                        slice(0, 32)),
    "transpose": ("__bang_transpose(vo, va, 8, 32);", lambda a, b: a.reshape(8, 32).T.ravel(), None),
    "half": ("__bang_float2half(h, va, N); __bang_half2float(vo, h, N);",
             lambda a, b: a.astype(np.float16), None),
    "bfloat16": ("__bang_float2bfloat16(bh, va, N); __bang_bfloat162float(vo, bh, N);",
                 lambda a, b: a.astype(ml_dtypes.bfloat16), None),
    "int32": ("__bang_mul_scalar(vo, va, 10, N); __bang_float2int32(iv, vo, N); __bang_int322float(vo, iv, N);",
              lambda a, b: np.trunc(a.astype(np.float32) * np.float32(10)), None),
    "matmul": ("__memcpy(w, vb, N * 4, NRAM2WRAM); __bang_matmul(vo, va, w, 8, 32, 8);",
               lambda a, b: (a.reshape(8, 32) @ b.reshape(32, 8)).ravel(), slice(0, 64)),
    "scalar_elements": ("for (int i = 0; i < 8; i++) { vo[i] = va[i] * 2.0f + vb[i]; }",
                        lambda a, b: a[:8] * 2 + b[:8], slice(0, 8)),
    "scalar_expr": ("int q = 7; float f = (float)(q / 2) + (q > 3 ? 0.5 : 0.25) - (-q % 4); "
                    "if (q == 1) { f = 0; } else if (q < 9 && !(q == 8)) { f = f * 2; } else { return; } vo[0] = f;",
                    lambda a, b: np.array([(3 + 0.5 + 3) * 2]), slice(0, 1)),
    "nram2nram_strided": ("__memcpy(vo, va + 1, 8, NRAM2NRAM, 16, 4, 5);",
                          lambda a, b: np.stack([a[1 + i:3 + i] for i in range(6)]), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_numpy(name):
    stmt, reference, part = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    a = rand(rng, 256, low=-2.0, high=2.0)
    b = rand(rng, 256, low=0.5, high=2.0)
    out = rand(rng, 256)
    result = simulate(parse_program(HARNESS % stmt, filename=f"{name}.mlu"), "k", dict(a=a, b=b, out=out), 1)
    got = result.outputs["out"]
    expect = np.asarray(reference(a.astype(np.float64), b.astype(np.float64)), dtype=np.float64)
    if name == "nram2nram_strided":  # segments land 16 bytes apart
        want = out.astype(np.float64).copy()
        for i in range(6):
            want[4 * i:4 * i + 2] = expect[i]
        np.testing.assert_array_equal(got, want)
        return
    region = part if part is not None else slice(0, expect.size)
    atol = 2e-5 if name == "matmul" else 1e-6  # float32 accumulation of 32 products with cancellation
    np.testing.assert_allclose(got[region], expect.ravel(), rtol=2e-6, atol=atol)
    untouched = np.ones(256, bool)
    untouched[region] = False
    np.testing.assert_array_equal(got[untouched], out[untouched])
