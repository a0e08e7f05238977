"""How work units split over the 32 MLU cores: balanced, and long enough to pipeline (issue 12 item 3 at sizes
off the report's powers of two). Timing-only simulation against the DMA roofline, and the splitting rules
themselves."""
from __future__ import annotations

from pathlib import Path

import pytest

from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_file
from gir.passes.schedule_mlu.indexops import FILL, _split
from gir.targets.mlu.run import run_func

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "samples"


def _ratio(name: str, sizes: dict) -> float:
    f = parse_file(str(SAMPLE_DIR / f"{name}.gir")).funcs[0]
    res = run_func(f, None, sizes, values=False)
    return res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9)


@pytest.mark.parametrize("nl, ts", [(45, 32), (45, 8), (3, 200), (64, 32), (1, 7), (100, 3), (33, 64)])
def test_slab_parts_keep_units_pipelined(nl, ts):
    """A unit's tiles run in one pipelined loop: splitting slabs into one-tile units balances the cores but
    overlaps nothing, so the busiest core's (tiles + 1 per unit) is what is minimised."""
    p, k = _split(nl, ts, 32, 32, 0)
    assert p * k >= ts and (p - 1) * k < ts          # P parts of K tiles cover the slab, none empty
    busiest = -(-nl * p // 32) * (k + FILL)
    for q in range(1, ts + 1):                        # no other split is faster on that count
        kq = -(-ts // q)
        assert busiest <= -(-nl * -(-ts // kq) // 32) * (kq + FILL)
    if ts >= 8 and nl * ts >= 4 * 32:
        assert k >= 2, (p, k)                         # units long enough to overlap loads and stores


@pytest.mark.parametrize("sizes, bound", [(dict(B=11, H=3, S=65), 7.0), (dict(B=40, H=1, S=65), 5.95)])
def test_causal_softmax_small_slabs_still_split(sizes, bound):
    # 33 / 40 slabs of 3 tiles: one unit per slab (a fill of a whole tile per unit) was 7.205x / 6.003x; 3 parts
    # of one tile each 6.853x / 5.821x (latency-bound sizes)
    assert _ratio("scaled_causal_softmax", sizes) < bound


def test_causal_softmax_with_45_slabs_near_the_roofline():
    # 45 slabs of 8 tiles: 360 one-tile units before (1.77x the DMA roofline), 2 parts of 4 tiles now (1.37x)
    assert _ratio("scaled_causal_softmax", dict(B=3, H=15, S=256)) < 1.5


@pytest.mark.parametrize("sizes, bound", [
    (dict(B=3, S=509, H=31, K=67), 1.35),   # 33 units on 32 cores before: one core ran two (1.562x)
    (dict(B=20, S=128, H=8, K=32), 1.30),   # 2 parts of 2 blocks before (1.424x); 1.224x
    (dict(B=48, S=64, H=8, K=32), 1.35),    # one-block parts (pipelining nothing) would be 1.562x; 1.310x
])
def test_rope_parts_balance_the_cores(sizes, bound):
    """Pair maps (tiles_pairs.balanced_parts): each batch's blocks cut into the parts whose busiest core takes
    the least time, a part of K blocks counted as K + 1 (its pipeline's ends). Simulated, timing-only."""
    assert _ratio("rope", sizes) < bound
