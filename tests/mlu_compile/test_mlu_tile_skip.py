"""The tile planner does not build plans whose tiles a larger tile's NRAM says cannot fit
(passes/schedule_mlu/tiles_kernel.py `build`, compile time): the plan it picks must be the one it picks when it
builds every candidate. Seeded programs over lane counts just above multiples of 64 (a tile of 65 to 73 lanes
takes 128 lanes of room, a review found the rule skipping fitting 64-lane plans when it scaled by lanes, not by
the padded row) and over the samples' shapes."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gir.parser import parse_file, parse_text
from gir.passes.schedule_mlu import tiles_kernel as K


def _picks(monkeypatch, f, sizes) -> list:
    """The plans `build` returns while scheduling `f` (one per tile recipe call)."""
    from gir.passes.schedule_mlu import schedule_mlu
    got, orig = [], K.build

    def build(*a, **kw):
        items, plan = orig(*a, **kw)
        got.append(plan)
        return items, plan
    monkeypatch.setattr(K, "build", build)
    schedule_mlu(f, sizes)
    monkeypatch.setattr(K, "build", orig)
    return got


def _same_with_every_plan_built(monkeypatch, f, sizes):
    skipped = _picks(monkeypatch, f, sizes)
    monkeypatch.setattr(K, "NRAM_SLACK", math.inf)   # (the area rule off; a tile larger in both dims still skipped)
    every = _picks(monkeypatch, f, sizes)
    assert skipped == every


CHAIN = """func f(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) {
  y[i, j] = tanh(exp(x[i, j] + b[j]) * 0.5) * x[i, j] + abs(x[i, j] - b[j])
}
"""


@pytest.mark.parametrize("seed", range(8))
def test_the_pick_is_the_one_with_every_plan_built(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([65, 67, 69, 73, 129, 131, 193, 257]))
    sizes = {"M": int(rng.integers(2000, 9000)), "N": n}
    _same_with_every_plan_built(monkeypatch, parse_text(CHAIN).funcs[0], sizes)


@pytest.mark.parametrize("name,sizes", [("activations", {"M": 897, "N": 67}), ("activations", {"M": 1287, "N": 65}),
                                        ("bias_gelu_tanh", {"M": 4747, "N": 65}),
                                        ("elementwise_chain", {"M": 4095, "N": 4095})])
def test_samples_pick_as_with_every_plan_built(monkeypatch, name, sizes):
    _same_with_every_plan_built(monkeypatch, parse_file(f"samples/{name}.gir").funcs[0], sizes)
