"""The CUDA emulator itself (targets/cuda_emu) on small hand-written CUDA sources: barriers, shuffles
(PTX semantics), 16-bit rounding, shared-memory poisoning and the errors it must raise."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.errors import GirError
from gir.targets.cuda_emu import available
from gir.targets.cuda_emu.run import POISON, DeviceBuffer, compile_source, launch

pytestmark = pytest.mark.skipif(not available(), reason="g++ with C++20 and _Float16 not found")

F32 = ir.DType.f32


def buf(a: np.ndarray | None = None, shape=None, dtype=F32) -> DeviceBuffer:
    return DeviceBuffer(tuple(shape if a is None else a.shape), dtype, a)


BLOCK_REVERSE = r'''
extern "C" __global__ void __launch_bounds__(64, 1) rev(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float t[64] __attribute__((aligned(16)));
  int i = blockIdx.x * 64 + threadIdx.x;
  t[threadIdx.x] = i < n ? x[i] : 0.0f;
  SYNC;
  if (i < n) y[i] = t[63 - threadIdx.x];
}
'''


@pytest.mark.parametrize("order", [0, 1, 5])
def test_shared_memory_and_barrier(order):
    lib = compile_source(BLOCK_REVERSE.replace("SYNC", "__syncthreads()"), ["rev"])
    n = 100
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    xb, yb = buf(x), buf(shape=(n,))
    launch(lib, "rev", (2, 1, 1), (64, 1, 1), [xb, yb, np.int32(n)], order)
    want = np.empty(n, np.float32)
    for b in range(2):
        for t in range(64):
            if b * 64 + t < n:
                want[b * 64 + t] = x[b * 64 + 63 - t] if b * 64 + 63 - t < n else 0.0
    np.testing.assert_array_equal(yb.array, want)
    assert yb.unwritten() == 0 and yb.guards_intact()


def test_missing_barrier_is_exposed_by_the_thread_order():
    """Without the barrier, thread order 0 happens to work; reverse order reads unwritten (poisoned) shared memory."""
    lib = compile_source(BLOCK_REVERSE.replace("SYNC", "(void)0"), ["rev"])
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    yb = buf(shape=(64,))
    launch(lib, "rev", (1, 1, 1), (64, 1, 1), [buf(x), yb, np.int32(64)], order=1)
    assert np.isnan(yb.array).sum() == 32  # the second half of the threads ran first
    launch(lib, "rev", (1, 1, 1), (64, 1, 1), [buf(x), yb, np.int32(64)], order=0)
    assert np.isnan(yb.array).sum() == 32  # thread order: the first half reads before the second half writes


SHUFFLES = r'''
extern "C" __global__ void shf(const float* __restrict__ x, float* __restrict__ y, int mode, int b, int w) {
  float v = x[threadIdx.x];
  float r = mode == 0 ? __shfl_xor_sync(0xffffffffu, v, b, w) : mode == 1 ? __shfl_down_sync(0xffffffffu, v, b, w)
          : mode == 2 ? __shfl_up_sync(0xffffffffu, v, b, w) : __shfl_sync(0xffffffffu, v, b, w);
  y[threadIdx.x] = r;
}
'''


def _shfl_ref(x, mode, b, w):
    """CUDA's documented semantics per 32-lane warp."""
    out = np.empty_like(x)
    for t in range(len(x)):
        lane, base = t % 32, t - t % 32
        seg = lane - lane % w
        if mode == 0:
            j = lane ^ b
            j = j if j < seg + w else lane
        elif mode == 1:
            j = lane + b if lane % w + b < w else lane
        elif mode == 2:
            j = lane - b if lane % w - b >= 0 else lane
        else:
            j = seg + b % w
        out[t] = x[base + j]
    return out


@pytest.mark.parametrize("mode,b,w", [(0, 16, 32), (0, 1, 32), (0, 3, 8), (0, 4, 4), (1, 1, 32), (1, 5, 16),
                                      (2, 2, 32), (2, 7, 8), (3, 5, 32), (3, 13, 8)])
def test_shuffle_semantics(mode, b, w):
    lib = compile_source(SHUFFLES, ["shf"])
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    yb = buf(shape=(64,))
    launch(lib, "shf", (1, 1, 1), (64, 1, 1), [buf(x), yb, np.int32(mode), np.int32(b), np.int32(w)], order=2)
    np.testing.assert_array_equal(yb.array, _shfl_ref(x, mode, b, w))


def test_shuffle_from_a_missing_lane_is_an_error():
    lib = compile_source(SHUFFLES, ["shf"])
    x = np.ones(16, np.float32)
    with pytest.raises(GirError, match="does not exist"):
        launch(lib, "shf", (1, 1, 1), (16, 1, 1), [buf(x), buf(shape=(16,)), np.int32(0), np.int32(16), np.int32(32)])
    yb = buf(shape=(16,))  # offsets inside the 16 existing lanes are fine
    launch(lib, "shf", (1, 1, 1), (16, 1, 1), [buf(x), yb, np.int32(0), np.int32(8), np.int32(32)])
    assert yb.unwritten() == 0


ERRORS = r'''
extern "C" __global__ void divergent(float* __restrict__ y) {
  if (threadIdx.x < 5) __syncthreads();
  y[threadIdx.x] = 1.0f;
}
extern "C" __global__ void split(float* __restrict__ y) {
  if (threadIdx.x < 5) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  y[threadIdx.x] = 1.0f;
}
extern "C" __global__ void stuck(float* __restrict__ y) {
  if (threadIdx.x < 16) { y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1, 32); }
  else { __syncthreads(); }
}
extern "C" __global__ void oob(float* __restrict__ y) { y[threadIdx.x + 1] = 1.0f; }
'''


