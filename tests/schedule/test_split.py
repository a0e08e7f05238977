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
    # without size hints (4096 per symbol): row_sum has rows enough for the chip (one kernel); mse_loss's single
    # (scalar) row of 4096 x 4096 is split over its outer dim (it was one block: estimated 150x the roofline)
    g = plan_module(mod, "cuda", {"sizes": {}})[0].groups[0]
    assert len(g.kernels) == (1 if name == "row_sum" else 2)
    assert name == "row_sum" or (g.config.outer and g.config.split == 264)
    many = plan_module(mod, "cuda", {"sizes": {"M": 4096, "N": 1_000_000}})[0].groups[0].config.split
    assert many == (0 if name == "row_sum" else 264)  # mse_loss has a single (scalar) row whatever M is


FULL3 = """func full3(x: f32[A, B, C]) -> (s: f32[], m: f32[]) {
  s[] = sum(x[a, b, c])
  m[] = max(x[a, b, c])
}
"""


@pytest.mark.parametrize("sizes", [{"M": 300, "N": 1001}, {"M": 265, "N": 257}, {"M": 2039, "N": 33}])
def test_whole_matrix_statistic_split_over_its_outer_dim(sizes):
    """A statistic of a whole tensor with short rows (mse_loss: C = (M, N), N < 64K): the blocks share the
    outer dim M (block s takes rows s, s + 264, ...), each walking whole rows; the final kernel combines the
    264 partials. One block did it all before: mse_loss at 2048 x 2048 was estimated at 1063.7 us, now 15.3
    us (the roofline: 7 us)."""
    low = _run("mse_loss", sizes, sizes, seed=sizes["N"])
    assert len(low.kernels) == 2
    g = plan_module(parse_file("samples/mse_loss.gir"), "cuda", {"sizes": sizes})[0].groups[0]
    assert g.config.outer and g.config.split == min(264, sizes["M"])
    assert g.estimate["seconds"] < 5 * (2 * sizes["M"] * sizes["N"] * 4 / 4.8e12) + 20e-6, g.estimate


def test_three_axis_statistics_split_over_the_outer_dim():
    from gir.parser import parse_text
    func = parse_text(FULL3).funcs[0]
    sizes = {"A": 37, "B": 41, "C": 67}
    low = lower_func(func, "sim", {"sizes": sizes})
    assert len(low.kernels) == 2
    inputs = random_inputs(func, sizes, np.random.default_rng(3))
    got = run_func(low, inputs, sizes, check_races=False).outputs
    for k, want in evaluate(func, inputs, sizes).items():
        w = np.asarray(want, dtype=np.float64)
        assert np.max(np.abs(got[k] - w)) <= 1e-5 * max(np.max(np.abs(w)), 1.0), k


def test_outer_split_cuda_text_runs_on_the_cpu_emulator():
    """The emitted CUDA of both kernels (partials over rows s, s + 264, ...; the final combine) under the CPU
    emulator of the CUDA text, both thread orders."""
    from gir.targets.cuda_emu import available, run_func as emu
    if not available():
        pytest.skip("no C compiler for the CUDA emulator")
    func = parse_file("samples/mse_loss.gir").funcs[0]
    sizes = {"M": 300, "N": 1001}
    low = lower_func(func, "cuda", {"sizes": sizes})
    assert len(low.kernels) == 2
    inputs = random_inputs(func, sizes, np.random.default_rng(11))
    want = float(evaluate(func, inputs, sizes)["loss"])
    for order in (0, 1):
        got = float(np.asarray(emu(low, {k: v.copy() for k, v in inputs.items()}, sizes, order=order)
                               .outputs["loss"]))
        assert abs(got - want) <= 1e-5 * abs(want), (order, got, want)
