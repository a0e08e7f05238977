"""Every generated kernel compiles: nvcc (sm_90, ptxas: no spills, no stack) and hipcc (gfx90a, no VGPR spills).
Each test compiles all its kernels in ONE compiler invocation."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gir.codegen import combined_source, emit_module
from codegen_nvcc import nvcc_available, ptxas_stats
from gir.cli.common import load_verified

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
OWN = sorted((HERE / "kernels").glob("*.gir")) + [ROOT / "samples/explicit/softmax_rows.gir"]
SAMPLES = sorted((ROOT / "samples").glob("*.gir"))

needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")
needs_hipcc = pytest.mark.skipif(shutil.which("hipcc") is None,
                                 reason="hipcc is not installed (apt-get install -y hipcc)")


def own_kernels(target):
    return [ks for p in OWN for ks in emit_module(load_verified(p), target)]


def sample_kernels(target):
    lower_module = pytest.importorskip("gir.passes.schedule").lower_module
    return [ks for p in SAMPLES for ks in emit_module(lower_module(load_verified(p), target=target), target)]


def check_ptxas(kernels):
    stats = ptxas_stats(kernels)
    assert set(stats) == {ks.name for ks in kernels}
    for name, st in stats.items():
        assert st["spill_stores"] == 0 and st["spill_loads"] == 0, (name, st)
        assert st["stack"] == 0, (name, st)  # register arrays stayed in registers
        assert 0 < st["registers"] <= 255, (name, st)
    return stats


@needs_nvcc
def test_own_kernels_nvcc_no_spills():
    stats = check_ptxas(own_kernels("cuda"))
    assert stats["vadd"]["registers"] <= 40


@needs_nvcc
@pytest.mark.slow
def test_all_samples_nvcc_no_spills():
    kernels = sample_kernels("cuda")
    assert len({p.stem for p in SAMPLES}) <= len(kernels)
    check_ptxas(kernels)


def _hip_check(kernels):
    from gir.targets.hip import compile_source

    res = compile_source(combined_source(kernels))
    assert set(res.kernels) == {ks.name for ks in kernels}
    for name, st in res.kernels.items():
        assert st["vgpr_spill"] == 0, (name, st)
    return res.kernels


@needs_hipcc
def test_own_kernels_hipcc():
    stats = _hip_check(own_kernels("hip"))
    assert all(st["scratch"] == 0 for name, st in stats.items() if name != "rowsum16"), stats


@needs_hipcc
@pytest.mark.slow
def test_all_samples_hipcc():
    _hip_check(sample_kernels("hip"))
