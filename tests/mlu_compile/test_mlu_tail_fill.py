"""Row reductions over padded rows (codegen/mlu/vecops.py `_fill_tail`, layout.tail_start): the pads get the
reduction's identity in place, one select per row over the units that hold them, where that is cheaper than a fill
and a select of the whole tile (long rows); short rows in tall tiles keep the whole-tile mask. Values match the
evaluator either way, whatever earlier ops left in the pads."""
import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func

# whatever earlier ops leave in the pads (exp of a previous tile's pads), the max/min/sum must not see it
TEXT = """func f(x: {t}[M, N]) -> (a: f32[M], b: f32[M], c: f32[M], y: {t}[M, N]) {{
  a[i] = max(x[i, j])
  e[i, j] = exp((x[i, j] - a[i]) * 3.0)
  b[i] = sum(e[i, j])
  c[i] = min(e[i, j])
  y[i, j] = e[i, j] / b[i]
}}
"""
TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


def _source(f, sizes):
    return "".join(k.source for k in emit_func(schedule_mlu(f, sizes)))


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("m,n", [(1, 1), (5, 31), (37, 33), (64, 1025), (3, 4095), (130, 100)])
def test_padded_row_reductions_match_evaluator(dt, m, n):
    f = parse_text(TEXT.format(t=dt)).funcs[0]
    sizes = {"M": m, "N": n}
    x = random_inputs(f, sizes, np.random.default_rng(m * n))
    got = run_func(f, x, sizes).outputs
    want = evaluate(f, x, sizes)
    for k, w in want.items():
        w = np.asarray(w, np.float64)
        err = np.linalg.norm(np.asarray(got[k], np.float64) - w) / max(np.linalg.norm(w), 1e-30)
        assert err <= TOL[dt], (k, err)


def test_long_rows_fill_the_pads_in_place():
    f = parse_text(TEXT.format(t="f32")).funcs[0]
    src = _source(f, {"M": 4096, "N": 1025})
    assert "tailfill_max_64" in src and "tailfill_sum_64" in src and "tailfill_min_64" in src
    assert "colmask_" not in src and "scratch1_" not in src   # no whole-tile fill and select


def test_short_rows_in_tall_tiles_keep_the_whole_tile_mask():
    f = parse_text(TEXT.format(t="f32")).funcs[0]
    src = _source(f, {"M": 4096, "N": 100})
    assert "colmask_" in src and "tailfill_" not in src


def test_choice_is_the_cheaper_one():
    # 8 rows of 1025 (pitch 1088): 8 selects of 2 units beat a fill and a select of 272 units each
    assert L.tail_start(8, 1088, 1025, 8 * 1088, "f32", True) == 1024
    # 64 rows of 100 (pitch 128): 64 selects of 2 units cost more than 2 ops of 256 units
    assert L.tail_start(64, 128, 100, 64 * 128, "f32", True) is None
    # a region short of its buffer's columns: the columns past it are data
    assert L.tail_start(8, 1088, 1025, 8 * 1088, "f32", False) is None
    assert L.tail_start(8, 1088, 1088, 8 * 1088, "f32", True) is None   # no pads
