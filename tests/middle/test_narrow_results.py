"""A result stored in f16/bf16 and read by a later statement is read rounded to its type on every path
(passes/builtin/narrow.py): forwarded on chip, it was read as the unrounded f32 value on sim and mlu-sim."""
import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.builtin.narrow import round_read_results
from gir.passes.schedule import lower_func
from gir.targets.mlu.run import run_func as run_mlu
from gir.targets.sim import run_func as run_sim

TEXT = """func f(x: {t}[M, N], y: {t}[M, N]) -> (t0: {t}[M, N], t1: {t}[M, N], s: f32[M, N]) {{
  t0[i, j] = 0.5 * x[i, j] + y[i, j]
  t1[i, j] = 0.5 * x[i, j] + t0[i, j]
  s[i, j] = (f32(x[i, j]) - f32(t1[i, j])) * 1000.0
}}
"""


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_forwarded_narrow_result_is_rounded(dtype, target):
    f = parse_text(TEXT.format(t=dtype)).funcs[0]
    sizes = {"M": 3, "N": 130}
    inputs = random_inputs(f, sizes, np.random.default_rng(0))
    want = evaluate(f, inputs, compute_dtype=np.float64)
    if target == "sim":
        got = run_sim(lower_func(f, "sim", {"sizes": sizes}), inputs, sizes).outputs
    else:
        got = run_mlu(f, inputs, sizes).outputs
    for r in f.results:
        assert np.array_equal(np.asarray(got[r.name], np.float64), np.asarray(want[r.name], np.float64)), r.name


def test_only_results_read_later_are_rewritten():
    f = parse_text(TEXT.format(t="f16")).funcs[0]
    g = round_read_results(f)
    values = [s.value for s in g.body]
    assert values[0].fn == "f16" and values[1].fn == "f16" and values[2] == f.body[2].value


# a 16-bit reduction result read again: row, column, middle-axis and scalar statistics
REDUCED = {
    "row": "func f(x: f32[M, N]) -> (t: {t}[M], y: f32[M, N]) {{\n  t[i] = sum(x[i, j])\n"
           "  y[i, j] = x[i, j] - t[i]\n}}\n",
    "column": "func f(x: f32[M, N]) -> (t: {t}[N], y: f32[M, N]) {{\n  t[j] = sum(x[i, j])\n"
              "  y[i, j] = x[i, j] * 0.5 - t[j]\n}}\n",
    "middle": "func f(x: f32[A, M, N]) -> (t: {t}[A, N], y: f32[A, M, N]) {{\n  t[a, j] = max(x[a, i, j]) * 7.3\n"
              "  y[a, i, j] = x[a, i, j] - t[a, j]\n}}\n",
    "scalar": "func f(x: f32[M, N]) -> (t: {t}[], y: f32[M, N]) {{\n  t[] = mean(x[i, j]) * 1000.0\n"
              "  y[i, j] = x[i, j] - t[]\n}}\n",
}


@pytest.mark.parametrize("kind", sorted(REDUCED))
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_forwarded_narrow_reduction_result_is_rounded(kind, dtype, target):
    f = parse_text(REDUCED[kind].format(t=dtype)).funcs[0]
    sizes = {"A": 3, "M": 64, "N": 257}
    inputs = random_inputs(f, sizes, np.random.default_rng(1))
    want = evaluate(f, inputs, sizes, compute_dtype=np.float64)
    got = (run_sim(lower_func(f, "sim", {"sizes": sizes}), inputs, sizes) if target == "sim"
           else run_mlu(f, inputs, sizes)).outputs
    w = np.asarray(want["y"], np.float64)
    err = np.linalg.norm(np.asarray(got["y"], np.float64) - w) / np.linalg.norm(w)
    assert err < 2e-6, err   # y read from an unrounded t is off by the 16-bit rounding (1e-4 .. 4e-3)
    w = np.asarray(want["t"], np.float64)   # (a sum near 0 may round to a neighbouring value: f32 vs f64 sums)
    assert np.linalg.norm(np.asarray(got["t"], np.float64) - w) <= {"f16": 1e-3, "bf16": 8e-3}[dtype] * np.linalg.norm(w)


def test_rounded_column_statistic_keeps_its_schedule_on_the_mlu():
    # `c[j] = f16(sum(x[i, j]))` (written so, or by round_read_results for a result read again): the tile recipe's
    # rows split in parts combine partial sums and store them rounded, so the rounding is the store's (a scalar
    # kernel before, and 61.3 us instead of 22.8 us for a row and a column statistic read by y: model time)
    f = parse_text("func f(x: f32[M, N]) -> (t: f16[M], c: f16[N], y: f32[M, N]) {\n  t[i] = min(x[i, j])\n"
                   "  c[j] = f16(sum(x[i, j]))\n  y[i, j] = x[i, j] - t[i] + c[j]\n}\n").funcs[0]
    sizes = {"M": 2048, "N": 100}
    inputs = random_inputs(f, sizes, np.random.default_rng(2))
    res = run_mlu(f, inputs, sizes)
    assert not any("scalar" in r.message for r in res.remarks)
    assert run_mlu(f, None, sizes, values=False).stats["seconds"] < 30e-6
    want = evaluate(f, inputs, sizes, compute_dtype=np.float64)
    for k in ("t", "c", "y"):
        w = np.asarray(want[k], np.float64)
        assert np.linalg.norm(np.asarray(res.outputs[k], np.float64) - w) <= 2e-5 * np.linalg.norm(w), k
