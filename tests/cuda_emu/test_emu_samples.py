"""Numerical validation of the generated CUDA itself: every samples/*.gir is lowered by the scheduler, emitted
as CUDA and run on the CPU emulator (targets/cuda_emu), then compared with gir.evaluate; the hand-written
explicit kernels are compared with numpy. Outputs start poisoned: every element must be written."""
from __future__ import annotations

import importlib.util
import zlib
from pathlib import Path

import numpy as np
import pytest

import gir
from gir.views import complete_sizes, to_outer
import gir.evaluate
from gir.passes.schedule import lower_module
from gir.targets.cuda_emu import available, run_func

pytestmark = pytest.mark.skipif(not available(), reason="g++ with C++20 and _Float16 not found")

ROOT = Path(__file__).resolve().parent.parent.parent
_spec = importlib.util.spec_from_file_location("gir_sample_refs", ROOT / "tests" / "sample_refs.py")
sample_refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample_refs)
SAMPLES = sorted(p.stem for p in (ROOT / "samples").glob("*.gir"))


def check_against_evaluate(name: str, explicit, sizes: dict, orders=(0, 1)) -> None:
    func = gir.parse_file(str(ROOT / "samples" / f"{name}.gir")).funcs[0]
    rng = np.random.default_rng(zlib.crc32(f"{name}:{sorted(sizes.items())}".encode()))
    sizes = complete_sizes(func, dict(sizes))  # a reshape view's derived sizes; kernels see the view's shape
    inputs = sample_refs.sample_inputs(name, func, sizes, rng)
    ref = gir.evaluate.evaluate(func, {k: v.copy() for k, v in inputs.items()}, sizes, compute_dtype=np.float64)
    for order in orders:
        res = run_func(explicit, {k: v.copy() for k, v in inputs.items()}, sizes, order=order)
        outputs = to_outer(func, res.outputs, sizes)
        for out_name, want in ref.items():
            got, want = outputs[out_name], np.asarray(want)
            where = f"{name}.{out_name} sizes={sizes} order={order}"
            assert res.unwritten[out_name] == 0, f"{where}: {res.unwritten[out_name]} elements never written"
            assert got.shape == want.shape, where
            if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
                assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), f"{where}: mismatch"
                continue
            g64, w64 = got.astype(np.float64), want.astype(np.float64)
            assert np.isfinite(g64).all(), f"{where}: non-finite values"
            tol = 1e-2 if got.dtype.itemsize == 2 else 1e-5
            err = np.linalg.norm(g64 - w64) / max(np.linalg.norm(w64), 1e-30)
            assert err < tol, f"{where}: relative error {err:.2e} >= {tol:.0e}"


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_all_sizes_one_schedule(name):
    """Scheduled for the first size binding of tests/sample_refs.py, then run at every binding (the scheduler
    promises kernels correct for all sizes; the source is compiled once unless the sizes change it)."""
    sizes_list = sample_refs.REFERENCES[name][1]
    module = gir.parse_file(str(ROOT / "samples" / f"{name}.gir"))
    explicit = lower_module(module, "cuda", {"sizes": sizes_list[0]}).funcs[0]
    for sizes in sizes_list:
        check_against_evaluate(name, explicit, sizes)


@pytest.mark.slow
@pytest.mark.parametrize("name,k", [(n, k) for n in SAMPLES for k in range(1, len(sample_refs.REFERENCES[n][1]))])
def test_sample_scheduled_per_sizes(name, k):
    """Scheduled with the size hints of each binding (other tile and block choices), random thread order too."""
    sizes = sample_refs.REFERENCES[name][1][k]
    module = gir.parse_file(str(ROOT / "samples" / f"{name}.gir"))
    explicit = lower_module(module, "cuda", {"sizes": sizes}).funcs[0]
    check_against_evaluate(name, explicit, sizes, orders=(0, 1, 7))


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


HAND = [  # (file, {size: value}, reference, tolerance)
    ("samples/explicit/softmax_rows.gir", {"M": 1}, lambda x: {"y": _softmax(x)}, 1e-5),
    ("samples/explicit/softmax_rows.gir", {"M": 3}, lambda x: {"y": _softmax(x)}, 1e-5),
    ("tests/gpu_codegen/kernels/rowsum_f16.gir", {"M": 3}, lambda x: {"y": x.astype(np.float64).sum(1)}, 1e-5),
    ("tests/gpu_codegen/kernels/transpose_smem.gir", {"M": 37, "N": 70}, lambda x: {"y": x.T}, 0.0),
    ("tests/gpu_codegen/kernels/transpose_smem.gir", {"M": 1, "N": 1}, lambda x: {"y": x.T}, 0.0),
    ("tests/gpu_codegen/kernels/vadd_masked.gir", {"N": 1}, lambda a, b: {"c": a + b}, 0.0),
    ("tests/gpu_codegen/kernels/vadd_masked.gir", {"N": 4099}, lambda a, b: {"c": a + b}, 0.0),
]


@pytest.mark.parametrize("path,sizes,ref,tol", HAND, ids=[f"{Path(h[0]).stem}-{h[1]}" for h in HAND])
@pytest.mark.parametrize("order", [0, 1, 3])
def test_hand_written_kernel(path, sizes, ref, tol, order):
    func = gir.parse_file(str(ROOT / path)).funcs[0]
    rng = np.random.default_rng(zlib.crc32(f"{path}{sorted(sizes.items())}{order}".encode()))
    inputs = {}
    for p in func.params:
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in p.type.shape)
        inputs[p.name] = rng.standard_normal(shape).astype(p.type.dtype.numpy)
    res = run_func(func, inputs, sizes, order=order)
    for out_name, want in ref(**inputs).items():
        assert res.unwritten[out_name] == 0
        got = res.outputs[out_name].astype(np.float64)
        assert got.shape == want.shape
        if tol == 0.0:  # data movement only: bit-exact
            np.testing.assert_array_equal(got, want)
        else:  # norm-wise against the reference's magnitude (a sum that nearly cancels is not judged alone)
            err = np.linalg.norm(got - want) / max(np.linalg.norm(want), np.finfo(np.float64).tiny)
            assert err <= tol, f"{out_name}: norm-wise relative error {err:.3e} > {tol:g}"


def test_persistent_schedule_from_large_size_hints():
    """Hints for a large problem give a persistent grid (2 x 132 blocks of 1024 threads) that loops over rows;
    run at a few rows, most blocks find no work and every row must still be written once."""
    module = gir.parse_file(str(ROOT / "samples" / "layernorm.gir"))
    explicit = lower_module(module, "cuda", {"sizes": {"M": 16384, "N": 8192}}).funcs[0]
    check_against_evaluate("layernorm", explicit, {"M": 5, "N": 8192}, orders=(1,))
