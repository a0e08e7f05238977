"""Values rounded to 16 bits inside a function (`f16(...)` / `bf16(...)` of an expression) on the MLU's tile
recipe: a program that rounds values of two tile kinds, and a rounded slab whose tail sub-tile has an odd number
of rows (both failed: a rank error on one shared rounding tile, and a half conversion of 96 elements, not whole
128-byte units)."""
from __future__ import annotations

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.rounding import rounding_bound
from gir.targets.mlu.run import run_func
from gir.verdict import compare

TWO_KINDS = """func f(x: bf16[A, B], w0: f16[]) -> (y: f32[A, B]) {
  t0[a, b] = x[a, b] - min((max(w0[], x[a, b]) + max(w0[], (b * b - B))), min(w0[], -(x[a, b])))
  t1[a, b] = t0[a, b] * (min(bf16(x[a, b]), bf16(w0[])) * min((0.5 * x[a, b]), w0[]))
  y[a, b] = t1[a, b]
}
"""
SLAB_TAIL = """func h(x: f32[M, N]) -> (y: f32[M, N], cm: f32[N]) {
  h[i, j] = f16(x[i, j] * 2.0)
  cm[j] = max(f32(h[i, j]))
  y[i, j] = f32(h[i, j]) - cm[j]
}
"""


@pytest.mark.parametrize("text, sizes", [(TWO_KINDS, {"A": 31, "B": 37}), (TWO_KINDS, {"A": 1, "B": 2}),
                                         (SLAB_TAIL, {"M": 259, "N": 64}), (SLAB_TAIL, {"M": 515, "N": 33})])
def test_rounded_values_on_the_mlu(text, sizes):
    f = parse_text(text, "r.gir").funcs[0]
    x = random_inputs(f, sizes, np.random.default_rng(2))
    got = run_func(f, x, sizes).outputs
    with np.errstate(all="ignore"):
        want = evaluate(f, x, sizes, compute_dtype=np.float64)
        bounds = rounding_bound(f, x)
    for p in f.results:
        v = compare(got[p.name], want[p.name], p.type.dtype, bounds.get(p.name))
        assert v.passed, (p.name, v.error, v.reason)
