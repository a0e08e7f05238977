"""Lowered kernels run on the SIMT simulator and match the reference evaluator; traffic stays near compulsory."""
from __future__ import annotations

import glob
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from gir.passes.schedule import lower_func
from gir.targets.sim import run_func
from gir.views import complete_sizes, to_outer, to_view, user_sizes

_spec = importlib.util.spec_from_file_location("gir_sample_refs", Path(__file__).resolve().parents[1] / "sample_refs.py")
sample_refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample_refs)

SAMPLES = sorted(glob.glob("samples/*.gir"))


def _sizes(func, n):
    """The last size symbol gets n (the row / reduced extent), the others small odd extents."""
    syms = user_sizes(func)  # the sizes a binding gives (a reshape view's derived sizes are computed)
    out = {s: (3 if len(syms) > 2 else 5) for s in syms}
    if syms:
        square = any(list(p.type.shape).count(syms[-1]) > 1 for p in func.params)
        out[syms[-1]] = min(n, 130) if square else n  # keep [B, H, S, S] small
    return out


def _check(func, sizes, target="sim", warp=32, seed=0):
    rng = np.random.default_rng(seed)
    inputs = random_inputs(func, sizes, rng)
    ref = evaluate(func, inputs, sizes)
    sizes = complete_sizes(func, dict(sizes))
    low = lower_func(func, target, {"sizes": sizes})  # explicit kernels see a reshape view's shape only
    run = run_func(low, to_view(func, inputs, sizes), sizes, warp_size=warp)
    outputs = to_outer(func, run.outputs, sizes)
    for name, want in ref.items():
        got = outputs[name]
        assert got.shape == want.shape and got.dtype == want.dtype, name
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want, err_msg=name)
            continue
        w, g = want.astype(np.float64), got.astype(np.float64)
        tol = 1e-5 if want.dtype == np.float32 else 1e-2
        scale = max(np.max(np.abs(w)), 1e-30) if w.size else 1.0
        err = np.max(np.abs(g - w)) / scale if w.size else 0.0
        assert err < tol, f"{func.name}.{name}: relative error {err:.2e} at sizes {sizes}"
    return run


@pytest.mark.parametrize("n", [1, 7, 1000, 1025])
@pytest.mark.parametrize("path", SAMPLES)
def test_sample_matches_evaluator(path, n):
    func = parse_file(path).funcs[0]
    sizes = _sizes(func, n)
    sizes = sample_refs.with_relations(func.name, sizes)
    _check(func, sizes)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "cross_entropy", "col_sum", "transpose2d", "group_norm"])
def test_hip_wavefront_64(name):
    func = parse_file(f"samples/{name}.gir").funcs[0]
    _check(func, _sizes(func, 130), target="hip", warp=64, seed=1)


@pytest.mark.parametrize("name", ["softmax", "rmsnorm", "row_sum"])
def test_long_rows_and_tails(name):
    func = parse_file(f"samples/{name}.gir").funcs[0]
    _check(func, {"M": 2, "N": 4097}, seed=2)
    # hints that differ from the run sizes still give correct kernels (size guards)
    rng = np.random.default_rng(3)
    sizes = {"M": 3, "N": 5000}
    inputs = random_inputs(func, sizes, rng)
    low = lower_func(func, "sim", {"sizes": {"M": 4096, "N": 1024}})
    got = run_func(low, inputs, sizes).outputs
    for k, v in evaluate(func, inputs, sizes).items():
        np.testing.assert_allclose(got[k], v, rtol=1e-4, atol=1e-5)


def _traffic_ratio(name, M, N):
    func = parse_file(f"samples/{name}.gir").funcs[0]
    sizes = {"M": M, "N": N}
    inputs = random_inputs(func, sizes, np.random.default_rng(4))
    low = lower_func(func, "sim", {"sizes": sizes})
    run = run_func(low, inputs, sizes, check_races=False)
    compulsory = sum(a.nbytes for a in inputs.values())
    compulsory += sum(int(np.prod([sizes.get(d, d) if isinstance(d, str) else d for d in r.type.shape]))
                      * r.type.dtype.nbytes for r in func.results)
    return run.stats.global_bytes / compulsory


def test_softmax_traffic_is_compulsory_small():
    assert _traffic_ratio("softmax", 256, 2048) <= 1.05


@pytest.mark.slow
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layernorm", "rmsnorm", "add_layernorm"])
def test_traffic_at_4096(name):
    assert _traffic_ratio(name, 4096, 4096) <= 1.05
