"""GPU machine descriptions used by the scheduler's cost model (passes/schedule/cost.py).

Each machine is a frozen dataclass; numbers are per device unless a field says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuMachine:
    """One GPU.

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


KIB, MIB = 1024, 1024 * 1024

H100 = GpuMachine("H100-SXM", "nvidia", sms=132, warp=32, max_threads_per_block=1024, max_threads_per_sm=2048,
                  smem_per_sm=228 * KIB, smem_per_block_default=48 * KIB, smem_per_block_max=227 * KIB,
                  regs_per_sm=65536, max_regs_per_thread=255, l2_bytes=50 * MIB, dram_bw=3.0e12, l2_bw=10e12,
                  launch_s=3e-6, clock_hz=1.75e9)
A100 = GpuMachine("A100-SXM", "nvidia", sms=108, warp=32, max_threads_per_block=1024, max_threads_per_sm=2048,
                  smem_per_sm=164 * KIB, smem_per_block_default=48 * KIB, smem_per_block_max=163 * KIB,
                  regs_per_sm=65536, max_regs_per_thread=255, l2_bytes=40 * MIB, dram_bw=1.7e12, l2_bw=5e12,
                  launch_s=3e-6, clock_hz=1.41e9)
MI250X = GpuMachine("MI250X (one GCD)", "amd", sms=110, warp=64, max_threads_per_block=1024, max_threads_per_sm=2560,
                    smem_per_sm=64 * KIB, smem_per_block_default=64 * KIB, smem_per_block_max=64 * KIB,
                    regs_per_sm=131072, max_regs_per_thread=255, l2_bytes=8 * MIB, dram_bw=1.3e12, l2_bw=4e12,
                    launch_s=5e-6, clock_hz=1.7e9, sector_bytes=64)
MI300X = GpuMachine("MI300X", "amd", sms=304, warp=64, max_threads_per_block=1024, max_threads_per_sm=2048,
                    smem_per_sm=64 * KIB, smem_per_block_default=64 * KIB, smem_per_block_max=64 * KIB,
                    regs_per_sm=131072, max_regs_per_thread=255, l2_bytes=256 * MIB, dram_bw=4.0e12, l2_bw=12e12,
                    launch_s=5e-6, clock_hz=2.1e9, sector_bytes=64)

MACHINES = {"h100": H100, "a100": A100, "mi250x": MI250X, "mi300x": MI300X}
DEFAULT_FOR_TARGET = {"cuda": H100, "sim": H100, "hip": MI300X}


def machine_for(target: str, name: str | None = None) -> GpuMachine:
    """The machine named `name` (case-insensitive), else the default one of `target`."""
    if name:
        return MACHINES[name.lower()]
    return DEFAULT_FOR_TARGET[target]
