"""Segment schedules shared by the searches of one function (passes/schedule_mlu/segcache.py): a segment scheduled
once is taken again under another name, renamed, equal to what scheduling it afresh under that name gives; only
inside `shared_segments()` (the MLU schedule pass opens one per function)."""
from __future__ import annotations

import dataclasses

import pytest

from gir import ir

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


EXACT = """func f(x: f32[M, N]) -> (c: f32[M, N], z: i32[M]) {
  m[i] = mean(x[i, j])
  y[i, j] = x[i, j] - m[i]
  c[i, j] = cumsum(y[i, j], j)
  z[i] = i32(c[i, 0])
}
"""


def test_the_global_modes_are_part_of_the_key():
    """The function divides exactly (an integer result: exactdiv.py), its group without `z` does not: the group's
    segments are scheduled afresh, not taken from the function's (a mean as `/ 97.0` instead of `* (1 / 97)`)."""
    f = parse_text(EXACT).funcs[0]
    g = dataclasses.replace(f, name="f_g0", results=f.results[:1], body=f.body[:3])
    sizes = {"M": 300, "N": 97}
    fresh = schedule_mlu(g, sizes)
    with shared_segments():
        schedule_mlu(f, sizes)
        again = schedule_mlu(g, sizes)
    assert again == fresh


def test_program_names_like_a_segment_are_kept():
    """A tensor of the program named like the segment's own names (`first_p0_2_t`) keeps its name; the segment's
    kernels and temporaries take the new one, in the remarks too."""
    from gir.passes.remarks import Remark
    from gir.passes.schedule_mlu import build as B
    from gir.passes.schedule_mlu.segcache import _renamed
    t = ir.TensorType(ir.DType.f32, (4,))
    body = (B.alloc("first_p0_2_t", ir.DType.f32, (4,), "gdram"), B.alloc("first_p0_2_mlu_tot", ir.DType.f32, (4,),
                                                                          "gdram"),
            ir.Kernel("first_p0_2_mlu", (ir.Move("load", B.ref("first_p0_2_mlu_tot", B.sl(0, 4)),
                                                 B.ref("first_p0_2_t", B.sl(0, 4))),), ()))
    done = ir.Func("first_p0_2", (ir.Param("x", t),), (), body)
    said = [Remark("schedule-mlu", "missed", "kernel 'first_p0_2_mlu' of first_p0_2 (not first_p0_20)")]
    out, remarks, _ = _renamed(done, said, [], "first_p0_2", "second_p0_2", {"x", "first_p0_2_t"})
    assert [getattr(x, "name") for x in out.body] == ["first_p0_2_t", "second_p0_2_mlu_tot", "second_p0_2_mlu"]
    move = out.body[2].body[0]
    assert (move.dst.name, move.src.name) == ("second_p0_2_mlu_tot", "first_p0_2_t") and out.name == "second_p0_2"
    assert remarks[0].message == "kernel 'second_p0_2_mlu' of second_p0_2 (not first_p0_20)"
