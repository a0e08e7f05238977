"""Work split of the MLU permutations (passes/schedule_mlu/transpose.py): 2-D transposes spread (column chunk,
row part) units over the cores and permute0213-style slab copies split S, so mid-size shapes keep every core busy.
Values stay bit-exact for every decomposition (forced plans cover each code path at small sizes: parts with and
without full tiles, the row tail in the last part, the column tail's own parts starting on a rotated core)."""
import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu import transpose as T
from gir.passes.schedule_mlu.slab_copy import slab_rows
from gir.targets.bench.programs import program_text
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func


def _tr(dt):
    return parse_text(f"func tr(x: {dt}[M, N]) -> (y: {dt}[N, M]) {{\n  y[j, i] = x[i, j]\n}}\n").funcs[0]


def _check_exact(f, sizes, seed):
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    got = run_func(f, x, sizes).outputs["y"]
    want = np.asarray(evaluate(f, x, sizes)["y"]).astype(got.dtype)
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), sizes


def _ratio(f, sizes, nbytes):
    r = run_func(f, None, sizes, values=False)
    return r.stats["seconds"] / (nbytes / MLU370.gdram_bandwidth)


# 300 x 200 with 64-row tiles: 4 full row tiles + a 44-row tail, 1 full column chunk + a 72-column tail.
# (k, kt) = (2, 3): 3 parts, the last one only the row tail; the column tail's 2 parts start on core 3.
# (1, 1): one tile per unit; (5, 5): one part per chunk (the unsplit distribution); (3, 1), (1, 5): mixed.
@pytest.mark.parametrize("k,kt", [(2, 3), (1, 1), (5, 5), (3, 1), (1, 5)])
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_forced_plans_bit_exact(monkeypatch, dt, k, kt):
    monkeypatch.setattr(T, "choose_plan", lambda *a: T.Plan(64, 128, k, kt))
    _check_exact(_tr(dt), {"M": 300, "N": 200}, seed=k * 10 + kt)


@pytest.mark.parametrize("dt,m,n", [("f32", 1000, 777), ("f16", 777, 1000), ("f32", 1100, 300), ("bf16", 600, 2100),
                                    ("bool", 3000, 700)])
def test_chosen_split_bit_exact(dt, m, n):
    """Mid-size shapes at the plans the scheduler picks (split into row parts), tails on both axes; the tallest
    tiles of each element size (f32 256 rows, 16-bit 512, bool 1024) with a row tail."""
    plan = T.choose_plan(m, n, L.device_nbytes(dt))
    assert plan.rb % 64 == 0 and plan.cb == 128                        # dense tiles for __bang_transpose
    assert -(-m // plan.rb) > plan.k                                    # the row tiles really are split
    _check_exact(_tr(dt), {"M": m, "N": n}, seed=m + n)


@pytest.mark.parametrize("dt,es,limit", [("f32", 4, 1.3), ("f16", 2, 1.6)])
def test_mid_size_uses_every_core(dt, es, limit):
    """1000 x 777 has 7 column chunks: spread over the cores alone they took 1.58x (f32) / 2.18x (f16) the DMA
    roofline; (chunk, row part) units bring it to ~1.23x / ~1.44x (the rest is segment traffic of unaligned rows)."""
    assert _ratio(_tr(dt), {"M": 1000, "N": 777}, 2 * 1000 * 777 * es) < limit


@pytest.mark.parametrize("m,n", [(4096, 1024), (2048, 2048)])
def test_few_chunks_reach_full_chip_ratio(m, n):
    """8 or 16 column chunks: was 1.147x / 1.073x (DMA start-ups of a few cores not hidden), now like 8192 x 8192."""
    assert _ratio(_tr("f32"), {"M": m, "N": n}, 2 * m * n * 4) < 1.045


def test_large_keeps_one_part_per_chunk():
    """8192 x 8192: 64 chunks fill the cores, so each chunk stays one pipelined unit (1.037x, as before)."""
    for es in (4, 2):
        plan = T.choose_plan(8192, 8192, es)
        assert plan.k == 8192 // plan.rb and plan.rb * 128 * es == T.TILE_BYTES
    assert _ratio(_tr("f16"), {"M": 8192, "N": 8192}, 2 * 8192 * 8192 * 2) < 1.04


def _permute(dt):
    return parse_text(program_text("permute0213", dt)).funcs[0]


@pytest.mark.parametrize("sizes", [dict(B=1, S=300, H=2, D=24), dict(B=1, S=1000, H=1, D=3),
                                   dict(B=2, S=77, H=1, D=64)])
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_slab_parts_bit_exact(dt, sizes):
    """Few slabs: S is cut into parts (the last one shorter); values unchanged."""
    es = 4 if dt == "f32" else 2
    assert slab_rows(sizes["B"] * sizes["H"], sizes["S"], sizes["D"] * es) < sizes["S"]
    _check_exact(_permute(dt), sizes, seed=sizes["S"] + sizes["D"])


@pytest.mark.parametrize("sizes,limit", [(dict(B=1, S=4096, H=4, D=64), 1.06), (dict(B=1, S=8192, H=1, D=64), 1.1)])
def test_few_slabs_near_roofline(sizes, limit):
    """4 slabs took 1.22x (4 DMA ports < the chip's bandwidth), 1 slab 4.8x; parts of S bring both near 1."""
    n = sizes["B"] * sizes["S"] * sizes["H"] * sizes["D"]
    assert _ratio(_permute("f32"), sizes, 2 * n * 4) < limit
