"""HIP spellings for the C-style printer (compiled by hipcc for AMD GPUs: wavefront 64, no `_sync`
shuffles and no lane masks; bf16 is ROCm's `hip_bfloat16`)."""
from __future__ import annotations

from gir.codegen.cstyle import CStylePrinter


class HipPrinter(CStylePrinter):
    name = "hip"
    warp_size = 64
    extension = ".hip"
    dtypes = {"f32": "float", "f64": "double", "f16": "__half", "bf16": "hip_bfloat16", "i32": "int", "i64": "long long",
              "bool": "bool"}
    spell = {
        "include": "#include <hip/hip_runtime.h>",
        "include_f16": "#include <hip/hip_fp16.h>",
        "include_bf16": "#include <hip/hip_bfloat16.h>",
        "kernel": 'extern "C" __global__ void __launch_bounds__({threads}) {name}({params})',
        "shared": "__shared__",
        "thread_idx": "threadIdx.{}",
        "block_idx": "blockIdx.{}",
        "barrier_block": "__syncthreads()",
        "barrier_warp": "__builtin_amdgcn_wave_barrier()",
        "shfl_xor": "__shfl_xor({0}, {1}, {2})",
        "h2f": "__half2float({})",
        "f2h": "__float2half({})",
        "bf2f": "static_cast<float>({})",
        "f2bf": "hip_bfloat16({})",
        "recip": "(1.0f / ({}))",
    }
