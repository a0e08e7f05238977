"""A loop that loads and stores through the same NRAM buffer must not be software-pipelined (codegen/mlu/emit.py):
step `it` of the pipeline loads tile it+1 and stores tile it-1 through the same slot of the double buffer, so the
load would overwrite the tile before its store reads it."""
import numpy as np

from codegen.mlu import emit_func
from gir.parser import parse_text
from targets.mlu.run import run_func

COPY = """
func copy_rows(x: f32[40, 64]) -> (y: f32[40, 64]) {
  kernel k with task_dim=1 {
    parallel t in 0..1 @core {
      alloc a: f32[8, 64] @nram
      for r in 0..5 {
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        store y[r * 8:r * 8 + 8, 0:64] <- a[0:8, 0:64]
      }
    }
  }
}
"""

SCALE = COPY.replace("store y", "a[0:8, 0:64] = a[0:8, 0:64] * 2.0\n        store y").replace("copy_rows", "scale_rows")


def _check(text, factor):
    f = parse_text(text).funcs[0]
    x = np.random.default_rng().standard_normal((40, 64)).astype(np.float32)
    src = "".join(k.source for k in emit_func(f))
    assert "__memcpy_async" not in src            # not pipelined: the buffer is both loaded and stored
    np.testing.assert_array_equal(run_func(f, {"x": x}).outputs["y"], x * np.float32(factor))


def test_copy_through_one_buffer_is_not_pipelined():
    _check(COPY, 1.0)


def test_in_place_compute_through_one_buffer_is_not_pipelined():
    _check(SCALE, 2.0)
