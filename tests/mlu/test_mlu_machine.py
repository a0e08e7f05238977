"""The machine description and its overrides; the front door of the parser."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gir.passes.machines import MachineError
from gir.targets.mlu import MLU370, MluError, MluMachine, launch_shape, parse_program, simulate


def test_defaults_describe_an_mlu370():
    assert MLU370.clusters * MLU370.cores_per_cluster == 32
    assert MLU370.nram_bytes == 768 * 1024 and MLU370.wram_bytes == 1024 * 1024
    assert MLU370.sram_bytes == 4 * 1024 * 1024
    assert MLU370.gdram_bandwidth == 307e9 and MLU370.clock_hz == 1e9
    assert MLU370.dma_granularity == 64 and MLU370.vector_unit_bytes == 128
    assert MLU370.cycles_special > MLU370.cycles_simple


def test_every_field_is_documented():
    doc = MluMachine.__doc__
    for field in dataclasses.fields(MluMachine):
        if field.name != "name":
            assert field.name in doc, field.name


def test_overrides_from_strings_and_dicts():
    m = MluMachine.from_overrides(["clusters=2", "gdram_bandwidth=1.5e11", "nram_bytes=0x40000"])
    assert (m.clusters, m.gdram_bandwidth, m.nram_bytes) == (2, 150e9, 256 * 1024)
    assert MluMachine.from_overrides({"cycles_special": "4"}).cycles_special == 4.0
    assert MluMachine.from_overrides("clusters=1,cores_per_cluster=2").total_cores == 2
    assert dataclasses.replace(MLU370, clusters=4).clusters == 4
    with pytest.raises(MachineError, match="unknown machine parameter 'cluster'"):
        MluMachine.from_overrides(["cluster=2"])
    with pytest.raises(MachineError, match="expects int"):
        MluMachine.from_overrides(["clusters=many"])
    with pytest.raises(MachineError, match="'gdram_bandwidth' must be positive"):
        MluMachine.from_overrides(["gdram_bandwidth=0"])
    with pytest.raises(MachineError, match="key=value"):
        MluMachine.from_overrides(["clusters"])


def test_launch_shapes():
    assert launch_shape(1, MLU370) == (1, 1)
    assert launch_shape(3, MLU370) == (3, 1)
    assert launch_shape("Union2", MLU370) == (8, 2)
    assert launch_shape("Block", MLU370) == (1, 1)
    with pytest.raises(MluError, match="exceeds the 32 cores"):
        launch_shape(64, MLU370)


def test_smaller_machine_changes_capacity_checks():
    text = "__mlu_global__ void k() {\n  __nram__ float a[65536];\n}\n"
    program = parse_program(text)
    simulate(program, "k", {}, 1)
    small = MluMachine.from_overrides(["nram_bytes=131072"])
    with pytest.raises(MluError, match="NRAM overflow"):
        simulate(program, "k", {}, 1, machine=small)


def test_lexical_details():
    text = """
#include <bang.h>
/* block
   comment */
const int T = 0x20 * 2;   // 64
__mlu_global__ void k(const float* x, float *y, int n) {
  __nram__ float a[T];
  float s = 1.5e-1f + .25 - 1.f;
  for (int i = 0; i < T; i++) { a[i] = s * (float)i; }
  __memcpy(y, a, T * sizeof_float, NRAM2GDRAM);
}
__mlu_global__ void other(int* z) { return; }
"""
    with pytest.raises(MluError, match="use of undeclared name 'sizeof_float'"):
        simulate(parse_program(text), "k", dict(x=np.ones(64, np.float32), y=np.ones(64, np.float32), n=1), 1)
    program = parse_program(text.replace("sizeof_float", "sizeof(float)"))
    assert sorted(program.kernels) == ["k", "other"]
    y = simulate(program, "k", dict(x=np.ones(64, np.float32), y=np.ones(64, np.float32), n=1), 1).outputs["y"]
    np.testing.assert_allclose(y, np.float32(0.15 + 0.25 - 1.0) * np.arange(64), rtol=1e-6)
