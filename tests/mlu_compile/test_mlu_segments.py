"""A function no MLU recipe covers as a whole is split into consecutive segments by the cost model
(passes/schedule_mlu/segments.py) instead of running op by op: values agree with the evaluator at awkward sizes,
the split is located in a missed remark, it is estimated and simulated faster than the op-by-op program."""
from __future__ import annotations

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.cost import estimate
from gir.passes.schedule_mlu.segments import MAX_STMTS, Unfused, part_function
from gir.targets.mlu.run import run_func

AXES = """func axes(x: DT[M, N]) -> (y: f32[M, N]) {
  cm[j] = mean(f32(x[i, j]))
  rs[i] = sum((f32(x[i, j]) - cm[j]) * (f32(x[i, j]) - cm[j]))
  y[i, j] = (f32(x[i, j]) - cm[j]) / sqrt(rs[i] + 1.0)
}
"""


def _func(dt="f32"):
    return parse_text(AXES.replace("DT", dt), "axes.gir").funcs[0]


def test_column_statistics_then_row_normalisation_is_two_kernels():
    f = _func()
    sizes = {"M": 512, "N": 512}
    remarks: list = []
    split = schedule_mlu(f, sizes, remarks=remarks)
    opbyop = schedule_mlu(f, sizes, mode="opbyop")
    assert len(split.kernels) == 2 and len(opbyop.kernels) == 3
    msg = [r for r in remarks if "runs as 2 segments ['cm'] ['rs', 'y']" in r.message]
    assert msg and msg[0].kind == "missed" and (msg[0].loc.line, msg[0].loc.col) == (1, 1)
    assert estimate(split).seconds < estimate(opbyop).seconds
    t_split = run_func(split, None, sizes, values=False).stats["seconds"]
    t_opbyop = run_func(opbyop, None, sizes, values=False).stats["seconds"]
    assert t_split < 0.85 * t_opbyop
    gdram = run_func(split, None, sizes, values=False).stats
    assert gdram.global_bytes < 1.55 * (2 * 512 * 512 * 4)   # x read twice, y written once (+ cm)


@pytest.mark.parametrize("dt, sizes", [("f32", {"M": 1, "N": 1}), ("f32", {"M": 37, "N": 131}),
                                       ("f16", {"M": 97, "N": 64}), ("bf16", {"M": 2, "N": 257}),
                                       ("f32", {"M": 300, "N": 33})])
def test_split_values_agree_with_the_evaluator(dt, sizes):
    f = _func(dt)
    x = random_inputs(f, sizes, np.random.default_rng(5))
    got = run_func(f, x, sizes).outputs
    want = evaluate(f, x, sizes, compute_dtype=np.float64)
    for name, ref in want.items():   # f32 results: norm-wise against the reference's magnitude
        err = np.linalg.norm(got[name].astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-30)
        assert err < 1e-5, (name, err)


def test_a_segment_no_recipe_covers_is_not_a_candidate():
    f = _func()
    with pytest.raises(Unfused):   # (at 64 x 64 the tile recipe holds whole columns and covers it)
        schedule_mlu(f, {"M": 512, "N": 512}, split=False)


def test_part_function_keeps_crossing_values():
    from gir.passes.schedule_mlu.schedule import specialize
    from gir.shapes import func_info
    spec = specialize(_func(), {"M": 8, "N": 8})
    types = dict(func_info(spec).types)
    first = part_function(spec, [0], types, "p0")
    assert [p.name for p in first.params] == ["x"] and [p.name for p in first.results] == ["cm"]
    rest = part_function(spec, [1, 2], types, "p1")
    assert [p.name for p in rest.params] == ["cm", "x"] and [p.name for p in rest.results] == ["y"]


def test_too_many_statements_are_not_searched():
    # n (n + 1) / 2 segment schedules: beyond MAX_STMTS statements the op-by-op program stands (compile time)
    from gir.passes.schedule_mlu.schedule import specialize
    from gir.passes.schedule_mlu.segments import split
    from gir.shapes import func_info
    lines = [f"  t{k}[i, j] = x[i, j] * {k + 1}.0" for k in range(MAX_STMTS)] + \
        ["  y[i, j] = " + " + ".join(f"t{k}[i, j]" for k in range(MAX_STMTS))]
    text = "func f(x: f32[M, N]) -> (y: f32[M, N]) {\n" + "\n".join(lines) + "\n}\n"
    spec = specialize(parse_text(text, "long.gir").funcs[0], {"M": 8, "N": 8})
    calls = []
    assert split(spec, dict(func_info(spec).types), lambda *a: calls.append(a)) is None and not calls


SCANMIX = """func scanmix(x: f32[M, N]) -> (y: f32[M, N]) {
  m[i] = max(x[i, j])
  e[i, j] = exp(x[i, j] - m[i])
  s[i] = sum(e[i, j])
  y[i, j] = cumsum(e[i, j] / s[i], j)
}
"""


@pytest.mark.parametrize("sizes", [{"M": 1, "N": 1}, {"M": 33, "N": 131}, {"M": 256, "N": 512}])
def test_a_scan_after_fused_statistics_is_two_segments(sizes):
    f = parse_text(SCANMIX, "scanmix.gir").funcs[0]
    remarks: list = []
    out = schedule_mlu(f, sizes, remarks=remarks)
    assert len(out.kernels) < len(schedule_mlu(f, sizes, mode="opbyop").kernels)
    assert any("holds scans" in r.message and "segments ['m', 'e', 's'] ['y']" in r.message for r in remarks)
    x = random_inputs(f, sizes, np.random.default_rng(3))
    got = run_func(f, x, sizes).outputs["y"]
    want = evaluate(f, x, sizes, compute_dtype=np.float64)["y"]
    assert np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30) < 1e-5


MERGED = """func f(x: f32[A, B, C], w: f32[A]) -> (y: f16[A, B, C]) {
  s[c] = min(x[a, b, c])
  t0[a, b, c] = (x[a, b, c] - s[c]) * max(x[a, b, c], f32(c))
  y[a, b, c] = t0[a, b, c]
}
"""


@pytest.mark.parametrize("sizes", [{"A": 85, "B": 127, "C": 151}, {"A": 7, "B": 13, "C": 33}])
def test_a_segment_views_merged_axes_the_function_declares(sizes):
    """The reduction over the two leading axes needs x viewed as [A * B, C] (the tile recipe's merged axes); a
    segment could not view its tensors, so it ran as a scalar kernel (27.5 ms at 85 x 127 x 151, estimate). The
    function declares the segment's view (no other segment accesses x otherwise)."""
    remarks: list = []
    f = parse_text(MERGED).funcs[0]
    out = schedule_mlu(f, sizes, remarks=remarks)
    assert not [r for r in remarks if "scalar MLU kernel" in r.message]
    assert any(p.view is not None for p in out.params)
    x = random_inputs(f, sizes, np.random.default_rng(4))
    got = run_func(out, x, sizes).outputs["y"].astype(np.float64)
    want = np.asarray(evaluate(f, x, sizes)["y"], np.float64)
    assert np.linalg.norm(got - want) <= 1e-2 * np.linalg.norm(want)
