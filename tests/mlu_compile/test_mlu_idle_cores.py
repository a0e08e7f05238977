"""A kernel that keeps most MLU cores idle for long is said (passes/middle/search/mlu.py `_idle_cores`): one long
row of a softmax runs on one task of 32 -- a missed remark names the kernel and the busy tasks; many rows, or a
small problem, are silent."""
from __future__ import annotations

from pathlib import Path

from gir.parser import parse_text
from gir.passes.middle import run_default

SOFTMAX = (Path(__file__).resolve().parents[2] / "samples" / "softmax.gir").read_text()


def _idle(sizes: dict) -> list[str]:
    _, ctx = run_default(parse_text(SOFTMAX), "mlu-sim", {"sizes": sizes})
    return [r.message for r in ctx.remarks if r.kind == "missed" and "MLU tasks busy" in r.message]


LAYERNORM = (Path(__file__).resolve().parents[2] / "samples" / "layernorm.gir").read_text()


def test_one_long_row_is_said():
    """A layernorm of one row of 4M floats: its parts would need x, x - mean, gamma and beta in NRAM (split-rows
    does not fit), so the row runs on one task. (A softmax of one long row is cut over the cores: splitrows.py.)"""
    _, ctx = run_default(parse_text(LAYERNORM), "mlu-sim", {"sizes": {"M": 1, "N": 1 << 22}})
    (msg,) = [r.message for r in ctx.remarks if r.kind == "missed" and "MLU tasks busy" in r.message]
    assert "keeps 1 of its 32 MLU tasks busy" in msg and "'layernorm_mlu'" in msg
    assert _idle({"M": 1, "N": 65536}) == []   # (split over the cores)


def test_many_rows_or_small_problems_are_silent():
    assert _idle({"M": 4096, "N": 1024}) == []
    assert _idle({"M": 1, "N": 1000}) == []   # (under the 50 us the remark waits for)
