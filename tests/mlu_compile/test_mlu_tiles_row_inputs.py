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
    assert stats["seconds"] < 188e-6


@pytest.mark.parametrize("src", [LNB, AFFINE], ids=["layernorm_bwd", "affine"])
@pytest.mark.parametrize("sizes", [{"M": 257, "N": 1000}, {"M": 4099, "N": 33}, {"M": 33, "N": 4099},
                                   {"M": 1, "N": 7}, {"M": 5000, "N": 64}])
def test_values(src, sizes):
    assert not check_text(src, sizes, 11, "<rows>", ("mlu-sim",))


RACE = """func f(x: f32[40, 64]) -> (y: f32[40, 64]) {
  kernel k with task_dim=1 {
    parallel t in 0..1 @core {
      alloc c: f32[8, 64] @nram
      alloc d: f32[8, 64] @nram
      alloc e: f32[8, 64] @nram
      c[0:8, 0:64] = 3.0
      for r in 0..5 {
        copy d[0:8, 0:64] <- c[0:8, 0:64]
        load e[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        e[0:8, 0:64] = e[0:8, 0:64] * d[0:8, 0:64]
        store y[r * 8:r * 8 + 8, 0:64] <- e[0:8, 0:64]
      }
    }
  }
}
"""


def test_pipelined_copy_waits_for_the_computes_before_the_loop():
    """A loop copying an NRAM buffer it never writes is pipelined (the copy is a load); its first copy is issued
    before the loop, after a `sync @core`: the compute that wrote the buffer just before may still be running
    (without it the simulator reports a race between the pipes; review finding)."""
    import numpy as np
    from gir.passes.schedule_mlu.swpipe import pipeline_func
    f = parse_text(RACE).funcs[0]
    piped = pipeline_func(f)
    par = piped.kernels[0].body[0]
    kinds = [type(x).__name__ for x in par.body if not isinstance(x, ir.Alloc)]
    assert kinds[:3] == ["Assign", "Sync", "If"]   # the fill, the fence, the first copy and load
    x = np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32)
    assert np.array_equal(run_func(f, {"x": x}).outputs["y"], x * 3)


def many_row_inputs(n: int) -> str:
    names = "abcdeghk"[:n]
    expr = "x[p, i, j]"
    for c in names:
        expr = f"({expr} * {c}[p, i] + 1.0)"
    params = ", ".join(f"{c}: f32[B, M]" for c in names)
    return (f"func f(x: f32[B, M, N], {params}) -> (y: f32[B, M, N], s: f32[B, N]) {{\n"
            f"  y[p, i, j] = {expr}\n  s[p, j] = sum(y[p, i, j] * x[p, i, j])\n}}\n")


def test_unit_buffers_never_crowd_the_plan_out():
    """Five per-row inputs of 4,096 rows (80 KiB of unit buffers): where the buffers keep a plan from fitting NRAM
    the plan is built with per-tile loads instead -- one kernel, as before (the function was split into two
    kernels, 30.7 -> 56.8 ms; review finding)."""
    f = parse_text(many_row_inputs(5)).funcs[0]
    out = schedule_mlu(f, {"B": 32, "M": 4096, "N": 8192})
    assert len(out.kernels) == 1
    assert not check_text(many_row_inputs(5), {"B": 3, "M": 37, "N": 65}, 2, "<many>", ("mlu-sim",))
