"""Every generated CUDA kernel compiles with NVRTC, the compiler cupy runs for `gir run --target cuda` (nvcc
accepted kernels NVRTC refused on a real H200: `__builtin_huge_valf`, a conversion to f16 inside an f32 kernel
without cuda_fp16.h). No GPU needed: libnvrtc through ctypes (codegen_nvrtc.py). Every kernel is compiled
on its own, as cupy compiles it (one source holding several kernels would share their #include lines)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codegen_nvrtc import available, compile_errors
from gir.codegen import emit_module
from gir.parser import parse_text
from gir.verifier import verify_module
from test_codegen_compile import own_kernels, sample_kernels

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "differential"))
import diffprog  # noqa: E402
import scanprog  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="libnvrtc or the CUDA headers not found "
                                                        "(pip install nvidia-cuda-nvrtc; a CUDA toolkit)")


def _errors(kernels) -> dict[str, str]:
    """{kernel name: NVRTC's errors} of the kernels that do not compile (identical sources compiled once)."""
    seen: dict[str, str] = {}
    out = {}
    for ks in kernels:
        if ks.source not in seen:
            seen[ks.source] = compile_errors(ks.source, f"{ks.name}.cu")
        if seen[ks.source]:
            out[ks.name] = seen[ks.source]
    return out


def test_own_kernels_and_samples_nvrtc():
    assert _errors(own_kernels("cuda") + sample_kernels("cuda")) == {}


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
    assert _errors(kernels) == {}
