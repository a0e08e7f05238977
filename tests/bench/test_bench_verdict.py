"""`gir bench` judges results as `gir run` does (gir.verdict): NaN/inf compared exactly, a tolerance per result
type (integers exact), `error <= tolerance`, widened for ill-conditioned results; rel_err is the verdict's error."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gir import ir
from gir.cli import main
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.verdict import TOLERANCE
from gir.targets.bench.runners import check_outputs

pytest.importorskip("gir.passes.schedule")

LOG = "func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = log(x[i, j] - 1.0)\n}\n"
MIXED = ("func f(x: f16[N], n: i32[N]) -> (y: f32[N], m: i32[N]) {\n  y[i] = f32(x[i]) * 2.0\n"
         "  m[i] = n[i] + 1\n}\n")
MEAN = "func f(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = mean(x[i, j])\n}\n"


def _func(text):
    return parse_text(text, "t.gir").funcs[0]


def _bench(tmp_path, text, *args):
    src = tmp_path / "prog.gir"
    src.write_text(text)
    out = tmp_path / "out"
    code = main(["bench", str(src), "-q", "-o", str(out), *args])
    return code, json.loads((out / "results.json").read_text())["results"]


@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_nan_where_the_reference_has_nan_passes(tmp_path, capsys, target):
    """log(x - 1) of inputs in [0.5, 2): NaN in about half of the elements, in both the result and the
    reference; `gir run` passes it, and so must `gir bench` (it used to report rel_err nan, FAIL)."""
    code, rows = _bench(tmp_path, LOG, "--sizes", "M=4,N=8", "--target", target)
    assert code == 0 and rows[0]["status"] == "ok" and rows[0]["rel_err"] <= 1e-5 and rows[0]["tolerance"] == 1e-5
    assert main(["run", str(tmp_path / "prog.gir"), "--sizes", "M=4,N=8", "--target", target]) == 0
    capsys.readouterr()


def _mixed(rng):
    f = _func(MIXED)
    inputs = random_inputs(f, {"N": 16}, rng)
    return f, inputs, evaluate(f, inputs)


def test_nan_pattern_mismatch_fails_with_infinite_error():
    f, inputs, ref = _mixed(np.random.default_rng(0))
    got = dict(ref, y=ref["y"].copy())
    got["y"][3] = np.nan
    row = check_outputs(f, inputs, got)
    assert row["status"] == "FAIL" and row["rel_err"] == np.inf
    assert row["note"].startswith("y: NaN at 1 position where the reference has a number (first at [3])")


def test_tolerance_is_per_result_type_and_integers_are_exact():
    f, inputs, ref = _mixed(np.random.default_rng(1))
    assert check_outputs(f, inputs, ref) == {"status": "ok", "rel_err": 0.0, "tolerance": 1e-5}
    # f16 inputs no longer loosen an f32 result to 1e-2
    off = dict(ref, y=(ref["y"].astype(np.float64) * (1 + 1e-3)).astype(np.float32))
    row = check_outputs(f, inputs, off)
    assert row["status"] == "FAIL" and row["tolerance"] == TOLERANCE[f.results[0].type.dtype] == 1e-5
    assert "exceeds the f32 tolerance" in row["note"]
    wrong = dict(ref, m=ref["m"] + (np.arange(16) == 5))  # one integer off by one
    row = check_outputs(f, inputs, wrong)
    assert row["status"] == "FAIL" and row["tolerance"] == 0.0 and "m: 1 element differs" in row["note"]


def test_an_error_equal_to_the_tolerance_passes(monkeypatch):
    """The rule is `error <= tolerance` (it used to be `<`)."""
    f = _func("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}\n")
    inputs, outputs = {"x": np.ones(4, np.float32)}, {"y": np.full(4, 1 + 2.0 ** -17)}
    error = check_outputs(f, inputs, outputs)["rel_err"]
    assert error == 2.0 ** -17
    monkeypatch.setitem(TOLERANCE, ir.DType.f32, error)
    assert check_outputs(f, inputs, outputs) == {"status": "ok", "rel_err": error, "tolerance": error}


def test_ill_conditioned_result_widens_the_tolerance_and_says_so():
    f = _func(MEAN)
    x = np.random.default_rng(0).standard_normal((1, 1000)).astype(np.float32)
    x[0] -= np.float32(x[0].astype(np.float64).mean() - 6e-6)
    y = x.sum(1, dtype=np.float32) / np.float32(1000)  # f32 accumulation: far from 1e-5 relative
    row = check_outputs(f, {"x": x}, {"y": y})
    assert row["status"] == "ok" and row["rel_err"] > 1e-5 and row["tolerance"] > row["rel_err"]
    assert row["note"].startswith("y: tolerance widened from 1e-05: the result is ill-conditioned")
