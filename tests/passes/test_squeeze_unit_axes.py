"""squeeze-unit-axes (passes/builtin/squeeze.py): axes of extent 1 indexed only with 0 leave the body (views on
parameters and results), so that ONNX's keepdims statistics fuse and the MLU recipes cover them -- hand-written
cases, the cases left alone, and seeded random keepdims programs on sim and mlu-sim against the evaluator."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gir import ir
from gir.parser import parse_text
from gir.passes.builtin.squeeze import squeeze_unit_axes
from gir.passes.middle import run_default
from gir.printer import format_func

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "differential"))
from diffrun import check_text  # noqa: E402

# ONNX LayerNormalization (axis=-1) on 4-D inputs, as gir import writes it
LAYERNORM = """func ln(X: f32[A, B, C, D], W: f32[D], Bias: f32[D]) -> (Y: f32[A, B, C, D], Mean: f32[A, B, C, 1], Inv: f32[A, B, C, 1]) {
  Mean[i, j, k, l] = mean(X[i, j, k, m])
  Yc[i, j, k, l] = X[i, j, k, l] - Mean[i, j, k, 0]
  Yv[i, j, k] = mean(Yc[i, j, k, l] * Yc[i, j, k, l])
  Inv[i, j, k, l] = rsqrt(Yv[i, j, k] + 1e-05)
  Y[i, j, k, l] = Yc[i, j, k, l] * Inv[i, j, k, 0] * W[l] + Bias[l]
}
"""
# ONNX Softmax of a batch of one
SOFTMAX = """func sm(x: f32[1, N]) -> (y: f32[1, N]) {
  m[] = max(x[0, i])
  e[i] = exp(x[0, i] - m[])
  s[] = sum(e[i])
  y[i, j] = e[j] / s[]
}
"""


def _squeezed(text: str) -> ir.Func:
    return squeeze_unit_axes(parse_text(text).funcs[0])


def _scalar_remarks(text: str, sizes: dict) -> list[str]:
    _, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
    return [r.message for r in ctx.remarks if "scalar MLU kernel" in r.message]


def test_keepdims_statistics_lose_their_unit_axis():
    f = _squeezed(LAYERNORM)
    text = format_func(f)
    assert "Mean: f32[A, B, C, 1] as [A, B, C]" in text and "Inv: f32[A, B, C, 1] as [A, B, C]" in text
    assert "Mean[i, j, k]" in text and ", 0]" not in text


def test_layernorm_keepdims_is_one_kernel_on_every_target():
    sizes = {"A": 2, "B": 3, "C": 7, "D": 129}
    for target in ("sim", "mlu-sim"):
        low, _ = run_default(parse_text(LAYERNORM), target, {"sizes": sizes})
        assert len(low.funcs[0].kernels) == 1, target   # (before: 3 groups on sim, scalar kernels on the MLU)
    assert _scalar_remarks(LAYERNORM, sizes) == []
    assert check_text(LAYERNORM, sizes, seed=3) == {}


def test_batch_of_one_softmax():
    text = format_func(_squeezed(SOFTMAX))
    assert "x: f32[1, N] as [N]" in text and "x[i]" in text and "y[j] = " in text
    for n in (1, 7, 1031):
        assert check_text(SOFTMAX, {"N": n}, seed=n) == {}


@pytest.mark.parametrize("text", [
    # a reduction over the unit axis: its index is a reduction variable
    "func f(x: f32[M, 1]) -> (s: f32[M]) {\n  s[i] = sum(x[i, r])\n}\n",
    # every axis has extent 1
    "func f(x: f32[1, 1], y: f32[M]) -> (z: f32[M]) {\n  z[i] = y[i] * x[0, 0]\n}\n",
    # already viewed
    "func f(x: f32[1, N] as [N]) -> (z: f32[N]) {\n  z[i] = x[i] * 2.0\n}\n",
    # a scan along the unit axis
    "func f(x: f32[M, 1]) -> (c: f32[M, 1]) {\n  c[i, j] = cumsum(x[i, j], j)\n}\n",
])
def test_left_alone(text):
    f = parse_text(text).funcs[0]
    assert squeeze_unit_axes(f) is f
    sizes = {n: 5 for n in f.size_symbols()}
    assert check_text(text, sizes, seed=1) == {}


def test_only_the_zero_indexed_tensor_is_squeezed():
    text = ("func f(x: f32[M, 1], w: f32[1, M]) -> (s: f32[M, 1], y: f32[M, 1]) {\n"
            "  s[i, j] = sum(x[i, r])\n"
            "  y[i, j] = x[i, 0] * w[j, i] - s[i, j]\n}\n")
    out = format_func(_squeezed(text))   # x is reduced over its unit axis: kept
    assert "x: f32[M, 1]," in out and "w: f32[1, M] as [M]" in out and "y: f32[M, 1] as [M]" in out
    assert "s[i] = sum(x[i, r])" in out and "y[i] = x[i, 0] * w[i] - s[i]" in out
    assert check_text(text, {"M": 13}, seed=2) == {}


def test_an_all_unit_intermediate_becomes_a_scalar():
    # (a review's case: m kept its axis, x lost the one that gave m's index its range, and nothing was squeezed)
    text = ("func f(x: f32[1, N], w: f32[N, 1]) -> (y: f32[1, N], s: f32[1, 1], z: f32[N, 1]) {\n"
            "  m[i] = max(x[i, r])\n"
            "  e[i, j] = exp(x[i, j] - m[0]) * w[j, 0]\n"
            "  s[a, b] = sum(e[a, r])\n"
            "  y[i, j] = e[0, j] / s[0, i]\n"
            "  z[j, i] = y[i, j] * 2.0\n}\n")
    out = format_func(_squeezed(text))
    assert "m[] = max(x[r])" in out and "s: f32[1, 1]," in out and "z: f32[N, 1] as [N]" in out
    for n in (1, 37):
        assert check_text(text, {"N": n}, seed=n) == {}


def _keepdims_program(rng) -> tuple[str, dict[str, int]]:
    """A statistic over random axes kept as unit axes (ONNX keepdims) and its broadcast use, on a tensor with
    random unit axes of its own; f32 or f16."""
    rank = int(rng.integers(2, 5))
    names, idx = "ABCD"[:rank], "ijkl"[:rank]
    unit = [bool(rng.random() < 0.3) for _ in range(rank)]
    if all(unit):
        unit[int(rng.integers(rank))] = False
    nonunit = [k for k in range(rank) if not unit[k]]
    red = set(int(k) for k in rng.choice(nonunit, size=int(rng.integers(1, len(nonunit) + 1)), replace=False))
    dt = str(rng.choice(["f32", "f16"]))
    op = str(rng.choice(["sum", "mean", "max", "min"]))
    dims = ["1" if unit[k] else names[k] for k in range(rank)]
    sdims = ["1" if unit[k] or k in red else names[k] for k in range(rank)]
    reads = ", ".join(f"r{k}" if k in red else idx[k] for k in range(rank))
    back = ", ".join("0" if k in red or (unit[k] and rng.random() < 0.6) else idx[k] for k in range(rank))
    last = rank - 1
    scale = f" * w[{idx[last]}]" if not unit[last] else ""
    wparam = f", w: {dt}[{dims[last]}]" if scale else ""
    text = (f"func k(x: {dt}[{', '.join(dims)}]{wparam}) -> (s: {dt}[{', '.join(sdims)}], "
            f"y: {dt}[{', '.join(dims)}]) {{\n"
            f"  s[{', '.join(idx)}] = {op}(x[{reads}])\n"
            f"  y[{', '.join(idx)}] = (x[{', '.join(idx)}] - s[{back}]){scale}\n}}\n")
    pick = [1, 2, 3, 5, 7, 13, 33, 64]
    sizes = {names[k]: int(rng.choice(pick)) for k in range(rank) if not unit[k]}
    while np.prod(list(sizes.values())) > 40000:
        big = max(sizes, key=sizes.get)
        sizes[big] = max(1, sizes[big] // 4)
    return text, sizes


def test_random_keepdims_programs_on_sim_and_mlu():
    rng = np.random.default_rng(20261129)
    squeezed = 0
    for n in range(30):
        text, sizes = _keepdims_program(rng)
        f = parse_text(text).funcs[0]
        squeezed += squeeze_unit_axes(f) is not f
        assert check_text(text, sizes, seed=n) == {}, text
    assert squeezed >= 25
