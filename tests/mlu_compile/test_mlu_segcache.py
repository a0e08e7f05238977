"""Segment schedules shared by the searches of one function (passes/schedule_mlu/segcache.py): a segment scheduled
once is taken again under another name, renamed, equal to what scheduling it afresh under that name gives; only
inside `shared_segments()` (the MLU schedule pass opens one per function)."""
from __future__ import annotations

import dataclasses

import pytest

from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule as S
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.segcache import shared_segments

PROGRAMS = {
    "cumsum": (open("samples/cumsum.gir").read(), {"M": 300, "N": 97}),
    "chain": ("""func chain(x: f32[M, N], b: f32[N]) -> (y: f32[M, N], s: f32[M]) {
  t[i, j] = exp(x[i, j] - b[j])
  s[i] = sum(t[i, j])
  c[i, j] = cumsum(x[i, j], j)
  y[i, j] = t[i, j] / s[i] + c[i, j]
}
""", {"M": 65, "N": 130}),
}


def _counting(monkeypatch) -> list:
    calls: list = []
    orig = S._schedule

    def counted(sub, *a, **k):
        if k.get("split") is False:
            calls.append(sub.name)
        return orig(sub, *a, **k)
    monkeypatch.setattr(S, "_schedule", counted)
    return calls


def _renamed(text: str, name: str):
    f = parse_text(text).funcs[0]
    return dataclasses.replace(f, name=name)


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_a_segment_taken_again_equals_a_fresh_schedule(prog, monkeypatch):
    text, sizes = PROGRAMS[prog]
    fresh_remarks: list = []
    fresh = schedule_mlu(_renamed(text, "second"), sizes, remarks=fresh_remarks)
    calls = _counting(monkeypatch)
    with shared_segments():
        schedule_mlu(_renamed(text, "first"), sizes)
        before = len(calls)
        remarks: list = []
        again = schedule_mlu(_renamed(text, "second"), sizes, remarks=remarks)
    assert before > 0 and len(calls) == before, calls   # (every segment of the second taken from the first)
    assert again == fresh
    assert [r.message for r in remarks] == [r.message for r in fresh_remarks]
    assert not any("first" in k.name for k in again.kernels)


def test_no_sharing_outside_the_block(monkeypatch):
    text, sizes = PROGRAMS["cumsum"]
    calls = _counting(monkeypatch)
    schedule_mlu(_renamed(text, "first"), sizes)
    n = len(calls)
    schedule_mlu(_renamed(text, "second"), sizes)
    assert len(calls) == 2 * n > 0


def test_a_refused_segment_is_refused_again(monkeypatch):
    """A segment no schedule covers (`Unfused`) is remembered as refused: the split falls back the same way."""
    text, sizes = PROGRAMS["chain"]
    fresh = schedule_mlu(_renamed(text, "second"), sizes)
    with shared_segments():
        schedule_mlu(_renamed(text, "first"), sizes)
        again = schedule_mlu(_renamed(text, "second"), sizes)
    assert again == fresh
