"""Programs and the numeric check shared by the API tests."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from gir.evaluate import evaluate
from gir.verdict import compare

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SOFTMAX = SAMPLES / "softmax.gir"

TWO = """func two(x: f32[M, N], b: f32[N]) -> (y: f32[M, N], s: f32[M]) {
  y[i, j] = x[i, j] + b[j]
  s[i] = sum(y[i, j])
}
"""


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def normal(shape, seed: int = 0, dtype=np.float32) -> np.ndarray:
    return rng(seed).standard_normal(shape).astype(dtype)


def assert_matches(kernel, inputs: dict, got) -> None:
    """`got` (one array or a tuple in result order) against the float64 reference evaluator, norm-wise with
    the per-dtype tolerance of gir run (gir.verdict)."""
    got = got if isinstance(got, tuple) else (got,)
    want = evaluate(kernel.func, inputs, compute_dtype=np.float64)
    assert len(got) == len(kernel.func.results)
    for p, g in zip(kernel.func.results, got):
        assert np.asarray(g).dtype == p.type.dtype.numpy, p.name
        v = compare(np.asarray(g), want[p.name], p.type.dtype)
        assert v.passed, f"{p.name}: {v.error} > {v.tolerance} {v.reason}"
