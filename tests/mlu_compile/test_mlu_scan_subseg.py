"""Sub-segment scans of the MLU unit kernel (passes/schedule_mlu/scan_subseg.py): a tile's positions cut into k
sub-segments scanned side by side, their carries combined after. Values against numpy with the form forced on
every tile that may take it (seeded random programs: every op, form and element type, weighted or not, tails,
narrower last lane chunks, one-tile units); where it applies; the kernel-only `transpose(a, r)` it rests on; the
simulated times it buys."""
from __future__ import annotations

import random

import numpy as np
import pytest

from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.passes.schedule_mlu import scan_subseg
from gir.targets.mlu.run import run_func
from gir import ir

from tests.mlu_compile.test_mlu_scan_overlap import row_scan_agrees
from tests.mlu_compile.test_mlu_scan_size import _plan

ROW = "func f(x: T[M, N], w: T[N]) -> (y: T[M, N]) {\n  y[i, j] = OP(E, j FLAGS)\n}\n"


def _program(rng: random.Random) -> tuple:
    op = rng.choice(["cumsum", "cumprod", "cummax", "cummin"])
    t = rng.choice(["f32", "f16", "bf16", "i32"])
    exclusive, reverse, weighted = rng.choice([0, 1]), rng.choice([0, 1]), rng.random() < 0.5
    e = "x[i, j]" if op != "cumprod" or t == "i32" else "1.0 + x[i, j] * 0.001"
    if weighted:
        e = f"({e}) * w[j]"
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    src = ROW.replace("T", t).replace("OP", op).replace("E", e).replace(" FLAGS", flags)
    sizes = {"M": rng.choice([33, 70, 100, 1031]), "N": rng.choice([64, 300, 512, 777, 1422, 2048])}
    return src, sizes, op, t, exclusive, reverse, weighted


@pytest.mark.parametrize("seed", range(24))
def test_random_row_scans_in_sub_segments(seed, monkeypatch):
    """Every tile that may scan in sub-segments does (the cost model's choice bypassed), at the k it would take."""
    orig = scan_subseg.subsegments

    def forced(p, *a):
        p.subseg = True
        return orig(p, *a)
    monkeypatch.setattr(scan_subseg, "subsegments", forced)
    monkeypatch.setattr(scan_subseg, "GAIN", 10.0)   # (the k of least model cycles, whatever the other forms')
    rng = random.Random(seed)
    src, sizes, op, t, exclusive, reverse, weighted = _program(rng)
    f = parse_text(src).funcs[0]
    assert row_scan_agrees(f, sizes, t, op, exclusive, reverse, np.random.default_rng(seed), weighted), (src, sizes)


def test_the_forced_programs_take_sub_segments(monkeypatch):
    """(The generator above does reach the form: most of its programs scan some tile in sub-segments.)"""
    orig = scan_subseg.subsegments
    monkeypatch.setattr(scan_subseg, "subsegments", lambda p, *a: (setattr(p, "subseg", True), orig(p, *a))[1])
    monkeypatch.setattr(scan_subseg, "GAIN", 10.0)
    hits = 0
    for seed in range(24):
        src, sizes, *_ = _program(random.Random(seed))
        res = run_func(parse_text(src).funcs[0], None, sizes, values=False)
        hits += "vt_" in res.source
    assert hits >= 8, hits


def test_where_sub_segments_apply():
    p = _plan(4096, 1024)
    p.R, p.W = 512, 32
    assert scan_subseg.pays(p) == 16      # 32 + 16 steps of 512 and 32 lanes, not 512 steps
    assert scan_subseg.subsegments(p, 512, False, None) == 0   # not a candidate the sizing took
    p.subseg = True
    assert scan_subseg.subsegments(p, 512, False, None) == 16
    assert scan_subseg.subsegments(p, 300, True, None) == 16          # the last tile of a forward walk
    assert scan_subseg.subsegments(p, 300, False, None) == 0          # ... not a middle one
    assert scan_subseg.subsegments(p, 512, False, 100) == 0           # overlapping walks: the carry's row
    r = _plan(4096, 1024, flags=", reverse=1")
    r.R, r.W, r.subseg = 512, 32, True
    assert scan_subseg.subsegments(r, 300, True, None) == 0           # reverse: the pad positions come first
    c = _plan(1024, 4096)
    c.layout = "cols"
    assert not scan_subseg.applies(c)
    assert scan_subseg.subseg_cycles(512, 32, 16) < 0.25 * scan_subseg.serial_cycles(512, 32, False, False)


