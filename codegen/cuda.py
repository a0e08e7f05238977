"""CUDA spellings for the C-style printer (compiled by nvcc or NVRTC)."""
from __future__ import annotations

from gir.codegen.cstyle import CStylePrinter


class CudaPrinter(CStylePrinter):
    name = "cuda"
    warp_size = 32
    extension = ".cu"
    dtypes = {"f32": "float", "f64": "double", "f16": "__half", "bf16": "__nv_bfloat16", "i32": "int", "i64": "long long",
              "bool": "bool"}
    spell = {
        "include": "",
        "include_f16": "#include <cuda_fp16.h>",
        "include_bf16": "#include <cuda_bf16.h>",
        "kernel": 'extern "C" __global__ void __launch_bounds__({threads}, 1) {name}({params})',
        "shared": "__shared__",
        "thread_idx": "threadIdx.{}",
        "block_idx": "blockIdx.{}",
        "barrier_block": "__syncthreads()",
        "barrier_warp": "__syncwarp()",
        "shfl_xor": "__shfl_xor_sync({mask}, {0}, {1}, {2})",
        "h2f": "__half2float({})",
        "f2h": "__float2half({})",
        "bf2f": "__bfloat162float({})",
        "f2bf": "__float2bfloat16({})",
        "recip": "__frcp_rn({})",
    }
