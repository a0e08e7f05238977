"""Value numbering of row-model ops (passes/schedule_mlu/valnum.py): a repeated subexpression is computed once per
tile, results stay bit-identical to computing every copy, and function results are never merged away."""
from __future__ import annotations

import numpy as np
import pytest

import gir.passes.schedule_mlu.lower_rows as lower_rows_mod
from gir.codegen.mlu.emit import emit_func
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.rowmodel import analyze_rows
from gir.passes.schedule_mlu.schedule import specialize
from gir.passes.schedule_mlu.valnum import number_values
from gir.targets.mlu.run import run_func

TWO = """
func two(x: f32[M, N], g: f32[N]) -> (y: f32[M, N], s: f32[M], s2: f32[M]) {
  a[i, j] = exp(abs(x[i, j]) + 1.0) * g[j]
  b[i, j] = log(abs(x[i, j]) + 1.0) * g[j]
  y[i, j] = a[i, j] - b[i, j] + abs(x[i, j])
  s[i] = max(x[i, j])
  s2[i] = max(x[i, j]) + 1.0
}
"""


def _model(func, sizes):
    return analyze_rows(specialize(func, sizes), {})


def _source(func, sizes) -> str:
    return "".join(k.source for k in emit_func(schedule_mlu(func, sizes)))


def test_elementwise_chain_computes_abs_once():
    f = parse_file("samples/elementwise_chain.gir").funcs[0]
    sizes = {"M": 64, "N": 96}
    assert [op.fn for op in _model(f, sizes).ops].count("abs") == 3          # the source writes it three times
    assert _source(f, sizes).count("__bang_active_abs(") == 1


def test_chains_of_repeats_and_results():
    f = parse_text(TWO).funcs[0]
    model = _model(f, {"M": 16, "N": 32})
    out = number_values(model)
    fns = [op.fn for op in out.ops]
    assert [op.fn for op in model.ops].count("abs") == 3 and fns.count("abs") == 1
    # abs(x) + 1.0 is repeated too once its operand is renumbered; the g[j] products differ
    assert [op.fn for op in model.ops].count("add") - fns.count("add") == 1
    assert fns.count("mul") == 2
    # s2 reads the result s instead of reducing again; s itself stays computed into its own tile
    assert fns.count("rmax") == 1
    assert any(op.dst.name == "s" and op.fn == "rmax" for op in out.ops)
    assert not set(out.temps) - {op.dst.name for op in out.ops}   # dropped temporaries are gone
    assert number_values(out) is out                              # nothing left to merge


def test_results_are_never_merged():
    f = parse_text("func r(x: f32[M, N]) -> (p: f32[M, N], q: f32[M, N]) {\n"
                   "  p[i, j] = abs(x[i, j])\n  q[i, j] = abs(x[i, j])\n}\n").funcs[0]
    model = _model(f, {"M": 8, "N": 8})
    assert number_values(model) is model


@pytest.mark.parametrize("src", ["samples/elementwise_chain.gir", "samples/row_max.gir", "samples/mse_loss.gir", TWO])
def test_bit_identical_to_every_copy_computed(src, monkeypatch):
    f = parse_file(src).funcs[0] if src.endswith(".gir") else parse_text(src).funcs[0]
    sizes = {s: v for s, v in zip(f.size_symbols(), (37, 200))}
    x = random_inputs(f, sizes, np.random.default_rng(0))
    merged = run_func(f, x, sizes).outputs
    ref = evaluate(f, x, sizes)
    monkeypatch.setattr(lower_rows_mod, "number_values", lambda m: m)
    plain = run_func(f, x, sizes).outputs
    for k, want in ref.items():
        assert np.array_equal(merged[k], plain[k], equal_nan=True), k
        scale = np.max(np.abs(want)) + 1e-30
        assert np.max(np.abs(merged[k].astype(np.float64) - want)) / scale < 1e-5, k