@pytest.mark.parametrize("kernel,message", [("divergent", "not reached by"), ("split", "different __syncthreads"),
                                            ("stuck", "deadlock")])
def test_barrier_errors(kernel, message):
    lib = compile_source(ERRORS, ["divergent", "split", "stuck", "oob"])
    with pytest.raises(GirError, match=message):
        launch(lib, kernel, (1, 1, 1), (64, 1, 1), [buf(shape=(64,))])


def test_out_of_bounds_write_hits_the_guard():
    lib = compile_source(ERRORS, ["divergent", "split", "stuck", "oob"])
    yb = buf(shape=(7,))
    launch(lib, "oob", (1, 1, 1), (7, 1, 1), [yb])
    assert not yb.guards_intact() and yb.unwritten() == 1


def test_block_larger_than_1024_is_refused():
    lib = compile_source(ERRORS, ["oob"])
    with pytest.raises(GirError, match="1..1024"):
        launch(lib, "oob", (1, 1, 1), (1025, 1, 1), [buf(shape=(2000,))])


CONVERT = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void conv(const float* __restrict__ x, __half* __restrict__ h, __nv_bfloat16* __restrict__ b,
                                float* __restrict__ back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = __float2half(x[i]);
    b[i] = __float2bfloat16(x[i]);
    back[i] = __half2float(h[i]) + __bfloat162float(b[i]);
  }
}
extern "C" __global__ void vec(const float* __restrict__ x, float* __restrict__ y, const __half* __restrict__ hx,
                               __half* __restrict__ hy) {
  int t = threadIdx.x;
  float4 v = *reinterpret_cast<const float4*>(&x[4 * t]);
  *reinterpret_cast<float4*>(&y[4 * t]) = make_float4(v.w, v.z, v.y, rsqrtf(v.x) * __frcp_rn(2.0f));
  *reinterpret_cast<uint4*>(&hy[8 * t]) = *reinterpret_cast<const uint4*>(&hx[8 * t]);
}
'''


def test_16bit_conversions_round_to_nearest_even():
    import ml_dtypes

    lib = compile_source(CONVERT, ["conv", "vec"])
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-6, 6, 500),
                        [0.0, -0.0, np.inf, -np.inf, 65520.0, 1e-8, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
                         1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8]]).astype(np.float32)
    n = len(x)
    hb, bb = buf(shape=(n,), dtype=ir.DType.f16), buf(shape=(n,), dtype=ir.DType.bf16)
    back = buf(shape=(n,))
    launch(lib, "conv", ((n + 127) // 128, 1, 1), (128, 1, 1), [buf(x), hb, bb, back, np.int32(n)], order=3)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(hb.array, x.astype(np.float16))
    np.testing.assert_array_equal(bb.array.view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))
    np.testing.assert_array_equal(back.array, hb.array.astype(np.float32) + bb.array.astype(np.float32))


def test_vector_types():
    lib = compile_source(CONVERT, ["conv", "vec"])
    rng = np.random.default_rng(0)
    x = (rng.random(4 * 33) + 0.5).astype(np.float32)
    hx = rng.standard_normal(8 * 33).astype(np.float16)
    yb, hyb = buf(shape=(4 * 33,)), buf(shape=(8 * 33,), dtype=ir.DType.f16)
    launch(lib, "vec", (1, 1, 1), (33, 1, 1), [buf(x), yb, buf(hx, dtype=ir.DType.f16), hyb])
    q = x.reshape(33, 4)
    want = np.stack([q[:, 3], q[:, 2], q[:, 1], (1 / np.sqrt(q[:, 0])) * np.float32(0.5)], 1).ravel()
    np.testing.assert_allclose(yb.array, want, rtol=1e-6)
    np.testing.assert_array_equal(hyb.array, hx)


def test_poison_marks_unwritten_elements():
    b = buf(shape=(3, 5))
    assert b.unwritten() == 15 and np.isnan(b.array).all()
    b.array[1, 2] = 7.0
    assert b.unwritten() == 14
    i = buf(shape=(4,), dtype=ir.DType.i32)
    assert i.unwritten() == 4 and (i.array == POISON["i32"]).all()


def test_emitted_transpose_without_its_barrier_fails():
    """The real emitted kernel: with its __syncthreads deleted, some thread order reads unwritten shared memory."""
    from pathlib import Path

    from gir import codegen
    from gir.parser import parse_file

    root = Path(__file__).resolve().parent.parent.parent
    func = parse_file(root / "tests/gpu_codegen/kernels/transpose_smem.gir").funcs[0]
    (ks,) = codegen.emit_func(func, "cuda", {"M": 32, "N": 32})
    assert ks.source.count("__syncthreads();") == 1
    x = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32)
    for source, broken in ((ks.source, False), (ks.source.replace("__syncthreads();", ""), True)):
        lib = compile_source(source, [ks.name])
        bad = 0
        for order in (0, 1, 2):
            yb = buf(shape=(32, 32))
            launch(lib, ks.name, (1, 1, 1), tuple(ks.meta["block"]), [buf(x), yb, np.int32(32), np.int32(32)], order)
            bad += int(np.isnan(yb.array).sum())
            if not broken:
                np.testing.assert_array_equal(yb.array, x.T)
        assert (bad > 0) == broken
