"""One-dimensional functions on the MLU (passes/schedule_mlu/split_flat.py): vectors viewed as [R, C] rows, so
element-wise statements and whole-vector reductions get vector kernels instead of scalar ones -- hand-written
cases, the cases left alone, and seeded random vector programs (f32/f16/bf16, sizes 1 / primes / tails) against
the evaluator."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gir.parser import parse_text
from gir.passes.middle import run_default
from gir.passes.schedule_mlu.schedule import specialize
from gir.passes.schedule_mlu.split_flat import _columns, split_flat
from gir.printer import format_func
from gir.shapes import func_info

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "differential"))
from diffrun import check_text  # noqa: E402

EXP = "func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = exp(x[i]) * 2.0\n}\n"
NORM = "func f(x: f32[N], w: f32[N]) -> (y: f32[N]) {\n  s[] = sum(x[i] * x[i])\n  y[i] = x[i] * w[i] / sqrt(s[] + 1e-06)\n}\n"


def _compiled(text: str, sizes: dict):
    low, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
    scalar = [r.message for r in ctx.remarks if "scalar MLU kernel" in r.message]
    return low.funcs[0], scalar


def test_columns():
    assert _columns(1 << 20) == 4096 and _columns(1_000_000) == 4000 and _columns(97) == 97
    assert _columns(64) == 32 and _columns(3 * 7) == 21 and _columns(2 * 524287) == 2 * 524287   # (one row)
    assert _columns(3 * 4099) == 4099 * 3 and _columns(33 * 17) == 187


def test_vectors_are_viewed_as_rows():
    f = specialize(parse_text(NORM).funcs[0], {"N": 1 << 20})
    g = split_flat(f, func_info(f).types)
    assert [p.type.shape for p in g.params + g.results] == [(256, 4096)] * 3
    text = format_func(g)
    assert "x: f32[1048576] as [256, 4096]" in text and "s[] = sum(x[i, i_c] * x[i, i_c])" in text


@pytest.mark.parametrize("text", [EXP, NORM])
def test_one_vector_kernel_per_statement_or_better(text):
    low, scalar = _compiled(text, {"N": 1 << 16})
    assert scalar == [] and 1 <= len(low.kernels) <= 3
    for n in (64, 97, 1000, 1031, 4099):
        assert check_text(text, {"N": n}, seed=n, targets=("mlu-sim",)) == {}


@pytest.mark.parametrize("text", [
    "func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] * i\n}\n",                      # an index as a value
    "func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[N - 1 - i] + 1.0\n}\n",             # a reversal
    "func f(x: f32[N], b: f32[K]) -> (y: f32[N]) {\n  y[i] = x[i] + b[0]\n}\n",        # two lengths
])
def test_left_alone(text):
    f = specialize(parse_text(text).funcs[0], {"N": 100, "K": 3})
    assert split_flat(f, func_info(f).types) is f
    assert check_text(text, {"N": 100, "K": 3}, seed=4, targets=("mlu-sim",)) == {}


def _vector_program(rng) -> str:
    dt = str(rng.choice(["f32", "f16", "bf16"]))
    unary = ["exp({})", "abs({})", "({}) * 0.5", "sigmoid({})", "max({}, 0.0)", "tanh({})"]
    red = str(rng.choice(["sum", "max", "min", "mean"]))
    lines = [f"  s[] = {red}(x[i] * w[i])"]
    expr = str(rng.choice(unary)).format("x[i]")
    kind = int(rng.integers(3))
    if kind == 0:
        lines.append(f"  y[i] = {expr} + w[i]")
    elif kind == 1:
        lines.append(f"  y[i] = {expr} - s[]")
    else:
        lines.append(f"  t[i] = {expr} * w[i]")
        lines.append("  u[] = sum(t[i])")
        lines.append("  y[i] = t[i] / (abs(u[]) + 1.0) + s[]")
    return f"func v(x: {dt}[N], w: {dt}[N]) -> (y: {dt}[N]) {{\n" + "\n".join(lines) + "\n}\n"


def test_random_vector_programs():
    rng = np.random.default_rng(1129)
    for n in range(24):
        text = _vector_program(rng)
        size = int(rng.choice([64, 67, 128, 997, 1000, 2048, 4096 + 32, 12289]))
        assert check_text(text, {"N": size}, seed=n, targets=("mlu-sim",)) == {}, (text, size)
        if n % 4 == 0:
            assert _compiled(text, {"N": size})[1] == [], text


def test_rows_no_recipe_takes_fall_back_to_the_vector():
    """A prime length is one row; a reduction over a row too long for NRAM has no recipe, and the vectors are
    scheduled as they are (it was refused: 'no tile fits NRAM', a review's finding)."""
    text = "func f(x: f32[N]) -> (s: f32[]) {\n  s[] = sum(x[i])\n}\n"
    assert check_text(text, {"N": 131071}, seed=1, targets=("mlu-sim",)) == {}
    text = "func f(x: f16[N]) -> (s: f16[], y: f16[N]) {\n  s[] = max(x[i])\n  y[i] = x[i] * 2.0\n}\n"
    assert check_text(text, {"N": 131071}, seed=2, targets=("mlu-sim",)) == {}
