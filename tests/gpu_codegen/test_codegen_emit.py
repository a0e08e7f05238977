"""What matters in the generated CUDA/HIP text, the launch metadata, and errors for unsupported kernels."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gir.codegen import combined_source, emit_module
from gir.codegen.launch import eval_size_expr
from gir.errors import GirError
from gir.parser import parse_file, parse_text

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
KERNELS = sorted((HERE / "kernels").glob("*.gir")) + [ROOT / "samples/explicit/softmax_rows.gir"]


def emit(path, target="cuda", **kw):
    return emit_module(parse_file(path), target, **kw)


def test_float4_and_masked_fast_path():
    (ks,) = emit(HERE / "kernels/vadd_masked.gir")
    src = ks.source
    assert src.count("*reinterpret_cast<const float4*>(&a[") == 1
    assert "*reinterpret_cast<float4*>(&c[" in src
    # fast path: whole vector in bounds and aligned, else a scalar masked loop with `other`
    assert "blk * 512 + t * 4 + 3 < N" in src and "& 15) == 0" in src
    assert "ra[3] = 0.0f;" in src
    assert ks.meta["grid"] == ["cdiv(N, 512)", "1", "1"] and ks.meta["block"] == [128, 1, 1]
    assert 'extern "C" __global__ void __launch_bounds__(128, 1) vadd(' in src
    assert "const float* __restrict__ a" in src and "float* __restrict__ c" in src


def test_shared_transpose_padded_and_2d_launch():
    (ks,) = emit(HERE / "kernels/transpose_smem.gir")
    src = ks.source
    assert "__shared__ float tile[1056] __attribute__((aligned(16)));" in src  # 32 x 33
    assert "__syncthreads();" in src
    assert "int bj = (int)(blockIdx.x);" in src and "int bi = (int)(blockIdx.y);" in src
    assert "int tx = (int)(threadIdx.x);" in src and "int ty = (int)(threadIdx.y);" in src
    assert ks.meta["block"] == [32, 8, 1]
    assert ks.meta["shared_bytes"]["static"] == 32 * 33 * 4
    grid = [eval_size_expr(g, {"M": 100, "N": 33}) for g in ks.meta["grid"]]
    assert grid == [2, 4, 1]


def test_f16_shuffles_cuda_vs_hip():
    (cu,) = emit(HERE / "kernels/rowsum_f16.gir", "cuda")
    (hip,) = emit(HERE / "kernels/rowsum_f16.gir", "hip")
    assert "#include <cuda_fp16.h>" in cu.source and "#include <hip/hip_fp16.h>" in hip.source
    assert "__shfl_xor_sync(0xffffffffu, gir_a1, 16, 32)" in cu.source
    assert "__shfl_xor(gir_a1, 16, 32)" in hip.source and "_sync" not in hip.source
    assert "*reinterpret_cast<const uint4*>(&x[" in cu.source  # 8 halves = one 16-byte move
    assert "__half2float(xr[7])" in cu.source and "__float2half(0.0f)" in cu.source
    assert cu.meta["block"] == [32, 1, 1]


def test_softmax_rows_registers_and_warps():
    (ks,) = emit(ROOT / "samples/explicit/softmax_rows.gir")
    src = ks.source
    assert "float xr[8]" in src and "#pragma unroll" in src
    assert "int w = (int)(threadIdx.x / 32);" in src and "int l = (int)(threadIdx.x % 32);" in src
    assert src.count("__syncthreads();") == 3 and "gir_max(" in src and "expf(" in src
    # element-wise in-place compute needs no staging temps
    assert "xr[0] = expf(xr[0] - m[0]);" in src


def test_metadata_json_round_trip():
    for path in KERNELS:
        for ks in emit(path):
            meta = json.loads(ks.to_json())
            assert meta == ks.meta
            kinds = [a["kind"] for a in meta["args"]]
            assert kinds == sorted(kinds, key=lambda k: k != "tensor")  # tensors first, then sizes
            assert all(a["dtype"] in ("f32", "f64", "f16", "bf16", "i32", "i64", "bool") for a in meta["args"])


def test_index_type_auto_and_forced():
    path = HERE / "kernels/vadd_masked.gir"
    (small,) = emit(path, sizes={"N": 1000})
    (big,) = emit(path, sizes={"N": 2**31})
    (forced,) = emit(path, options={"index_type": "int64"})
    assert small.meta["index_type"] == "int32" and "int N)" in small.source
    assert big.meta["index_type"] == "int64" and "long long N)" in big.source
    assert forced.meta["args"][-1]["dtype"] == "i64"


def test_eval_size_expr():
    sizes = {"M": 7, "N": 1000}
    assert eval_size_expr("cdiv(N, 256) * M - 1", sizes) == 27
    assert eval_size_expr("max(N // 3, M % 4)", sizes) == 333
    with pytest.raises(GirError, match="size 'K'"):
        eval_size_expr("K + 1", sizes)
    with pytest.raises(GirError):
        eval_size_expr("__import__('os')", sizes)


def test_combined_source_has_each_kernel_once():
    kernels = [ks for p in KERNELS for ks in emit(p)]
    text = combined_source(kernels)
    assert text.count("gir_floordiv(A a") == 1
    for ks in kernels:
        assert text.count(f" {ks.name}(") == 1


BAD = {
    "operator layer": ("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}\n", "operator layer"),
    "sync in narrower scope": ("""func f(x: f32[N]) -> (y: f32[N]) {
  kernel k {
    parallel b in 0..N @block {
      parallel t in 0..64 @thread {
        alloc r: f32[1] @reg
        load r[0:1] <- x[b:b + 1]
      }
      parallel u in 0..32 @thread {
        sync @block
      }
    }
  }
}
""", "deadlock"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_unsupported_kernels_are_diagnosed(name):
    text, message = BAD[name]
    with pytest.raises(GirError, match=message):
        emit_module(parse_text(text), "cuda")


def test_simulator_agrees_with_numpy_on_test_kernels():
    """The explicit GIR we compile is itself right (the simulator is its executable meaning)."""
    from gir.targets.sim import run_func

    rng = np.random.default_rng(0)
    for n in (1, 511, 1300):
        a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out = run_func(parse_file(HERE / "kernels/vadd_masked.gir").funcs[0], {"a": a, "b": b}).outputs["c"]
        np.testing.assert_allclose(out, a + b, rtol=1e-6)
    x = rng.standard_normal((5, 37)).astype(np.float32)
    out = run_func(parse_file(HERE / "kernels/transpose_smem.gir").funcs[0], {"x": x}).outputs["y"]
    np.testing.assert_array_equal(out, x.T)
    h = rng.standard_normal((3, 1000)).astype(np.float16)
    out = run_func(parse_file(HERE / "kernels/rowsum_f16.gir").funcs[0], {"x": h}).outputs["y"]
    np.testing.assert_allclose(out, h.astype(np.float64).sum(1), rtol=1e-4, atol=1e-3)
