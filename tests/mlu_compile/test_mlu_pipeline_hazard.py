"""A loop that loads and stores through the same NRAM buffer (a copy, or a tile computed in place) is software-
pipelined with three slots (the software-pipeline pass, passes/schedule_mlu/swpipe.py): step `it` loads tile it+1 into slot (it+1) % 3, computes tile it
in slot it % 3 and stores tile it-1 from slot (it-1) % 3. With the two slots of a double buffer the load would
overwrite tile it-1 before its store read it (60% wrong elements before the pipelining handled it)."""
import re

import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.parser import parse_text
from gir.targets.mlu.run import run_func

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
# b is only loaded (two slots), a is loaded and stored (three slots) in the same pipelined loop
MIXED = SCALE.replace("alloc a: f32[8, 64] @nram", "alloc a: f32[8, 64] @nram\n      alloc b: f32[8, 64] @nram") \
    .replace("a[0:8, 0:64] = a[0:8, 0:64] * 2.0", "load b[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]\n"
             "        a[0:8, 0:64] = a[0:8, 0:64] + b[0:8, 0:64]").replace("scale_rows", "mixed_rows")


def _check(text, factor, trips=5):
    f = parse_text(text.replace("0..5", f"0..{trips}").replace("[40, 64]", f"[{8 * trips}, 64]")).funcs[0]
    x = np.random.default_rng(0).standard_normal((8 * trips, 64)).astype(np.float32)
    src = "".join(k.source for k in emit_func(f))
    assert "__memcpy_async" in src                 # pipelined
    assert "__nram__ float a[1536];" in src        # three slots of the 8 x 64 tile
    if trips > 1:
        assert re.search(r"__memcpy_async\(a \+ \(r \+ 1\) % 3 \* 512,", src)   # load slot (it+1) % 3
        assert re.search(r"__memcpy_async\(y \+ .*, a \+ \(r \+ 2\) % 3 \* 512,", src)   # store (it-1) % 3
    np.testing.assert_array_equal(run_func(f, {"x": x}).outputs["y"], x * np.float32(factor))
    return src


@pytest.mark.parametrize("trips", [1, 2, 3, 5])
def test_copy_through_one_buffer_is_triple_buffered(trips):
    _check(COPY, 1.0, trips)


@pytest.mark.parametrize("trips", [2, 4])
def test_in_place_compute_through_one_buffer_is_triple_buffered(trips):
    _check(SCALE, 2.0, trips)


def test_loaded_only_tile_stays_double_buffered():
    src = _check(MIXED, 2.0, 4)
    assert "__nram__ float b[1024];" in src        # b: two slots
    assert "b + (r + 1) % 2 * 512," in src and "a + r % 3 * 512" in src
