"""Per-row inputs of the tile recipe's stream kernel (passes/schedule_mlu/tiles_stream.py): a unit's rows of an
input along T only (layernorm_bwd's mu and rstd) are loaded once per unit and copied on chip per tile, pipelined as
loads (swpipe.py `_unit_copy`) -- values against the evaluator with parts, tails and sizes 1; the GDRAM loads per
tile are gone."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gir import ir
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func
from gir.walk import walk_stmts

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "differential"))
from diffrun import check_text  # noqa: E402

LNB = (ROOT / "samples" / "layernorm_bwd.gir").read_text()
AFFINE = """func f(x: f32[M, N], a: f32[M], b: f32[M], w: f32[N]) -> (y: f32[M, N], s: f32[N]) {
  y[i, j] = (x[i, j] - a[i]) * b[i] + w[j]
  s[j] = sum(y[i, j] * x[i, j])
}
"""


def _moves(func: ir.Func) -> list:
    return [x for k in func.kernels for x in walk_stmts(k.body) if isinstance(x, ir.Move)]


def test_per_row_inputs_load_once_per_unit():
    f = schedule_mlu(parse_text(LNB).funcs[0], {"M": 4096, "N": 1024})
    moves = _moves(f)
    assert any(m.kind == "copy" and m.src.name == "mu_u" for m in moves)
    assert not any(m.kind == "load" and m.src.name == "mu" and m.dst.name != "mu_u" for m in moves)
    stats = run_func(parse_text(LNB).funcs[0], None, {"M": 4096, "N": 1024}, values=False).stats
    # (the per-tile 64-byte loads of mu and rstd paid 500 cycles each: 191.0 us before)
    assert stats["seconds"] < 186e-6


@pytest.mark.parametrize("src", [LNB, AFFINE], ids=["layernorm_bwd", "affine"])
@pytest.mark.parametrize("sizes", [{"M": 257, "N": 1000}, {"M": 4099, "N": 33}, {"M": 33, "N": 4099},
                                   {"M": 1, "N": 7}, {"M": 5000, "N": 64}])
def test_values(src, sizes):
    assert not check_text(src, sizes, 11, "<rows>", ("mlu-sim",))
