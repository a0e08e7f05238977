"""Traffic counts against hand-computed numbers."""
import random

from gir.passes.analysis.traffic import compulsory_bytes, kernel_traffic
from tests.analysis.conftest import load


def traffic(name, sizes):
    f = load(name)
    return f, kernel_traffic(f, f.kernels[0], sizes)


def test_softmax_rows():
    f, t = traffic("softmax_rows", {"M": 3})
    assert t.total("global", "read") == 3 * 1024 * 4 == t.total("global", "write")
    assert t.total("shared", "write") == 2 * 3 * 4 * 4  # two partial results per warp, lane 0 only
    assert t.total("shared", "read") == 2 * 3 * 128 * 4 * 4  # every thread reads the 4 partials twice
    assert compulsory_bytes(f, {"M": 3}) == (3 * 1024 * 4, 3 * 1024 * 4)
    s0 = t.instrs[0].accesses[0]
    assert (s0.sectors, s0.ideal_sectors, s0.stride) == (16, 16, 4)  # float4 per lane: 512 B per warp


def test_masked_tail_counts_only_in_bounds():
    _, t = traffic("copy_tail_masked", {"M": 2})
    assert t.total("global", "read") == 2 * 1000 * 4  # 24 lanes of the last chunk are clipped
    assert t.total("reg", "write") == 2 * 256 * 4 * 4


def test_transpose_shared_tile():
    _, t = traffic("shared_tile_ok", {"M": 40, "N": 50})
    assert t.total("global", "read") == 40 * 50 * 4
    assert t.total("shared", "write") == 2 * 2 * 256 * 4 * 4  # cdiv(40,32) x cdiv(50,32) blocks


def test_scalar_grid_stride_random_sizes():
    rng = random.Random(0)
    for m, n in [(1, 1), (3, 300), (rng.randint(1, 7), rng.randint(1, 700))]:
        _, t = traffic("copy_scalar", {"M": m, "N": n})
        assert t.total("global", "read") == m * n * 4 == t.total("global", "write")


def test_strided_columns_are_uncoalesced():
    _, t = traffic("colsum_strided", {"N": 37})
    assert t.total("global", "read") == 64 * 37 * 4 and t.total("global", "write") == 37 * 4
    acc = t.instrs[0].accesses[0]
    assert (acc.sectors, acc.ideal_sectors, acc.stride) == (32, 4, 37)
