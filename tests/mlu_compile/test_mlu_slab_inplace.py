"""Slab kernels (passes/schedule_mlu/tiles_slab.py) compute a pass's sub-tile values in the slab rows of a value
read for the last time there (a softmax's result in the rows of x it is computed from, stored from there): no
double-buffered result tile beside the slab. Checked: the stores read the slab, values stay right where the slab
value is still read after the result (no reuse then), and the NRAM left over lets a wider slab fit."""
from __future__ import annotations

import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func
from gir.walk import walk_stmts

from tests.mlu_compile.test_mlu_tiles import SAMPLE_DIR, _check, _func


def _stores(e: ir.Func, result: str) -> set:
    """Names of the on-chip tiles the kernels store `result` from."""
    return {s.src.name for k in e.kernels for s in walk_stmts(k.body)
            if isinstance(s, ir.Move) and s.kind == "store" and s.dst.name == result}


@pytest.mark.parametrize("name, sizes", [
    ("softmax_col", dict(N=4095, C=4095)),          # cluster-shared slabs of 128 lanes
    ("softmax_axis0", dict(N=3000, B=4, C=700)),
    ("softmax_mid", dict(B=15, N=255, C=1023)),
])
def test_result_stored_from_the_slab(name, sizes):
    f = _func(open(f"{SAMPLE_DIR}/{name}.gir").read())
    e = schedule_mlu(f, sizes)
    assert _stores(e, "y") == {"x_s"}   # (a separate result tile before: b6_)


# x is read again after the softmax (by z): values stay right whichever slab rows the results take (at N=2047
# C=200, x * 2 is a slab value of its own from the first pass, y takes x's rows and z those of x * 2)
LATER = """
func later(x: f32[N, C]) -> (y: f32[N, C], z: f32[N, C]) {
  mx[c] = max(x[n, c])
  e[n, c] = exp(x[n, c] - mx[c])
  s[c] = sum(e[n, c])
  y[n, c] = e[n, c] / s[c]
  z[n, c] = x[n, c] * 2.0 + y[n, c]
}
"""


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("sizes", [dict(N=130, C=33), dict(N=1000, C=70), dict(N=2047, C=200)])
def test_values_when_the_slab_value_is_read_later(dtype, sizes):
    f = _func(LATER, dtype)
    _check(f, sizes, seed=sizes["N"])


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("name, sizes", [("softmax_axis0", dict(N=257, B=3, C=33)),
                                         ("softmax_col", dict(N=1031, C=130)),
                                         ("log_softmax", dict(M=33, N=130))])
def test_values_in_place(name, sizes, dtype):
    f = _func(open(f"{SAMPLE_DIR}/{name}.gir").read(), dtype)
    _check(f, sizes, seed=len(name))


def test_softmax_axis0_wider_slab_near_the_roofline():
    # N=3000 B=4 C=700: 1.258x the DMA roofline with the result tile, 1.209x without (timing-only simulation)
    f = parse_text(open(f"{SAMPLE_DIR}/softmax_axis0.gir").read(), "softmax_axis0.gir").funcs[0]
    sizes = dict(N=3000, B=4, C=700)
    r = run_func(f, None, sizes, values=False)
    assert r.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < 1.23
