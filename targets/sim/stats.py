"""Traffic counters of the SIMT simulator: 32-byte sectors per warp-level access, useful bytes, barriers.

A warp-level access is one hardware instruction: for a data movement whose per-lane region holds K elements
moved with vector width W, each lane issues K / W vector accesses; vector access g of all lanes of a warp is
one instruction, and the sectors it moves are the distinct 32-byte sectors its lanes touch. MLU kernels have
no warps: a core's DMA of a whole region is one access (its distinct sectors).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SECTOR = 32


@dataclass
class InstrStats:
    """Counters of one instruction (keyed by its location in `SimStats.instrs`)."""
    kernel: str
    kind: str            # load store copy compute allreduce sync
    buffer: str          # the global/shared buffer it touches ('' if none)
    executions: int = 0  # warp-level accesses (GPU) / DMA accesses (MLU) / barrier executions per block
    sectors: int = 0     # distinct 32-byte sectors moved to/from global memory
    useful_bytes: int = 0
    shared_bytes: int = 0


@dataclass
class KernelStats:
    global_read_bytes: int = 0    # sectors * 32
    global_write_bytes: int = 0
    useful_read_bytes: int = 0    # bytes the lanes asked for
    useful_write_bytes: int = 0
    shared_read_bytes: int = 0
    shared_write_bytes: int = 0
    barriers: int = 0             # block barriers executed (summed over blocks)
    blocks: int = 0

    def add(self, other: "KernelStats") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def global_bytes(self) -> int:
        return self.global_read_bytes + self.global_write_bytes

    @property
    def useful_bytes(self) -> int:
        return self.useful_read_bytes + self.useful_write_bytes


@dataclass
class SimStats:
    kernels: dict[str, KernelStats] = field(default_factory=dict)
    instrs: dict[str, InstrStats] = field(default_factory=dict)

    @property
    def total(self) -> KernelStats:
        out = KernelStats()
        for k in self.kernels.values():
            out.add(k)
        return out

    def __getattr__(self, name):  # stats.global_read_bytes etc. = totals over kernels
        if name in KernelStats.__dataclass_fields__ or name in ("global_bytes", "useful_bytes"):
            return getattr(self.total, name)
        raise AttributeError(name)


def count_sectors(offsets: np.ndarray, valid: np.ndarray | None, itemsize: int, vec: int,
                  warp: np.ndarray, lane: np.ndarray, warp_size: int) -> tuple[int, int]:
    """Distinct sectors per warp-level access, summed; and the number of such accesses.

    offsets: (n, K) element offsets into a global tensor (one row per active instance);
    valid: (n, K) mask of elements really accessed (None: all); warp/lane: (n,) compact warp index
    and lane within the warp of each row. K must be a multiple of vec.
    """
    n, k = offsets.shape
    if n == 0 or k == 0:
        return 0, 0
    sectors = offsets * itemsize // SECTOR
    if valid is not None:
        sectors = np.where(valid, sectors, -1)
    groups = k // vec
    if n % warp_size == 0 and np.array_equal(warp, np.repeat(np.arange(n // warp_size), warp_size)) \
            and np.array_equal(lane, np.tile(np.arange(warp_size), n // warp_size)):
        nwarps = n // warp_size  # rows are whole warps in order: no scatter needed
        dense = sectors.reshape(nwarps, warp_size, groups, vec)
    else:
        nwarps = int(warp.max()) + 1
        dense = np.full((nwarps, warp_size, groups, vec), -1, dtype=np.int64)
        dense[warp, lane] = sectors.reshape(n, groups, vec)
    dense = dense.transpose(0, 2, 1, 3).reshape(nwarps, groups, warp_size * vec)
    dense.sort(axis=2)
    first = dense[:, :, :1] >= 0
    new = (dense[:, :, 1:] != dense[:, :, :-1]) & (dense[:, :, 1:] >= 0)
    distinct = int(first.sum() + new.sum())
    accesses = int((dense[:, :, -1] >= 0).sum())
    return distinct, accesses
