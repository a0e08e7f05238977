"""GPU machine descriptions used by the search's cost models (numbers in the JSON files beside this module)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuMachine:
    """One GPU. Numbers are per device unless a field says otherwise.

    name: marketing name.
    vendor: "nvidia" or "amd".
    sms: streaming multiprocessors (NVIDIA) or compute units (AMD).
    warp: threads per warp (32) or wavefront (64); the lane extent of @lane scopes.
    max_threads_per_block: largest block.
    max_threads_per_sm: resident threads per SM/CU (occupancy limit).
    smem_per_sm: shared memory (LDS) per SM/CU in bytes.
    smem_per_block_default: shared memory a block gets without opt-in, bytes.
    smem_per_block_max: shared memory a block may opt into, bytes.
    regs_per_sm: 32-bit registers per SM/CU.
    max_regs_per_thread: 32-bit registers one thread may use.
    l2_bytes: last-level cache size in bytes.
    dram_bw: achievable global-memory bandwidth (measured copy), bytes/s.
    l2_bw: L2 bandwidth, bytes/s.
    launch_s: kernel launch overhead, seconds.
    clock_hz: SM clock.
    sector_bytes: global-memory transaction granule.
    reg_overhead: registers a generated kernel needs besides its cached data and accumulators (addresses, loop
        counters, temporaries); AMD's 64-bit addresses take pairs of VGPRs.
    max_threads_generated: the largest block the tile recipe generates (hipcc unrolls loops of 1024-thread
        kernels past their 128 VGPRs on CDNA; measured on gfx90a).
    block_s: what a block costs an SM to dispatch, seconds: an SM starts about one block per 80 ns whatever its
        size (measured on an H200 by tests/gpu_codegen/probe_blocks.py: empty kernels 80-94 ns per block and
        SM; a copy by 524,288 blocks of 32 threads ran at 82 ns per block and SM, 40% of the copy bandwidth). A
        kernel takes at least blocks x block_s / SMs (`dispatch_s`). The other machines: not measured, the same
        number assumed.
    """
    name: str
    vendor: str
    sms: int
    warp: int
    max_threads_per_block: int
    max_threads_per_sm: int
    smem_per_sm: int
    smem_per_block_default: int
    smem_per_block_max: int
    regs_per_sm: int
    max_regs_per_thread: int
    l2_bytes: int
    dram_bw: float
    l2_bw: float
    launch_s: float
    clock_hz: float
    sector_bytes: int = 32
    reg_overhead: int = 24
    max_threads_generated: int = 1024
    block_s: float = 8.0e-8

    def dispatch_s(self, blocks: float) -> float:
        """The least time a launch of `blocks` blocks takes: the SMs start them one after another."""
        return blocks * self.block_s / self.sms

    @classmethod
    def from_data(cls, data: dict) -> "GpuMachine":
        from gir.passes.machines import MachineError
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        missing = sorted(f.name for f in dataclasses.fields(cls)
                         if f.name not in data and f.default is dataclasses.MISSING)
        if unknown or missing:
            raise MachineError(f"GPU machine description {data.get('name', '?')!r}: "
                               + "; ".join(filter(None, [unknown and f"unknown fields {unknown}",
                                                         missing and f"missing fields {missing}"])))
        return cls(**data)


def gpu_machine(name: str) -> GpuMachine:
    """The machine of `passes/machines/<name>.json` (case-insensitive)."""
    from gir.passes.machines import MachineError, machine_data
    key = name.lower()
    if key not in GPU_MACHINE_NAMES:
        raise MachineError(f"unknown GPU machine '{name}' (known: {', '.join(GPU_MACHINE_NAMES)})")
    return GpuMachine.from_data(machine_data(key))


GPU_MACHINE_NAMES = ("h200", "h100", "a100", "mi250x", "mi300x")
GPU_MACHINES = {n: gpu_machine(n) for n in GPU_MACHINE_NAMES}
DEFAULT_FOR_TARGET = {"cuda": GPU_MACHINES["h200"], "sim": GPU_MACHINES["h200"], "hip": GPU_MACHINES["mi300x"]}


def machine_for(target: str, name: str | None = None) -> GpuMachine:
    """The machine named `name` (case-insensitive), else the default one of `target`."""
    if name:
        return gpu_machine(name)
    return DEFAULT_FOR_TARGET[target]
