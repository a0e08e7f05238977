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


def test_one_long_row_is_said():
    (msg,) = _idle({"M": 1, "N": 65536})
    assert "keeps 1 of its 32 MLU tasks busy" in msg and "'softmax_mlu'" in msg


def test_many_rows_or_small_problems_are_silent():
    assert _idle({"M": 4096, "N": 1024}) == []
    assert _idle({"M": 1, "N": 1000}) == []   # (under the 50 us the remark waits for)
