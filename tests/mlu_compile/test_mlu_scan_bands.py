"""Scans along the last axis and the axis before it in one MLU kernel whose tasks walk several bands of rows each
(passes/schedule_mlu/scan_cross.py `_build`, `between`; scan_sram.py: each band's kept tiles in their own part
of the core's SRAM): narrower lane chunks for rows off the 64-byte DMA granule (longer row segments), and more
batches than cores.

Values against the evaluator with the several-bands kernel forced (one band per task refused, the fused kernel
estimated cheapest) for seeded random programs (every op, both directions, exclusive forms, f32 / f16 / bf16 /
i32, per-column and per-row operands, 3-D tensors, bands not dealt evenly, SRAM keeping only some tiles of each
band), the static checks on every kernel, and the simulated time of samples/cumsum.gir at sizes whose rows are
off the granule, where the cost model picks the several-bands kernel."""
from __future__ import annotations

import random
import re

import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.passes.schedule_mlu import scan_cross, scan_group

from tests.mlu_compile.test_mlu_scan_cross import fused_first, program  # noqa: F401 (a fixture)
from tests.mlu_compile.test_mlu_tiles import _check


@pytest.fixture
def several_bands(monkeypatch, fused_first):  # noqa: F811
    """One band per task refused: the kernel takes the lane chunks that leave several bands to some tasks."""
    monkeypatch.setattr(scan_cross, "_one_band_each", lambda p, cands=None: False)
    sized = scan_cross.sized
    monkeypatch.setattr(scan_cross, "sized", lambda plans, make, most, seconds, fits=None: sized(
        plans, make, most, seconds, lambda q: q.units > q.tasks))


def _bands(e: ir.Func) -> int:
    """Bands of the fused kernel: the points of a totals array but its positions (0: no fused kernel)."""
    tots = [s for s in e.body if isinstance(s, ir.Alloc) and re.search(r"_mlu_tot\d+$", s.name)]
    if not tots:
        return 0
    n = 1
    for d in tots[0].type.shape[:-1]:
        n *= d
    return n


def bands_program(seed: int) -> tuple[str, dict]:
    """test_mlu_scan_cross's random programs at sizes with more than 32 bands of the lane chunk plan.choose picks."""
    text, sizes = program(seed)
    rng = random.Random(seed + 1000)
    if "B" in sizes:
        sizes.update(B=rng.choice((33, 37, 40)), M=rng.choice((1, 33, 70, 130)), N=rng.choice((5, 33, 97)))
    else:
        sizes.update(M=rng.choice((2111, 2500, 3001)), N=rng.choice((1, 7, 65, 97, 300)))
    return text, sizes


@pytest.mark.parametrize("seed", range(16))
def test_random_programs_on_several_bands(seed, several_bands):
    text, sizes = bands_program(seed)
    f = parse_text(text).funcs[0]
    e = _check(f, sizes, seed)
    assert _bands(e) > 32, (sizes, _bands(e))


@pytest.mark.parametrize("seed", (2, 7, 8, 9))
def test_several_bands_with_little_sram(seed, several_bands, monkeypatch):
    """SRAM keeps only some tiles of each band: the rest are read again on the walk back (said)."""
    from gir.passes.schedule_mlu import schedule_mlu
    monkeypatch.setattr(scan_group, "SRAM_BUDGET", 256 * 1024)
    text, _ = program(seed)
    assert text.count("[M, N]") >= 3   # (rank 2)
    sizes = {"M": 2111, "N": 700}
    f = parse_text(text).funcs[0]
    remarks: list = []
    schedule_mlu(f, sizes, remarks=remarks)
    again = [r.message for r in remarks if "are read again" in r.message and "bands of rows" in r.message]
    assert again, [r.message for r in remarks]
    e = _check(f, sizes, seed)
    assert _bands(e) > 32


SAMPLE = open("samples/cumsum.gir").read()


@pytest.mark.parametrize("sizes,bound,before", [({"M": 8191, "N": 509}, 1.50, 1.705),
                                                ({"M": 4099, "N": 1021}, 1.45, 1.746),
                                                ({"M": 4096, "N": 1021}, 1.38, 1.441)])
def test_sample_time_off_the_granule(sizes, bound, before):
    """samples/cumsum.gir with rows off the 64-byte granule: one kernel of narrower lane chunks, several bands per
    task (measured 1.465x, 1.411x, 1.344x the DMA roofline); before, 256 lanes of 64-position segments (8,191 x
    509), two kernels (4,099 x 1,021) and 128 lanes of 128 positions (4,096 x 1,021)."""
    from gir.targets.mlu.run import run_func
    f = parse_text(SAMPLE).funcs[0]
    res = run_func(f, None, sizes, values=False)
    assert len(res.stats["kernels"]) == 1
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < bound < before
