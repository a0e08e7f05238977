"""A scan whose result nobody reads (a dead statement) still compiles: dead-stores keeps its store, since the scan
recipe stores every statement it runs (it failed with an internal KeyError on sim, alone or next to a sibling)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "differential"))
from diffrun import check_text  # noqa: E402


@pytest.mark.parametrize("text", [
    "func f(x: f32[A, C], y: f32[A, C]) -> (t2: f32[A, C]) {\n"
    "  t1[i, k] = cummax(x[i, k], i)\n  t2[i, k] = cumsum(y[i, k], i)\n}\n",
    "func f(x: f32[A, C], y: f32[A]) -> (t2: f32[A]) {\n"
    "  t1[i, k] = cummax(x[i, k], k, reverse=1)\n  t2[i] = cumsum(y[i], i)\n}\n",
])
@pytest.mark.parametrize("sizes", [{"A": 2, "C": 8}, {"A": 37, "C": 1}])
def test_dead_scans_compile_and_run(text, sizes):
    assert check_text(text, sizes, seed=5) == {}
