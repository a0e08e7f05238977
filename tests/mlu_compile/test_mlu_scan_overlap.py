"""Row scans whose length leaves a long tail tile (passes/schedule_mlu/scan.py `_Kernel.lanes`): the tail ran
after the pipelined loop, its load, compute and store in sequence (2048 x 2039 along the last axis: tiles of 512
and a tail of 503, 1.217x the DMA roofline f32, 1.631x f16). A tail of 3/4 of a tile or more is now one more
whole tile inside the loop, ending at the row's end and overlapping the tile before; the tile before hands on
its carry from the row before the overlap. Values against numpy for every op and form and three element types
at sizes that take the overlap (and one that does not), the simulated time at 2048 x 2039."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.targets.mlu.run import run_func
from gir.verdict import compare

from tests.mlu_compile.test_mlu_scan import FORMS, _inputs, _reference


def _source(op: str, t: str, exclusive: int, reverse: int, weighted: bool = True) -> str:
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    e = "1.0 + x[i, j] * 0.001" if op == "cumprod" and t != "i32" else "x[i, j]"
    if weighted:
        e = f"({e}) * w[j]"
    return f"func f(x: {t}[M, N], w: {t}[N]) -> (y: {t}[M, N]) {{\n  y[i, j] = {op}({e}, j{flags})\n}}\n"


@pytest.mark.parametrize("sizes", [{"M": 70, "N": 1000}, {"M": 5, "N": 1531}, {"M": 33, "N": 700}])
@pytest.mark.parametrize("t", ["f32", "f16", "i32"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
def test_values_with_the_overlapping_last_tile(sizes, t, op, exclusive, reverse):
    f = parse_text(_source(op, t, exclusive, reverse)).funcs[0]
    assert row_scan_agrees(f, sizes, t, op, exclusive, reverse, np.random.default_rng(sizes["N"])), \
        (sizes, t, op, exclusive, reverse)


def row_scan_agrees(f, sizes: dict, t: str, op: str, exclusive: int, reverse: int, rng, weighted: bool = True) -> bool:
    """`y[i, j] = OP(E * w[j], j)` (E = x, or 1 + 0.001 x for a float cumprod; without w unless `weighted`) on
    mlu-sim against numpy, on inputs from `rng` (i32 cumprod factors in -1..1)."""
    shape = (sizes["M"], sizes["N"])
    x, w = _inputs(t, shape, rng, op), _inputs(t, shape[1:], rng, op)
    if t == "i32":
        x, w = (np.where(np.abs(a) > 1, 1, a).astype(np.int32) if op == "cumprod" else a for a in (x, w))
    got = run_func(f, {"x": x, "w": w}, sizes).outputs["y"]
    wide = np.int32 if t == "i32" else np.float64
    e = x.astype(wide)
    if op == "cumprod" and t != "i32":
        e = 1.0 + e * 0.001
    want = _reference(op, e * w.astype(wide) if weighted else e, 1, exclusive, reverse, t)
    return compare(got, want, ir.DType(t)).passed


@pytest.mark.parametrize("t,bound,before", [("f32", 1.12, 1.217), ("f16", 1.42, 1.631)])
def test_time_of_rows_with_a_long_tail(t, bound, before):
    f = parse_text(_source("cumsum", t, 0, 0, weighted=False).replace(", w: " + t + "[N]", "")).funcs[0]
    sizes = {"M": 2048, "N": 2039}
    res = run_func(f, None, sizes, values=False)
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < bound < before


GROUP = """func f(x: T[M, N], w: T[N]) -> (c: T[M, N], p: T[M, N]) {
  c[i, j] = cumsum(x[i, j] * w[j], j REV)
  p[i, j] = cummax(x[i, j], j, exclusive=1 REV)
}
"""


@pytest.mark.parametrize("t", ["f32", "f16"])
@pytest.mark.parametrize("rev", ["", ", reverse=1"])
def test_group_of_scans_walking_one_way_overlaps_too(t, rev):
    """Sibling scans in one direction (scan_group.py's single walk) take the same last tile."""
    f = parse_text(GROUP.replace("T[", f"{t}[").replace(" REV", rev)).funcs[0]
    sizes = {"M": 70, "N": 1000}
    rng = np.random.default_rng(7)
    x, w = _inputs(t, (70, 1000), rng, "cumsum"), _inputs(t, (1000,), rng, "cumsum")
    got = run_func(f, {"x": x, "w": w}, sizes).outputs
    xe = x.astype(np.float64)
    assert compare(got["c"], _reference("cumsum", xe * w.astype(np.float64), 1, 0, bool(rev), t), ir.DType(t)).passed
    assert compare(got["p"], _reference("cummax", xe, 1, 1, bool(rev), t), ir.DType(t)).passed


def test_time_of_a_group_with_a_long_tail():
    f = parse_text(GROUP.replace("T[", "f32[").replace(" REV", "")).funcs[0]
    sizes = {"M": 2048, "N": 2039}
    res = run_func(f, None, sizes, values=False)
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < 1.32 < 1.358   # (1.358x before)


MIXED = """func f(x: T[M, N], w: T[N]) -> (c: T[M, N], p: T[M, N]) {
  c[i, j] = OPC(x[i, j] * w[j], jFC)
  p[i, j] = OPP(x[i, j], j, reverse=1FP)
}
"""


@pytest.mark.parametrize("sizes", [{"M": 5, "N": 1500}, {"M": 33, "N": 2039}, {"M": 70, "N": 1000}])
@pytest.mark.parametrize("t", ["f32", "i32"])
@pytest.mark.parametrize("opc,opp", [("cumsum", "cummax"), ("cummin", "cumsum")])
@pytest.mark.parametrize("fc,fp", [("", ""), (", exclusive=1", ""), ("", ", exclusive=1")])
def test_group_walking_both_ways_overlaps(sizes, t, opc, opp, fc, fp):
    """Sibling scans in both directions (scan_group.py's two phases) walk S // R + 1 whole tiles each way, the
    last overlapping (at these sizes: tiles of 512, tails of 476-503): forward, then back over the same tiles."""
    src = MIXED.replace("T[", f"{t}[").replace("OPC", opc).replace("OPP", opp).replace("FC", fc).replace("FP", fp)
    f = parse_text(src).funcs[0]
    rng = np.random.default_rng(sizes["N"] + len(fc) + 2 * len(fp))
    shape = (sizes["M"], sizes["N"])
    x, w = _inputs(t, shape, rng, opc), _inputs(t, (sizes["N"],), rng, opc)
    got = run_func(f, {"x": x, "w": w}, sizes).outputs
    xe = x.astype(np.float64)
    want_c = _reference(opc, xe * w.astype(np.float64), 1, bool(fc), False, t)
    want_p = _reference(opp, xe, 1, bool(fp), True, t)
    assert compare(got["c"], want_c, ir.DType(t)).passed, (sizes, t, opc, fc)
    assert compare(got["p"], want_p, ir.DType(t)).passed, (sizes, t, opp, fp)


def test_time_of_a_group_walking_both_ways():
    """4096 x 1500 f32, a tail of 3/4 of a tile or more each way (1.334x the DMA roofline unoverlapped)."""
    f = parse_text("func f(x: f32[M, N]) -> (c: f32[M, N], p: f32[M, N]) {\n  c[i, j] = cumsum(x[i, j], j)\n"
                   "  p[i, j] = cummax(x[i, j], j, reverse=1)\n}\n").funcs[0]
    sizes = {"M": 4096, "N": 1500}
    res = run_func(f, None, sizes, values=False)
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < 1.32 < 1.334
