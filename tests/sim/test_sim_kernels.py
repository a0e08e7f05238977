"""The SIMT simulator on hand-written explicit kernels: values against numpy, exact sector counts,
races, barrier divergence and out-of-bounds accesses."""
import numpy as np
import pytest

from gir.errors import GirError
from gir.targets.sim import run_func
from tests.sim.conftest import ROOT, load_kernel, parse_func

from gir.parser import parse_file


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("m", [7, 1])
def test_softmax_rows_sample(rng, m):
    func = parse_file(ROOT / "samples/explicit/softmax_rows.gir").funcs[0]
    x = rng.standard_normal((m, 1024)).astype(np.float32)
    run = run_func(func, {"x": x})
    np.testing.assert_allclose(run.outputs["y"], softmax_ref(x), rtol=1e-5, atol=1e-8)
    assert run.outputs["y"].dtype == np.float32
    assert run.races == []
    # each row read once and written once, in full 32-byte sectors; 3 barriers per block
    assert run.stats.global_read_bytes == m * 1024 * 4 == run.stats.useful_read_bytes
    assert run.stats.global_write_bytes == m * 1024 * 4
    assert run.stats.barriers == 3 * m
    load = next(s for s in run.stats.instrs.values() if s.kind == "load")
    assert load.executions == m * 4 * 2 and load.sectors == load.executions * 16  # 32 lanes x 16 B


