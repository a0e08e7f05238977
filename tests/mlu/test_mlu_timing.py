"""Sanity of the timing model against first-principles numbers of the machine description."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mlu_testutil import rand
from gir.targets.mlu import MLU370, parse_program, simulate

COPY = """
const int T = 32768;   // floats per tile: 128 KiB
__mlu_global__ void copy(float* x, float* y, int n) {
  __nram__ float buf[2 * T];
  int per = n / taskDim;
  int start = taskId * per;
  for (int i = 0; i < per; i += T) {
    float* b = buf + (i / T % 2) * T;
    __memcpy_async(b, x + start + i, T * 4, GDRAM2NRAM);
    __sync_io();
    __memcpy_async(y + start + i, b, T * 4, NRAM2GDRAM);
  }
}
"""

DIRECT = """
__mlu_global__ void copy(float* x, float* y, int n) {
  int per = n / taskDim;
  __memcpy(y + taskId * per, x + taskId * per, per * 4, GDRAM2GDRAM);
}
"""


@pytest.mark.parametrize("text", [COPY, DIRECT], ids=["through-nram", "gdram2gdram"])
def test_large_copy_runs_at_gdram_bandwidth(text):
    n = 8 * 1024 * 1024  # 32 MiB each way
    rng = np.random.default_rng(1)
    x = rand(rng, n)
    result = simulate(parse_program(text), "copy", dict(x=x, y=np.ones(n, np.float32), n=n), 32)
    np.testing.assert_array_equal(result.outputs["y"], x)
    moved = 2 * n * 4
    assert result.bytes["gdram_traffic_bytes"] == moved
    assert result.seconds == pytest.approx(moved / MLU370.gdram_bandwidth, rel=0.10)


def test_one_core_is_limited_by_its_dma_port():
    n = 1024 * 1024
    x = rand(np.random.default_rng(2), n)
    result = simulate(parse_program(DIRECT), "copy", dict(x=x, y=np.ones(n, np.float32), n=n), 1)
    assert result.seconds == pytest.approx(2 * n * 4 / MLU370.core_dma_bandwidth, rel=0.05)


def test_contention_shares_gdram_bandwidth():
    """Four cores copying at once take longer each than one core alone, but less than four times as long."""
    n = 4 * 1024 * 1024
    x = rand(np.random.default_rng(3), n)
    program = parse_program(DIRECT)
    slow_gdram = dataclasses.replace(MLU370, gdram_bandwidth=100e9)
    one = simulate(program, "copy", dict(x=x[: n // 4], y=np.ones(n // 4, np.float32), n=n // 4), 1,
                   machine=slow_gdram)
    four = simulate(program, "copy", dict(x=x, y=np.ones(n, np.float32), n=n), 4, machine=slow_gdram)
    assert one.seconds == pytest.approx(2 * n * 4 / 4 / 64e9, rel=0.05)   # port-bound alone
    assert four.seconds == pytest.approx(2 * n * 4 / 100e9, rel=0.05)     # GDRAM-bound together


STORE = """
__mlu_global__ void store(float* y, int count, int offset, int reps) {
  __nram__ float buf[64];
  __bang_write_value(buf, 64, 1.5);
  for (int r = 0; r < reps; r++) {
    __memcpy(y + offset + r * 64, buf, count * 4, NRAM2GDRAM);
  }
}
"""


def test_misaligned_gdram_writes_cost_read_modify_write():
    program = parse_program(STORE)
    y = np.zeros(64 * 65, np.float32)

    def run(count, offset):
        return simulate(program, "store", dict(y=y, count=count, offset=offset, reps=64), 1)

    aligned, shifted, short = run(64, 0), run(64, 1), run(15, 0)
    assert aligned.bytes["gdram_rmw_bytes"] == 0
    assert aligned.bytes["gdram_traffic_bytes"] == 64 * 256
    assert shifted.bytes["gdram_traffic_bytes"] == 64 * (320 + 128)  # 5 segments written, 2 partial ones read
    assert short.bytes["gdram_traffic_bytes"] == 64 * (64 + 64)      # 60 bytes: one segment, read-modify-write
    assert shifted.cycles > aligned.cycles
    np.testing.assert_array_equal(shifted.outputs["y"][1:1 + 64 * 64], 1.5)
    assert shifted.outputs["y"][0] == 0


def test_vector_cost_follows_op_class():
    text = """
    __mlu_global__ void k(float* y) {
      __nram__ float a[8192];
      __bang_write_value(a, 8192, 0.5);
      for (int i = 0; i < 10; i++) { __bang_active_%s(a, a, 8192); }
      __memcpy(y, a, 128, NRAM2GDRAM);
    }"""
    y = np.zeros(32, np.float32)
    cheap = simulate(parse_program(text % "abs"), "k", dict(y=y), 1)
    costly = simulate(parse_program(text % "exp"), "k", dict(y=y), 1)
    units = 8192 * 4 // 128
    extra = 10 * units * (MLU370.cycles_special - MLU370.cycles_simple)
    assert costly.cycles - cheap.cycles == pytest.approx(extra)
    assert costly.pipe_busy["compute"] == pytest.approx(11 * MLU370.vector_op_cycles + units + 10 * units * 8)
