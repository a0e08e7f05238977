"""Description of the simulated MLU370-like accelerator (numbers in `mlu370.json` beside this module).

Every number the MLU simulator, scheduler and cost models use comes from an `MluMachine`; change one with
``dataclasses.replace(MLU370, ...)`` or ``MluMachine.from_overrides(["gdram_bandwidth=200e9", "clusters=4"])``.
Bandwidths are in bytes per second, latencies and costs in cycles of ``clock_hz``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping

from gir.passes.machines import MachineError, machine_data

_D = machine_data("mlu370")


@dataclass(frozen=True)
class MluMachine:
    """An MLU370-like chip: clusters of compute cores plus one memory core per cluster.

    Topology and capacities
      clusters            -- clusters on the chip.
      cores_per_cluster   -- compute cores per cluster (coreId 0..cores_per_cluster-1). Each cluster also has one
                             memory core that runs no program; it is the DMA engine of GDRAM<->SRAM transfers.
      nram_bytes          -- NRAM (neuron RAM, vector operands) per core.
      wram_bytes          -- WRAM (weight RAM, right operand of __bang_matmul) per core.
      sram_bytes          -- SRAM (__mlu_shared__) per cluster, shared by its cores.
      clock_hz            -- core clock; all cycle counts below are in this clock.

    Data movement (a transfer = latency, then its bytes at a max-min fair share of every resource it uses)
      gdram_bandwidth     -- GDRAM bandwidth of the whole chip, shared by all transfers touching GDRAM.
      core_dma_bandwidth  -- cap of one core's DMA port (GDRAM<->NRAM/WRAM of that core).
      memcore_dma_bandwidth -- cap of one cluster's memory-core DMA (GDRAM<->SRAM of that cluster).
      sram_bandwidth      -- SRAM port bandwidth of one cluster, shared by SRAM<->NRAM/WRAM transfers of its cores.
      nram_move_bandwidth -- per-core on-chip move bandwidth (NRAM<->NRAM, NRAM<->WRAM).
      gdram_latency_cycles, sram_latency_cycles, move_latency_cycles -- fixed start-up cost of one transfer
                             (its slowest level decides: GDRAM, else SRAM, else on-core move).
      dma_granularity     -- GDRAM is accessed in segments of this many bytes, aligned to it: reads fetch the
                             covering segments; a write that covers a segment only partly costs a read-modify-write
                             (an extra segment read) of that segment.

    Vector (compute pipe)
      vector_unit_bytes   -- vector ops process this many bytes per unit; every vector length argument must make
                             each operand span a whole number of units.
      vector_align_bytes  -- every NRAM/WRAM operand of a __bang op must start at an address that is a multiple of
                             this (buffers are allocated at multiples of it).
      vector_op_cycles    -- fixed issue cost of one __bang op on the compute pipe.
      cycles_simple       -- per unit: add, sub, mul, max/min, abs, relu, neg, floor/ceil/round, compare, select,
                             write_value, cycle ops.
      cycles_div          -- per unit: div, recip, rdiv_scalar.
      cycles_special      -- per unit: exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, erf, pow, sin, cos, log1p, expm1,
                             softplus, silu, gelu_tanh.
      cycles_reduce       -- per unit of input: reduce_sum/max/min (full, rows, cols).
      cycles_transpose    -- per unit: transpose, mirror (row reversal).
      cycles_convert      -- per unit of the wider operand: float<->half/bfloat16/int conversions.
      matmul_flops_per_cycle -- __bang_matmul throughput (2*M*K*N flops).

    Control (scalar) thread
      scalar_cycles       -- one executed scalar statement / loop test / branch.
      scalar_access_cycles -- one scalar read or write of an on-chip element (buf[i]).
      sync_cluster_cycles -- cost of __sync_cluster() once all cores of the cluster arrived.
      sync_all_cycles     -- cost of __sync_all() once all cores of the launch arrived.
    """

    name: str = _D["name"]
    clusters: int = _D["clusters"]
    cores_per_cluster: int = _D["cores_per_cluster"]
    nram_bytes: int = _D["nram_bytes"]
    wram_bytes: int = _D["wram_bytes"]
    sram_bytes: int = _D["sram_bytes"]
    clock_hz: float = _D["clock_hz"]

    gdram_bandwidth: float = _D["gdram_bandwidth"]
    core_dma_bandwidth: float = _D["core_dma_bandwidth"]
    memcore_dma_bandwidth: float = _D["memcore_dma_bandwidth"]
    sram_bandwidth: float = _D["sram_bandwidth"]
    nram_move_bandwidth: float = _D["nram_move_bandwidth"]
    gdram_latency_cycles: float = _D["gdram_latency_cycles"]
    sram_latency_cycles: float = _D["sram_latency_cycles"]
    move_latency_cycles: float = _D["move_latency_cycles"]
    dma_granularity: int = _D["dma_granularity"]

    vector_unit_bytes: int = _D["vector_unit_bytes"]
    vector_align_bytes: int = _D["vector_align_bytes"]
    vector_op_cycles: float = _D["vector_op_cycles"]
    cycles_simple: float = _D["cycles_simple"]
    cycles_div: float = _D["cycles_div"]
    cycles_special: float = _D["cycles_special"]
    cycles_reduce: float = _D["cycles_reduce"]
    cycles_transpose: float = _D["cycles_transpose"]
    cycles_convert: float = _D["cycles_convert"]
    matmul_flops_per_cycle: float = _D["matmul_flops_per_cycle"]

    scalar_cycles: float = _D["scalar_cycles"]
    scalar_access_cycles: float = _D["scalar_access_cycles"]
    sync_cluster_cycles: float = _D["sync_cluster_cycles"]
    sync_all_cycles: float = _D["sync_all_cycles"]

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "name":
                continue
            costs = f.name.endswith("_cycles") or f.name.startswith("cycles_")
            if not isinstance(value, (int, float)) or value < 0 or (value == 0 and not costs):
                need = "non-negative" if costs else "positive"
                raise MachineError(f"machine parameter '{f.name}' must be {need}, got {value!r}")

    @property
    def total_cores(self) -> int:
        return self.clusters * self.cores_per_cluster

    def bytes_per_cycle(self, bandwidth: float) -> float:
        """A bandwidth in bytes/s expressed in bytes per cycle."""
        return bandwidth / self.clock_hz

    def op_class_cycles(self, op_class: str) -> float:
        """Cycles per vector unit of one op class (simple, div, special, reduce, transpose, convert)."""
        return getattr(self, f"cycles_{op_class}")

    def replace(self, **changes) -> "MluMachine":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, object] | Iterable[str], base: "MluMachine | None" = None
                       ) -> "MluMachine":
        """``base`` (default MLU370) with fields replaced.

        ``overrides`` is a dict (values may be strings) or an iterable of ``"key=value"`` strings; values are parsed
        with the field's type (``"307e9"`` for a float, ``"8"`` for an int; ints also accept ``1024*1024``-free
        plain literals such as ``786432`` or ``0x40``).
        """
        base = MLU370 if base is None else base
        pairs = _override_pairs(overrides)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        changes = {}
        for key, raw in pairs:
            if key not in fields:
                known = ", ".join(sorted(fields))
                raise MachineError(f"unknown machine parameter '{key}' (known: {known})")
            kind = type(getattr(base, key))
            changes[key] = _parse_value(key, raw, kind)
        return dataclasses.replace(base, **changes)


def _override_pairs(overrides) -> list[tuple[str, object]]:
    if isinstance(overrides, Mapping):
        return [(str(k).strip(), v) for k, v in overrides.items()]
    if isinstance(overrides, str):
        overrides = [part for part in overrides.split(",") if part.strip()]
    pairs = []
    for item in overrides:
        if "=" not in item:
            raise MachineError(f"machine override '{item}' is not of the form key=value")
        key, value = item.split("=", 1)
        pairs.append((key.strip(), value.strip()))
    return pairs


def _parse_value(key: str, raw: object, kind: type) -> object:
    if not isinstance(raw, str):
        return kind(raw)
    try:
        if kind is int:
            return int(raw, 0) if raw.lower().startswith(("0x", "0o", "0b")) else int(float(raw))
        if kind is float:
            return float(raw)
        return raw
    except ValueError:
        raise MachineError(f"machine parameter '{key}' expects {kind.__name__}, got '{raw}'") from None


MLU370 = MluMachine()
"""The default machine: 8 clusters x 4 cores, 768 KiB NRAM, 1 MiB WRAM, 4 MiB SRAM, 307 GB/s GDRAM, 1 GHz."""
