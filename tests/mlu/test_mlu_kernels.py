"""Hand-written kernels run on the simulator, checked against numpy in float64."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlu_testutil import rand
from gir.targets.mlu import MluError, parse_program, simulate

VADD = """
const int T = 2048;
__mlu_global__ void vadd({t}* x, {t}* y, {t}* z, int n) {{
  __nram__ {t} a[T];
  __nram__ {t} b[T];
  int per = (n + taskDim - 1) / taskDim;
  int start = taskId * per;
  int end = min(n, start + per);
  for (int i = start; i < end; i += T) {{
    int cnt = min(T, end - i);
    int padded = (cnt + {lanes} - 1) / {lanes} * {lanes};   // whole 128-byte vector units
    __memcpy(a, x + i, cnt * {size}, GDRAM2NRAM);
    __memcpy(b, y + i, cnt * {size}, GDRAM2NRAM);
    __bang_add(a, a, b, padded);
    __memcpy(z + i, a, cnt * {size}, NRAM2GDRAM);
  }}
}}
"""

DTYPES = {"float": np.float32, "half": np.float16, "bfloat16_t": ml_dtypes.bfloat16}


def vadd_program(ctype: str):
    size = np.dtype(DTYPES[ctype]).itemsize
    return parse_program(VADD.format(t=ctype, size=size, lanes=128 // size), filename=f"vadd_{ctype}.mlu")


@settings(max_examples=12, deadline=None)
@given(n=st.one_of(st.just(1), st.integers(1, 9000)), task_dim=st.sampled_from([1, 3, 4, 8, 32]),
       ctype=st.sampled_from(list(DTYPES)), seed=st.integers(0, 2 ** 31))
def test_vector_add_matches_numpy(n, task_dim, ctype, seed):
    rng = np.random.default_rng(seed)
    dtype = DTYPES[ctype]
    x, y = rand(rng, n, dtype), rand(rng, n, dtype)
    z = rand(rng, n, dtype)
    result = simulate(vadd_program(ctype), "vadd", dict(x=x, y=y, z=z, n=n), task_dim)
    expect = (x.astype(np.float64) + y.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(result.outputs["z"], expect)  # one rounding, as numpy does
    np.testing.assert_array_equal(result.outputs["x"], x)
    assert result.bytes["gdram_read_bytes"] == 2 * n * x.itemsize
    assert result.bytes["gdram_write_bytes"] == n * x.itemsize


SOFTMAX_HEAD = """
const int NP = {NP};   // row length padded to whole 128-byte units
const int R = {R};     // rows per tile
__mlu_global__ void softmax(float* x, float* y, int M, int N) {{
  __nram__ float xin[2 * R * NP];
  __nram__ float xout[2 * R * NP];
  __nram__ float mx[R];
  __nram__ float sm[R];
  __bang_write_value(xin, 2 * R * NP, -INFINITY);  // padding columns stay -inf: exp() makes them 0
  __sync_compute();
  int per = (M + taskDim - 1) / taskDim;
  int r0 = min(M, taskId * per);
  int r1 = min(M, r0 + per);
  int ntiles = (r1 - r0 + R - 1) / R;
"""

SOFTMAX_COMPUTE = """
      int nr = min(R, r1 - r0 - t * R);
      float* xb = xin + (t % 2) * R * NP;
      float* ob = xout + (t % 2) * R * NP;
      __bang_reduce_max_rows(mx, xb, nr, NP);
      for (int r = 0; r < nr; r++) {{
        __bang_sub_scalar(ob + r * NP, xb + r * NP, mx[r], NP);
      }}
      __bang_active_exp(ob, ob, nr * NP);
      __bang_reduce_sum_rows(sm, ob, nr, NP);
      for (int r = 0; r < nr; r++) {{
        __bang_mul_scalar(ob + r * NP, ob + r * NP, 1.0f / sm[r], NP);
      }}
"""

# Three-stage ping-pong: iteration t loads tile t+1, computes tile t, stores tile t-1, then syncs all pipes.
SOFTMAX_PIPELINED = SOFTMAX_HEAD + """
  if (ntiles > 0) {{
    __memcpy_async(xin, x + r0 * N, N * 4, GDRAM2NRAM, NP * 4, N * 4, min(R, r1 - r0) - 1);
  }}
  __sync_io();
  for (int t = 0; t <= ntiles; t++) {{
    if (t + 1 < ntiles) {{
      int nl = min(R, r1 - r0 - (t + 1) * R);
      __memcpy_async(xin + ((t + 1) % 2) * R * NP, x + (r0 + (t + 1) * R) * N, N * 4, GDRAM2NRAM,
                     NP * 4, N * 4, nl - 1);
    }}
    if (t < ntiles) {{""" + SOFTMAX_COMPUTE + """    }}
    if (t >= 1) {{
      int ns = min(R, r1 - r0 - (t - 1) * R);
      __memcpy_async(y + (r0 + (t - 1) * R) * N, xout + ((t - 1) % 2) * R * NP, N * 4, NRAM2GDRAM,
                     N * 4, NP * 4, ns - 1);
    }}
    __sync_io_move_compute();
  }}
}}
"""

# The same work with blocking copies: load, compute, store, one tile after the other.
SOFTMAX_SERIAL = SOFTMAX_HEAD + """
  for (int t = 0; t < ntiles; t++) {{
    {{
      int nl = min(R, r1 - r0 - t * R);
      __memcpy(xin + (t % 2) * R * NP, x + (r0 + t * R) * N, N * 4, GDRAM2NRAM, NP * 4, N * 4, nl - 1);
    }}""" + SOFTMAX_COMPUTE + """
    __memcpy(y + (r0 + t * R) * N, ob, N * 4, NRAM2GDRAM, N * 4, NP * 4, nr - 1);
  }}
}}
"""


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run_softmax(template: str, M: int, N: int, R: int, task_dim: int, seed: int = 0):
    NP = (N + 31) // 32 * 32
    program = parse_program(template.format(NP=NP, R=R), filename="softmax.mlu")
    rng = np.random.default_rng(seed)
    x = rand(rng, (M, N), low=-4.0, high=4.0)
    result = simulate(program, "softmax", dict(x=x, y=rand(rng, (M, N)), M=M, N=N), task_dim)
    np.testing.assert_allclose(result.outputs["y"], softmax_ref(x), rtol=2e-5, atol=1e-7)
    return result


@pytest.mark.parametrize("M,N,R,task_dim", [(1, 1, 4, 1), (37, 1000, 4, 32), (50, 77, 8, 4), (9, 300, 2, 8)])
def test_softmax_pipelined_matches_numpy(M, N, R, task_dim):
    run_softmax(SOFTMAX_PIPELINED, M, N, R, task_dim, seed=M * N)


def test_softmax_serial_matches_numpy():
    run_softmax(SOFTMAX_SERIAL, 37, 1000, 4, 32)


def test_pipelining_hides_compute_behind_dma():
    pipelined = run_softmax(SOFTMAX_PIPELINED, 512, 1000, 4, 32)
    serial = run_softmax(SOFTMAX_SERIAL, 512, 1000, 4, 32)
    assert pipelined.cycles < 0.85 * serial.cycles
    # the same bytes move either way; only the overlap differs
    assert pipelined.bytes["gdram_traffic_bytes"] == serial.bytes["gdram_traffic_bytes"]
    assert pipelined.pipe_busy["compute"] == pytest.approx(serial.pipe_busy["compute"])


TRANSPOSE = """
const int T = 32;   // 32 floats = one 128-byte unit per tile row
__mlu_global__ void transpose(float* x, float* y, int M, int N) {
  __nram__ float a[T * T];
  __nram__ float b[T * T];
  int tiles_m = (M + T - 1) / T;
  int tiles_n = (N + T - 1) / T;
  for (int tile = taskId; tile < tiles_m * tiles_n; tile += taskDim) {
    int i0 = tile / tiles_n * T;
    int j0 = tile % tiles_n * T;
    int rows = min(T, M - i0);
    int cols = min(T, N - j0);
    // rows x cols tile of x into the top-left of a (row stride T), transpose all T x T, store cols x rows
    __memcpy(a, x + i0 * N + j0, cols * 4, GDRAM2NRAM, T * 4, N * 4, rows - 1);
    __bang_transpose(b, a, T, T);
    __memcpy(y + j0 * M + i0, b, rows * 4, NRAM2GDRAM, M * 4, T * 4, cols - 1);
  }
}
"""


@pytest.mark.parametrize("M,N,task_dim", [(100, 70, 8), (32, 32, 1), (1, 45, 4), (64, 33, 32)])
def test_transpose_matches_numpy(M, N, task_dim):
    rng = np.random.default_rng(M + N)
    x = rand(rng, (M, N))
    result = simulate(parse_program(TRANSPOSE), "transpose", dict(x=x, y=rand(rng, (N, M)), M=M, N=N), task_dim)
    np.testing.assert_array_equal(result.outputs["y"], x.T)


SHARED = """
const int N = 256;
__mlu_global__ void bias_add(float* x, float* bias, float* y) {
  __mlu_shared__ float sbias[N];
  __nram__ float b[N];
  __nram__ float v[N];
  if (coreId == 0) {
    __memcpy(sbias, bias + clusterId * N, N * 4, GDRAM2SRAM);   // one row of bias per cluster
  }
  __sync_cluster();
  __memcpy(b, sbias, N * 4, SRAM2NRAM);
  __memcpy(v, x + taskId * N, N * 4, GDRAM2NRAM);
  __bang_add(v, v, b, N);
  __memcpy(y + taskId * N, v, N * 4, NRAM2GDRAM);
}
"""


def test_shared_sram_with_cluster_barrier():
    rng = np.random.default_rng(7)
    x, bias = rand(rng, (8, 256)), rand(rng, (2, 256))
    result = simulate(parse_program(SHARED), "bias_add", dict(x=x, bias=bias, y=rand(rng, (8, 256))), "Union2")
    np.testing.assert_array_equal(result.outputs["y"], x + np.repeat(bias, 4, axis=0))
    assert result.bytes["sram_write_bytes"] == 2 * 256 * 4
    assert result.bytes["sram_read_bytes"] == 8 * 256 * 4


GATHER = """
__mlu_global__ void gather(float* x, float* y, int size, int ds0, int ss0, int n0, int ds1, int ss1, int n1) {
  __nram__ float buf[16384];
  __bang_write_value(buf, 16384, -1.0);
  __sync_compute();
  __memcpy_async(buf, x, size, GDRAM2NRAM, ds0, ss0, n0, ds1, ss1, n1);
  __sync_io();
  __memcpy(y, buf, 16384 * 4, NRAM2GDRAM);
}
"""


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 12).map(lambda k: 4 * k), n0=st.integers(0, 6), n1=st.integers(0, 4),
       gap0=st.integers(0, 5), gap1=st.integers(0, 3), src_gap0=st.integers(0, 7), src_gap1=st.integers(0, 9))
def test_strided_memcpy_matches_numpy(size, n0, n1, gap0, gap1, src_gap0, src_gap1):
    ds0 = size + 4 * gap0
    ds1 = ds0 * (n0 + 1) + 4 * gap1
    ss0 = size + 4 * src_gap0
    ss1 = ss0 * (n0 + 1) + 4 * src_gap1
    x = rand(np.random.default_rng(size * 7 + n0), 4096)
    args = dict(x=x, y=np.zeros(16384, np.float32), size=size, ds0=ds0, ss0=ss0, n0=n0, ds1=ds1, ss1=ss1, n1=n1)
    got = simulate(parse_program(GATHER), "gather", args, 1).outputs["y"]
    want = np.full(16384, -1.0, np.float32)
    w = size // 4
    for j in range(n1 + 1):
        for i in range(n0 + 1):
            d, s = (j * ds1 + i * ds0) // 4, (j * ss1 + i * ss0) // 4
            want[d:d + w] = x[s:s + w]
    np.testing.assert_array_equal(got, want)


GLOBAL_SUM = """
const int T = 1024;
__mlu_global__ void total(float* x, float* partial, float* out, int n) {
  __nram__ float a[T];
  __nram__ float s[32];
  int per = n / taskDim;
  __memcpy(a, x + taskId * per, per * 4, GDRAM2NRAM);
  __bang_reduce_sum(s, a, per);
  __memcpy(partial + taskId, s, 4, NRAM2GDRAM);   // 4-byte writes: read-modify-write in GDRAM
  __sync_all();
  if (taskId == 0) {
    __memcpy(a, partial, taskDim * 4, GDRAM2NRAM);
    __bang_write_value(s, 32, 0);
    __sync_compute();
    float acc = 0;
    for (int i = 0; i < taskDim; i++) { acc += a[i]; }
    s[0] = acc;
    __memcpy(out, s, 4, NRAM2GDRAM);
  }
}
"""


def test_sync_all_orders_tasks_across_clusters():
    n = 32 * 256
    x = rand(np.random.default_rng(5), n)
    args = dict(x=x, partial=np.zeros(32, np.float32), out=np.zeros(1, np.float32), n=n)
    result = simulate(parse_program(GLOBAL_SUM), "total", args, 32)
    assert result.outputs["out"][0] == pytest.approx(x.astype(np.float64).sum(), rel=1e-5)
    assert result.bytes["gdram_rmw_bytes"] == 32 * 64 + 64
    finish = [c.finish_cycles for c in result.per_core]
    assert max(finish) == result.cycles and finish[0] == result.cycles


def test_pipeline_without_its_sync_is_rejected_as_a_race():
    broken = SOFTMAX_PIPELINED.replace("    __sync_io_move_compute();\n", "")
    with pytest.raises(MluError) as info:
        run_softmax(broken, 37, 1000, 4, 4)
    err = info.value
    assert "race between pipes" in err.message and "insert __sync_io()" in err.message
    assert "__bang_reduce_max_rows" in err.message and "__memcpy_async(GDRAM2NRAM)" in err.message
