"""The MLU cost model counts GDRAM bytes as the simulator does (passes/schedule_mlu/cost_regions.py `gdram_bytes`,
targets/mlu/dma.py): granules a segment touches, segments that start off the 64-byte grid (rows whose byte
stride is not a multiple of 64), a granule read again per partially written one, both sides of a GDRAM-to-GDRAM
copy. The estimate ranks tile sizes by these bytes, so they must agree (within 2%: a loop whose body depends on its
variable, a masked tail tile, is estimated as the mean of its first and last trips): scheduled programs with
aligned and misaligned rows, and a permutation copied GDRAM to GDRAM."""

import pytest

from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.cost import estimate
from gir.targets.mlu.run import run_func

CASES = [
    ("func f(x: f16[M, N]) -> (y: f16[M, N]) {\n  y[i, j] = cumsum(x[i, j], j)\n}\n", {"M": 8192, "N": 300}),
    ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cummax(x[i, j], i, reverse=1)\n}\n", {"M": 4099, "N": 37}),
    ("func f(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = sum(x[i, j])\n}\n", {"M": 512, "N": 1025}),
    ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  m[i] = max(x[i, j])\n  e[i, j] = exp(x[i, j] - m[i])\n"
     "  s[i] = sum(e[i, j])\n  y[i, j] = e[i, j] / s[i]\n}\n", {"M": 300, "N": 1000}),
    ("func f(x: bf16[M, N]) -> (y: bf16[N, M]) {\n  y[j, i] = x[i, j]\n}\n", {"M": 333, "N": 517}),
    # a GDRAM-to-GDRAM copy (whole [S, D] planes of a 0213 permutation): the bytes of both sides
    ("func f(x: f32[B, S, H, D]) -> (y: f32[B, H, S, D]) {\n  y[b, h, s, d] = x[b, s, h, d]\n}\n",
     {"B": 2, "S": 256, "H": 16, "D": 64}),
]


@pytest.mark.parametrize("src,sizes", CASES)
def test_estimated_gdram_bytes_are_the_simulated_ones(src, sizes):
    f = parse_text(src).funcs[0]
    explicit = schedule_mlu(f, sizes)
    est = estimate(explicit).gdram_bytes
    sim = run_func(explicit, None, sizes, values=False).stats["gdram_traffic_bytes"]
    assert est == pytest.approx(sim, rel=0.02), (est, sim)   # (tail tiles: the mean of first and last trips)
