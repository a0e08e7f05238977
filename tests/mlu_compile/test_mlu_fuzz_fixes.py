"""Regression tests for fuzzer-found MLU compiler bugs: rank-4 row tensors at small sizes (bounds-checked
kernels), i64 tensors at the host boundary, and the fused group_norm schedule."""
from pathlib import Path

import numpy as np
import pytest

from gir import ir
from gir.errors import GirError
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.analysis.checks import check_module
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

CAUSAL = """func scaled_causal_softmax(x: f32[B, H, S, S], scale: f32[]) -> (y: f32[B, H, S, S]) {
  z[b, h, i, j] = select(j <= i, x[b, h, i, j] * scale[], -inf)
  mx[b, h, i]   = max(z[b, h, i, j])
  e[b, h, i, j] = exp(z[b, h, i, j] - mx[b, h, i])
  den[b, h, i]  = sum(e[b, h, i, j])
  y[b, h, i, j] = e[b, h, i, j] / den[b, h, i]
}
"""


def _compare(f, sizes, seed, tol=2e-5, x=None):
    x = x if x is not None else random_inputs(f, sizes, np.random.default_rng(seed))
    e = schedule_mlu(f, sizes)
    res = run_func(e, x, sizes)
    for k, want in evaluate(f, x, sizes).items():
        want = np.asarray(want, np.float64)
        np.testing.assert_allclose(res.outputs[k].astype(np.float64), want, rtol=tol,
                                   atol=tol * max(1.0, np.abs(want).max()))
    return e


@pytest.mark.parametrize("b,h,s", [(4, 4, 2), (4, 13, 8), (7, 2, 9), (9, 1, 9), (13, 1, 7), (1, 1, 1), (2, 1, 33),
                                   (1, 3, 5), (5, 7, 3)])
def test_causal_softmax_small_sizes_checked_and_correct(b, h, s):
    f = parse_text(CAUSAL).funcs[0]
    sizes = {"B": b, "H": h, "S": s}
    e = _compare(f, sizes, seed=b * 100 + h * 10 + s)
    check_module(ir.Module((e,)), "mlu", sizes)   # raises GirError on any error (bounds, races, ...)


def _stmts(items):
    for s in items:
        yield s
        for key in ("body", "then", "orelse"):
            yield from _stmts(getattr(s, key, ()) or ())


@pytest.mark.parametrize("mode", ["fused", "opbyop"])
def test_generated_instructions_are_located(mode):
    f = parse_text(CAUSAL, "causal.gir").funcs[0]
    e = schedule_mlu(f, {"B": 2, "H": 3, "S": 5}, mode=mode)
    moves = [s for s in _stmts(e.body) if isinstance(s, (ir.Move, ir.Assign))]
    assert moves and all(s.loc is not None and s.loc.line >= 1 for s in moves)
    assert all(s.src.loc is not None and s.dst.loc is not None for s in moves if isinstance(s, ir.Move))
    if mode == "opbyop":   # per-statement kernels point at the statement they implement
        assert {s.loc.line for s in moves} - {f.loc.line}


@pytest.mark.parametrize("m,n", [(8, 17), (1, 1), (33, 64)])
def test_i64_inputs_match_evaluator(m, n):
    f = parse_text(open(f"{SAMPLES}/rmsnorm.gir").read().replace("x: f32[", "x: i64[")).funcs[0]
    sizes = {"M": m, "N": n}
    rng = np.random.default_rng(m * n)
    x = {"x": rng.integers(-1000, 1000, (m, n)).astype(np.int64), "w": rng.standard_normal(n).astype(np.float32)}
    _compare(f, sizes, 0, tol=1e-5, x=x)


def test_i64_out_of_int32_range_is_a_gir_error():
    f = parse_text(open(f"{SAMPLES}/rmsnorm.gir").read().replace("x: f32[", "x: i64[")).funcs[0]
    x = {"x": np.full((2, 3), 2 ** 40, np.int64), "w": np.ones(3, np.float32)}
    with pytest.raises(GirError, match="int32 range"):
        run_func(f, x, {"M": 2, "N": 3})


def _group_norm():
    return parse_text(open(f"{SAMPLES}/group_norm.gir").read()).funcs[0]


@pytest.mark.parametrize("n,g,cg,hw", [(2, 3, 5, 7), (1, 1, 1, 1), (3, 4, 1, 130), (2, 32, 8, 64), (5, 6, 3, 65),
                                       (1, 2, 2, 1), (33, 1, 2, 5)])
def test_group_norm_fused_matches_evaluator(n, g, cg, hw):
    f = _group_norm()
    sizes = {"N": n, "G": g, "CG": cg, "HW": hw}
    e = _compare(f, sizes, seed=n + g + cg + hw, tol=2e-5)
    assert [k.name for k in e.kernels] == ["group_norm_mlu"]          # one fused kernel, no scalar fallback
    check_module(ir.Module((e,)), "mlu", sizes)


def test_group_norm_bench_shape_near_roofline():
    sizes = {"N": 16, "G": 32, "CG": 8, "HW": 4096}
    res = run_func(_group_norm(), None, sizes, values=False)
    compulsory = 2 * 16 * 32 * 8 * 4096 * 4 + 2 * 32 * 8 * 4
    assert res.stats["gdram_traffic_bytes"] == pytest.approx(compulsory, rel=0.001)
    assert res.stats["seconds"] < 1.15 * compulsory / 307e9


def test_group_norm_pattern_mismatch_is_still_fused():
    # a different affine transform (beta scaled) is not groupnorm.py's form: the tile recipe (tiles.py) fuses it
    src = open(f"{SAMPLES}/group_norm.gir").read().replace("+ beta[g, c]", "+ 2.0 * beta[g, c]")
    f = parse_text(src).funcs[0]
    e = _compare(f, {"N": 1, "G": 2, "CG": 2, "HW": 3}, seed=5)
    assert len(e.kernels) == 1