VIEW = """func view(x: f32[2, 64]) -> (y: f32[2, 64]) {
  kernel k with task_dim=1 {
    parallel t in 0..1 @core {
      alloc a: f32[2, 64] @nram
      alloc b: SHAPE @nram
      load a[0:2, 0:64] <- x[0:2, 0:64]
      b[FULL] = transpose(a[0:2, 0:64], ROWS)
      store y[0:2, 0:64] <- b[FULL]
    }
  }
}
"""


def test_transpose_with_rows():
    """`transpose(a, r)`: a's elements read as r rows, transposed, into the target's elements."""
    from gir.errors import GirError
    x = np.arange(128, dtype=np.float32).reshape(2, 64)
    good = VIEW.replace("SHAPE", "f32[2, 64]").replace("FULL", "0:2, 0:64").replace("ROWS", "4")
    res = run_func(parse_text(good).funcs[0], {"x": x}, {})
    assert "__bang_transpose(b, a, 4, 32)" in res.source
    assert np.array_equal(res.outputs["y"].reshape(-1), x.reshape(4, 32).T.reshape(-1))
    for shape, full, rows in (("f32[1, 64]", "0:1, 0:64", "4"), ("f32[2, 64]", "0:2, 0:64", "0"),
                              ("f32[2, 64]", "0:2, 0:64", "3")):
        text = VIEW.replace("SHAPE", shape).replace("FULL", full).replace("ROWS", rows)
        with pytest.raises(GirError, match="transpose"):
            run_func(parse_text(text).funcs[0], {"x": x}, {})


def _ratio(src: str, sizes: dict) -> float:
    f = parse_text(src).funcs[0]
    res = run_func(f, None, sizes, values=False)
    return res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9)


@pytest.mark.parametrize("src,sizes,bound,before", [
    (ROW.replace("T", "bf16").replace("OP", "cumsum").replace("E", "x[i, j] * w[j]").replace(" FLAGS", ", exclusive=1"),
     {"M": 12312, "N": 527}, 1.55, 2.193),
    (ROW.replace("T", "f16").replace("OP", "cumprod").replace("E", "1.0 + 0.001 * x[i, j]").replace(" FLAGS", ""),
     {"M": 10833, "N": 716}, 1.40, 1.783),
    (ROW.replace("T", "bf16").replace("OP", "cumsum").replace("E", "x[i, j]").replace(" FLAGS", ""),
     {"M": 1278, "N": 1422}, 1.80, 2.063),
])
def test_simulated_time(src, sizes, bound, before):
    """Compute-bound 16-bit row scans (the step ops' issue cost): before = d9fc019, without sub-segments."""
    assert _ratio(src, sizes) < bound < before


CLAMPED = "func f(x: T[M, N], w: T[N]) -> (y: T[M, N]) {\n  y[i, j] = cumsum(clamp(x[i, j], 0.0, w[j] - x[i, j] * 2.0), AX)\n}\n"


@pytest.mark.parametrize("t,ax,sizes", [("f32", "i", {"M": 4096, "N": 4096}), ("f32", "j", {"M": 2048, "N": 8192}),
                                        ("f16", "j", {"M": 2048, "N": 8192})])
def test_in_place_operands_leave_the_emitter_no_scratch(t, ax, sizes):
    """E's operations write in place over their first operand only: over clamp's bound or a right operand beside
    a narrower left one the emitter computes into scratch tiles the NRAM count does not see (a review found these
    three overflowing NRAM, 787 KB to 880 KB of 768 KB); they compile, fit and run."""
    f = parse_text(CLAMPED.replace("T", t).replace("AX", ax)).funcs[0]
    res = run_func(f, None, sizes, values=False)
    assert "scratch" not in res.source and res.stats["seconds"] > 0


@pytest.mark.parametrize("t,ax", [("f32", "i"), ("f32", "j"), ("f16", "j"), ("bf16", "i")])
def test_in_place_operands_values(t, ax):
    from gir.evaluate import evaluate, random_inputs
    from gir.verdict import compare
    f = parse_text(CLAMPED.replace("T", t).replace("AX", ax)).funcs[0]
    sizes = {"M": 300, "N": 700}
    x = random_inputs(f, sizes, np.random.default_rng(3))
    got = run_func(f, x, sizes).outputs["y"]
    assert compare(got, evaluate(f, x, sizes)["y"], ir.DType(t)).passed