@pytest.mark.parametrize("n", [1000, 1025, 1])
def test_vector_add_masked_tail(rng, n):
    func = load_kernel("vadd_tail")
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    run = run_func(func, {"a": a, "b": b})
    np.testing.assert_array_equal(run.outputs["c"], a + b)
    sectors = -(-4 * n // 32)  # a contiguous range of n floats starting at 0
    assert run.stats.global_read_bytes == 2 * 32 * sectors
    assert run.stats.global_write_bytes == 32 * sectors
    assert run.stats.useful_read_bytes == 8 * n and run.stats.useful_write_bytes == 4 * n


def _row_segment_sectors(rows, cols, width, tile=32, threads_y=8):
    """Hand count for the tiled transpose: every warp access touches one row segment of <= 32 floats."""
    total = 0
    for bi in range(-(-rows // tile)):
        for bj in range(-(-cols // tile)):
            for ty in range(threads_y):
                for k in range(tile // threads_y):
                    r = bi * tile + ty + threads_y * k
                    c0, c1 = bj * tile, min(cols, bj * tile + tile)
                    if r < rows and c0 < c1:
                        total += len({(r * width + c) * 4 // 32 for c in range(c0, c1)})
    return total


@pytest.mark.parametrize("m,n", [(64, 64), (33, 45), (1, 1)])
def test_transpose_through_padded_shared_tile(rng, m, n):
    func = load_kernel("transpose_tile")
    x = rng.standard_normal((m, n)).astype(np.float32)
    run = run_func(func, {"x": x})
    np.testing.assert_array_equal(run.outputs["y"], x.T)
    assert run.races == []
    assert run.stats.global_read_bytes == 32 * _row_segment_sectors(m, n, n)
    assert run.stats.global_write_bytes == 32 * _row_segment_sectors(n, m, m)
    assert run.stats.shared_read_bytes == run.stats.shared_write_bytes == 4 * m * n
    assert run.stats.barriers == -(-m // 32) * -(-n // 32)


@pytest.mark.parametrize("m", [5, 1])
def test_warp_shuffle_allreduce(rng, m):
    func = load_kernel("warp_rowsum")
    x = rng.standard_normal((m, 64)).astype(np.float32)
    run = run_func(func, {"x": x})
    np.testing.assert_allclose(run.outputs["y"], x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    lane_max = x.reshape(m, 32, 2).max(2)
    group_max = np.repeat(lane_max.reshape(m, 4, 8).max(2), 8, axis=1)  # groups of 8 consecutive lanes
    np.testing.assert_array_equal(run.outputs["g"], group_max)


def test_planted_shared_race_is_detected(rng):
    func = load_kernel("race_shared")
    x = rng.standard_normal(32).astype(np.float32)
    with pytest.raises(GirError) as err:
        run_func(func, {"x": x})
    text = err.value.format()
    assert "data race on 'sh'" in text and err.value.loc.line == 10
    assert "thread" in text and "race_shared.gir:9:" in text
    run = run_func(func, {"x": x}, on_race="collect")
    assert {r.buffer for r in run.races} == {"sh"}
    assert run_func(func, {"x": x}, check_races=False).races == []


def test_sync_removes_the_race(rng):
    text = (ROOT / "tests/sim/kernels/race_shared.gir").read_text()
    fixed = text.replace("        copy r[0:1] <- sh", "        sync @block\n        copy r[0:1] <- sh")
    run = run_func(parse_func(fixed), {"x": (x := rng.standard_normal(32).astype(np.float32))})
    assert run.races == []
    np.testing.assert_array_equal(run.outputs["y"], x[::-1])


def test_barrier_divergence_is_detected(rng):
    func = load_kernel("diverge")
    with pytest.raises(GirError) as err:
        run_func(func, {"x": rng.standard_normal(64).astype(np.float32)})
    assert "barrier divergence" in err.value.message and err.value.loc.line == 9
    assert "thread 0 reaches it, thread 32 does not" in err.value.format()


SECTOR_KERNELS = """
func access(x: f32[32, 32], v: f32[4, 128]) -> (a: f32[32, 32], b: f32[32, 32], c: f32[4, 128], d: f32[4, 128]) {
  kernel strided {
    parallel blk in 0..1 @block {
      parallel l in 0..32 @thread {
        alloc r: f32[32] @reg
        for k in 0..32 {
          load r[k:k + 1] <- x[l, k:k + 1]
        }
        store a[l, 0:32] <- r[0:32]
      }
    }
  }
  kernel coalesced {
    parallel blk in 0..1 @block {
      parallel l in 0..32 @thread {
        alloc r: f32[32] @reg
        for k in 0..32 {
          load r[k:k + 1] <- x[k, l:l + 1]
        }
        for k in 0..32 {
          store b[k, l:l + 1] <- r[k:k + 1]
        }
      }
    }
  }
  kernel vec4 {
    parallel blk in 0..1 @block {
      parallel l in 0..32 @thread {
        alloc r: f32[4, 4] @reg
        for k in 0..4 {
          load r[k, 0:4] <- v[k, l * 4:l * 4 + 4] with vec=4
          store c[k, l * 4:l * 4 + 4] <- r[k, 0:4] with vec=4
        }
      }
    }
  }
  kernel scalar4 {
    parallel blk in 0..1 @block {
      parallel l in 0..32 @thread {
        alloc r: f32[4, 4] @reg
        for k in 0..4 {
          load r[k, 0:4] <- v[k, l * 4:l * 4 + 4]
          store d[k, l * 4:l * 4 + 4] <- r[k, 0:4] with vec=4
        }
      }
    }
  }
}
"""


def test_sector_counts_strided_vs_coalesced(rng):
    func = parse_func(SECTOR_KERNELS)
    x, v = rng.standard_normal((32, 32)).astype(np.float32), rng.standard_normal((4, 128)).astype(np.float32)
    run = run_func(func, {"x": x, "v": v})
    for name in "ab":
        np.testing.assert_array_equal(run.outputs[name], x)
    for name in "cd":
        np.testing.assert_array_equal(run.outputs[name], v)
    loads = {s.kernel: s for s in run.stats.instrs.values() if s.kind == "load"}
    # lane l reads row l: 32 lanes hit 32 different 128-byte rows -> 32 sectors per warp access
    assert (loads["strided"].executions, loads["strided"].sectors) == (32, 32 * 32)
    # lane l reads column l of one row: 128 contiguous bytes -> 4 sectors
    assert (loads["coalesced"].executions, loads["coalesced"].sectors) == (32, 32 * 4)
    # float4: 32 lanes x 16 bytes = 512 contiguous bytes -> 16 sectors per access, 4 accesses
    assert (loads["vec4"].executions, loads["vec4"].sectors) == (4, 4 * 16)
    # the same region with scalar accesses: 4 instructions per row, each spread over 512 bytes
    assert (loads["scalar4"].executions, loads["scalar4"].sectors) == (16, 16 * 16)
    k = run.stats.kernels
    assert k["strided"].global_read_bytes == 32 * 32 * 32 and k["coalesced"].global_read_bytes == 4096
    assert k["strided"].useful_read_bytes == 4096
    # the strided kernel's store (lane l writes its 32-float row, scalar) is 32 instructions, each strided
    assert k["strided"].global_write_bytes == 32 * 32 * 32 and k["strided"].useful_write_bytes == 4096


OOB = """
func oob(x: f32[N]) -> (y: f32[N]) {
  kernel oob {
    parallel b in 0..cdiv(N, 128) @block {
      parallel t in 0..32 @thread {
        alloc r: f32[4] @reg
        load r[0:4] <- x[b * 128 + t * 4:b * 128 + t * 4 + 4]
        store y[b * 128 + t * 4:b * 128 + t * 4 + 4] <- r[0:4] with mask
      }
    }
  }
}
"""


def test_out_of_bounds_load_names_instruction_and_instance(rng):
    func = parse_func(OOB)
    run = run_func(func, {"x": rng.standard_normal(256).astype(np.float32)})  # no tail: fine
    assert not np.isnan(run.outputs["y"]).any()
    with pytest.raises(GirError) as err:
        run_func(func, {"x": rng.standard_normal(130).astype(np.float32)})
    text = err.value.format()
    assert err.value.loc.line == 7 and "out-of-bounds access to 'x'" in text
    assert "index [130]" in text and "block b=1, thread 0" in text


GLOBAL_RACE = """
func last(x: f32[N]) -> (y: f32[1]) {
  kernel last {
    parallel b in 0..N @block {
      parallel t in 0..1 @thread {
        alloc r: f32[1] @reg
        load r[0:1] <- x[b:b + 1]
        store y[0:1] <- r[0:1]
      }
    }
  }
}
"""


def test_global_write_race_across_blocks(rng):
    func = parse_func(GLOBAL_RACE)
    with pytest.raises(GirError, match="data race on 'y'"):
        run_func(func, {"x": rng.standard_normal(3).astype(np.float32)})
    run = run_func(func, {"x": rng.standard_normal(1).astype(np.float32)})  # one writer: no race
    assert run.races == []


EXCHANGE = """
func exchange(x: f32[N, 64]) -> (y: f32[N, 64]) {
  alloc tmp: f32[N, 64] @global
  kernel exchange {
    parallel b in 0..N @block {
      parallel t in 0..64 @thread {
        alloc r: f32[1] @reg
        load r[0:1] <- x[b, t:t + 1]
        r[0:1] = r[0:1] * 3.0
        store tmp[b, t:t + 1] <- r[0:1]
        SYNC
        load r[0:1] <- tmp[b, 63 - t:64 - t]
        store y[b, t:t + 1] <- r[0:1]
      }
    }
  }
}
"""


def test_global_exchange_within_a_block(rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    run = run_func(parse_func(EXCHANGE.replace("SYNC", "sync @block")), {"x": x})
    assert run.races == []
    np.testing.assert_array_equal(run.outputs["y"], 3 * x[:, ::-1])
    with pytest.raises(GirError, match="data race on 'tmp'"):
        run_func(parse_func(EXCHANGE.replace("SYNC", "")), {"x": x})


HALF = """
func half(x: f32[M, 8]) -> (y: f32[M, 8]) {
  t[i, j] = x[i, j] * 2.0 + 1.0
  kernel half {
    parallel b in 0..M @block {
      parallel l in 0..4 @thread {
        alloc r: f32[1] @reg
        load r[0:1] <- t[b, l:l + 1]
        store y[b, l:l + 1] <- r[0:1]
      }
    }
  }
}
"""


def test_operator_items_and_unwritten_results_are_nan(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    y = run_func(parse_func(HALF), {"x": x}).outputs["y"]
    np.testing.assert_array_equal(y[:, :4], x[:, :4] * 2 + 1)
    assert np.isnan(y[:, 4:]).all()  # never written: NaN, not zeros


@pytest.mark.parametrize("n", [512, 300, 1])
def test_mlu_cluster_core_kernel(rng, n):
    func = load_kernel("mlu_reverse")
    x = rng.standard_normal(n).astype(np.float32)
    run = run_func(func, {"x": x})
    xp = np.zeros(-(-n // 256) * 256, np.float32)
    xp[:n] = x
    want = (2 * xp.reshape(-1, 4, 64)[:, ::-1]).reshape(-1)[:n]
    np.testing.assert_array_equal(run.outputs["y"], want)
    assert run.races == [] and run.stats.barriers == -(-n // 256)
    assert run.stats.shared_write_bytes == run.stats.shared_read_bytes == 4 * len(xp)


def test_mlu_missing_cluster_barrier_is_a_race(rng):
    text = (ROOT / "tests/sim/kernels/mlu_reverse.gir").read_text().replace("      sync @cluster\n", "")
    with pytest.raises(GirError, match="data race on 'park'"):
        run_func(parse_func(text), {"x": rng.standard_normal(512).astype(np.float32)})


def test_transpose_and_gather_cols_builtins():
    """The kernel-only builtins: transpose() of a 2-D tile, gather_cols() of one column per row (0 when the
    index is out of range)."""
    from pathlib import Path

    from gir import parse_file
    from gir.targets.sim import run_func

    func = parse_file(Path(__file__).parent / "kernels" / "transpose_gather_builtins.gir").funcs[0]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = np.array([3, 0, 9, -1], np.float32)
    out = run_func(func, {"x": x, "t": t}).outputs
    np.testing.assert_array_equal(out["y"], x.T)
    np.testing.assert_array_equal(out["z"], [x[0, 3], x[1, 0], 0.0, 0.0])
