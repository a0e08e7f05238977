"""The MLU's software pipelining is an IR rewrite (passes/schedule_mlu/swpipe.py): the pipelined kernels are
explicit GIR that prints, parses back, verifies, and runs; the pass is idempotent and leaves GPU kernels alone."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gir import ir
from gir.errors import GirError
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.swpipe import pipeline_func
from gir.printer import print_module
from gir.targets.mlu.run import run_func
from gir.verifier import verify_module

SCALE = """
func scale_rows(x: f32[40, 64]) -> (y: f32[40, 64]) {
  kernel k with task_dim=1 {
    parallel t in 0..1 @core {
      alloc a: f32[8, 64] @nram
      alloc b: f32[8, 64] @nram
      for r in 0..5 {
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        b[0:8, 0:64] = a[0:8, 0:64] * 2.0
        store y[r * 8:r * 8 + 8, 0:64] <- b[0:8, 0:64]
      }
    }
  }
}
"""


def _text(f: ir.Func) -> str:
    return print_module(ir.Module((f,)))


def test_pipelined_kernel_is_explicit_gir_that_round_trips():
    f = parse_text(SCALE).funcs[0]
    p = pipeline_func(f)
    text = _text(p)
    assert "alloc a: f32[2, 8, 64] @nram with slots=2" in text and "alloc b: f32[2, 8, 64] @nram with slots=2" in text
    assert "load a[(r + 1) % 2, 0:8, 0:64] <- x[(r + 1) * 8:(r + 1) * 8 + 8, 0:64] with async" in text
    assert "store y[(r - 1) * 8:(r - 1) * 8 + 8, 0:64] <- b[(r + 1) % 2, 0:8, 0:64] with async" in text
    assert "b[r % 2, 0:8, 0:64] = a[r % 2, 0:8, 0:64] * 2.0" in text and text.count("sync @core") == 3
    back = parse_text(text)
    verify_module(back)
    assert _text(back.funcs[0]) == text
    assert pipeline_func(p) is p or _text(pipeline_func(p)) == text            # idempotent
    x = np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32)
    for g in (f, p, back.funcs[0]):
        np.testing.assert_array_equal(run_func(g, {"x": x}, pipeline=False).outputs["y"]
                                      if g is not f else run_func(g, {"x": x}).outputs["y"], x * np.float32(2))


def test_unpipelined_and_pipelined_agree_and_pipelining_pays():
    x = np.random.default_rng(1).standard_normal((40, 64)).astype(np.float32)
    f = parse_text(SCALE).funcs[0]
    sync = run_func(f, {"x": x}, pipeline=False)
    piped = run_func(pipeline_func(f), {"x": x}, pipeline=False)
    np.testing.assert_array_equal(sync.outputs["y"], piped.outputs["y"])
    assert "__memcpy_async" in piped.source and "__memcpy_async" not in sync.source
    assert piped.stats["seconds"] < sync.stats["seconds"]


@pytest.mark.parametrize("name, sizes", [("softmax", {"M": 77, "N": 301}), ("layernorm", {"M": 33, "N": 1000}),
                                         ("cumsum", {"M": 37, "N": 67})])
def test_scheduled_samples_pipeline_to_verified_ir(name, sizes):
    from pathlib import Path
    src = (Path(__file__).resolve().parents[2] / "samples" / f"{name}.gir").read_text()
    f = parse_text(src).funcs[0]
    p = pipeline_func(schedule_mlu(f, sizes))
    verify_module(parse_text(_text(p)))
    assert re.search(r"with (mask, )?async", _text(p))


def test_gpu_kernels_are_left_alone():
    from gir.passes.middle import lower_module
    f = parse_text("func g(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] * 2.0\n}")
    low = lower_module(f if isinstance(f, ir.Module) else f, "sim", {"sizes": {"M": 64, "N": 64}}).funcs[0]
    assert pipeline_func(low) is low


@pytest.mark.parametrize("text, message", [
    (SCALE.replace("alloc a: f32[8, 64] @nram", "alloc a: f32[8, 64] @nram with slots=3"),
     "'slots=3' needs an on-chip MLU buffer whose first dimension is 3"),
    ("func g(x: f32[64]) -> (y: f32[64]) {\n  kernel k {\n    parallel b in 0..1 @block {\n"
     "      alloc s: f32[64] @shared\n      load s[0:64] <- x[0:64] with async\n"
     "      store y[0:64] <- s[0:64]\n    }\n  }\n}", "'async' moves are the MLU's"),
    (SCALE.replace("@nram\n      alloc b", "@nram with slots=x\n      alloc b"), "attribute 'slots' takes an integer"),
])
def test_misused_pipeline_attributes_are_located_errors(text, message):
    with pytest.raises(GirError) as e:
        verify_module(parse_text(text, "bad.gir"))
    assert message in str(e.value) and "bad.gir:" in str(e.value)
