"""How work units split over the 32 MLU cores: balanced, and long enough to pipeline (issue 12 item 3 at sizes
off the report's powers of two). Timing-only simulation against the DMA roofline, and the splitting rules
themselves."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_file
from gir.passes.schedule_mlu.indexops import _split
from gir.passes.schedule_mlu.tiles_pairs import balanced_parts
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
    busiest = -(-nl * p // 32) * (k + 1)
    for q in range(1, ts + 1):                        # no other split is faster on that count
        kq = -(-ts // q)
        assert busiest <= -(-nl * -(-ts // kq) // 32) * (kq + 1)
    if ts >= 8 and nl * ts >= 4 * 32:
        assert k >= 2, (p, k)                         # units long enough to overlap loads and stores


def test_causal_softmax_with_45_slabs_near_the_roofline():
    # 45 slabs of 8 tiles: 360 one-tile units before (1.77x the DMA roofline), 2 parts of 4 tiles now (1.37x)
    assert _ratio("scaled_causal_softmax", dict(B=3, H=15, S=256)) < 1.5


@pytest.mark.parametrize("units, nblk", [(3, 254), (2, 256), (1, 4099), (5, 1000), (7, 3), (33, 10), (1, 1)])
def test_pair_parts_balance_the_cores(units, nblk):
    bp, parts = balanced_parts(units, nblk, 0.5, 65536.0, 4, 32)
    assert bp * parts >= nblk and bp * (parts - 1) < nblk
    blocks = np.bincount(np.arange(units * parts) % 32,
                         np.tile([bp] * (parts - 1) + [nblk - (parts - 1) * bp], units), 32)
    mean = units * nblk / 32
    assert blocks.max() <= max(1.2 * mean, -(-nblk // (-(-32 // units))) + 1, 1), (bp, parts, blocks.max(), mean)


def test_rope_with_three_batches_balances_the_cores():
    # 3 batches cut into 11 parts made 33 units: one core ran two (1.56x the DMA roofline); now 1.43x (the rest is
    # 536-byte rows off the 64-byte granule)
    assert _ratio("rope", dict(B=3, S=509, H=31, K=67)) < 1.5
