"""Multi-block rows: few, very long rows are split across blocks (partials kernel + final kernel)."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from gir.passes.schedule import lower_func, plan_module
from gir.targets.sim import run_func


def _run(name, sizes, hints, seed):
    func = parse_file(f"samples/{name}.gir").funcs[0]
    low = lower_func(func, "sim", {"sizes": hints})
    inputs = random_inputs(func, sizes, np.random.default_rng(seed))
    got = run_func(low, inputs, sizes, check_races=False).outputs
    for k, want in evaluate(func, inputs, sizes).items():
        w = want.astype(np.float64)
        err = np.max(np.abs(got[k] - w)) / max(np.max(np.abs(w)), 1e-30)
        assert err < 1e-5, f"{name}.{k}: relative error {err:.1e} at {sizes}"
    return low


@pytest.mark.parametrize("name", ["row_sum", "mse_loss"])
@pytest.mark.parametrize("n", [1_000_000, 1_000_003])
def test_one_long_row_split_matches_evaluator(name, n):
    sizes = {"M": 1, "N": n}
    low = _run(name, sizes, sizes, seed=n % 97)
    assert len(low.kernels) == 2
    parts = [a for a in low.body if isinstance(a, ir.Alloc) and a.level == ir.Level.global_]
    assert parts and all(a.type.shape[-1] == 264 for a in parts)


def test_split_with_several_rows_and_row_statistics():
    # three rows, four statistics (max, min, and both of range) combined from partials; tail rows
    low = _run("row_max", {"M": 3, "N": 70001}, {"M": 3, "N": 70001}, seed=5)
    assert len(low.kernels) == 2
    _run("row_mean", {"M": 2, "N": 66000}, {"M": 2, "N": 66000}, seed=6)
    # kernels planned for long rows stay correct for short ones
    _run("row_mean", {"M": 5, "N": 7}, {"M": 2, "N": 1 << 20}, seed=7)


@pytest.mark.parametrize("name", ["row_sum", "mse_loss"])
def test_plan_uses_two_kernels_only_with_long_row_hints(name):
    mod = parse_file(f"samples/{name}.gir")
    g = plan_module(mod, "cuda", {"sizes": {"M": 1, "N": 1_000_000}})[0].groups[0]
    assert g.strategy == "row-split" and len(g.kernels) == 2 and g.config.split == 264
    # without size hints (4096 per symbol) and with many rows: one kernel, as before
    assert len(plan_module(mod, "cuda", {"sizes": {}})[0].groups[0].kernels) == 1
    many = plan_module(mod, "cuda", {"sizes": {"M": 4096, "N": 1_000_000}})[0].groups[0].config.split
    assert many == (0 if name == "row_sum" else 264)  # mse_loss has a single (scalar) row whatever M is
