"""Every generated CUDA kernel compiles with NVRTC, the compiler cupy runs for `gir run --target cuda` (nvcc
accepted kernels NVRTC refused on a real H200: `__builtin_huge_valf`, a conversion to f16 inside an f32 kernel
without cuda_fp16.h). No GPU needed: libnvrtc through ctypes (codegen_nvrtc.py). Each test compiles all its
kernels as one source."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codegen_nvrtc import available, compile_errors
from gir.codegen import combined_source, emit_module
from gir.parser import parse_text
from gir.verifier import verify_module
from test_codegen_compile import own_kernels, sample_kernels

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "differential"))
import diffprog  # noqa: E402
import scanprog  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="libnvrtc or the CUDA headers not found "
                                                        "(pip install nvidia-cuda-nvrtc; a CUDA toolkit)")


def test_own_kernels_and_samples_nvrtc():
    kernels = own_kernels("cuda") + sample_kernels("cuda")
    assert compile_errors(combined_source(kernels), "samples.cu") == ""


@pytest.mark.parametrize("make, seeds", [(diffprog.program, range(0, 80)), (scanprog.program, range(0, 40))],
                         ids=["random", "scans"])
def test_random_programs_nvrtc(make, seeds):
    """Seeded random programs (element-wise chains with casts to f16/bf16 inside f32 expressions, broadcasts,
    reductions, scans), scheduled at their sizes."""
    from gir.passes.schedule import lower_module

    kernels = []
    for seed in seeds:
        text, sizes = make(seed)
        module = parse_text(text, f"<random {seed}>")
        verify_module(module)
        kernels += emit_module(lower_module(module, "cuda", {"sizes": sizes}), "cuda", sizes)
    assert compile_errors(combined_source(kernels), "random.cu") == ""
