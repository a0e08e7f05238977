"""Constant subexpressions in the MLU row and tile models (passes/schedule_mlu/constfold.py): an operation whose
operands are all constants was refused ("a constant expression"), so the statement ran as a scalar kernel."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gir.parser import parse_text
from gir.passes.middle import run_default
from gir.passes.schedule_mlu.constfold import fold

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))
from diffrun import check_text  # noqa: E402


def test_fold_values():
    assert fold("add", [2.0, 3.3]) == float(np.float32(2.0) + np.float32(3.3))
    assert fold("neg", [1.25]) == -1.25 and fold("abs", [-3.3]) == float(np.float32(3.3)) and fold("lt", [1.0, 2.0]) == 1.0 and fold("ge", [1.0, 2.0]) == 0.0
    assert fold("r16", [3.3]) == float(np.float16(3.3)) and fold("select", [0.0, 1.0, 2.0]) == 2.0
    assert fold("sigmoid", [2.0]) == pytest.approx(1 / (1 + np.exp(-2.0)), rel=1e-7)
    assert fold("log", [-1.0]) is None and fold("div", [1.0, 0.0]) is None   # not finite: not folded
    assert fold("rsum", [1.0]) is None


@pytest.mark.parametrize("text,sizes", [
    ("func f(x: f32[A, B], w: bf16[]) -> (y: f32[A, B]) {\n  s[] = min(x[a, b] * (f16(x[a, b]) + neg(1.25)))\n"
     "  y[a, b] = (x[a, b] - s[]) * min(3.3, w[])\n}\n", {"A": 305, "B": 257}),
    ("func f(x: f32[A, B], w: f16[]) -> (y: f16[A, B]) {\n  s[] = min(x[a, b])\n"
     "  y[a, b] = (x[a, b] - s[]) * (2.0 + 3.3)\n}\n", {"A": 793, "B": 257}),
    ("func f(x: bf16[A, B], w: bf16[B]) -> (y: f16[A, B]) {\n  s[] = sum(x[a, b] - sigmoid(f16(2.0)))\n"
     "  y[a, b] = (x[a, b] - s[]) * w[b]\n}\n", {"A": 1, "B": 183}),
    ("func f(x: f32[A, B, C]) -> (y: f32[A, B, C]) {\n  m[a, b] = max(x[a, b, c] * exp(0.5 * 2.0))\n"
     "  y[a, b, c] = x[a, b, c] - m[a, b] + tanh(1.0 - 3.0)\n}\n", {"A": 7, "B": 33, "C": 130}),
    ("func f(x: f32[A]) -> (y: f32[A]) {\n  s[] = min(x[a])\n  y[a] = (x[a] - s[]) * abs(3.3)\n}\n", {"A": 185}),
])
def test_constant_subexpressions_are_vectorised(text, sizes):
    _, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
    assert not [r for r in ctx.remarks if "scalar MLU kernel" in r.message]
    assert check_text(text, sizes, seed=3, targets=("mlu-sim",)) == {}
