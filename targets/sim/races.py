"""Race detection: per-address shadow state of the last writer and the readers of a buffer.

Two accesses to one address conflict when at least one is a write and they come from different instances
that no barrier orders: instances of different blocks (clusters) are never ordered within a kernel; instances
of one block are ordered when a block barrier separates the accesses. Each access is stamped with its block's
barrier count (its *epoch*); accesses of one block in different epochs are ordered.

Shadow state per address (flat index of the buffer's storage):
- writer id / epoch / instruction of the last write (id -1: none);
- reader id (-1 none, -2 several distinct readers), reader block (-1 if several blocks), latest reader epoch,
  and the instruction of a read.
Instance ids are `block * stride + thread` (thread = linear id in the block).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Race:
    buffer: str
    kind: str                    # "write-write", "read-write" (read then write), "write-read"
    first_instr: int             # instruction numbers (see Tracker.instr_names)
    second_instr: int
    first: tuple[int, int]       # (block, thread)
    second: tuple[int, int]
    address: int                 # flat element index in the buffer (per block for shared buffers)


class Tracker:
    """Shadow memory of one buffer; `size` flat addresses."""

    def __init__(self, name: str, size: int, stride: int, per_block_size: int | None = None,
                 id_dtype=np.int64):
        self.name = name
        self.size = size
        self.stride = stride
        self.per_block_size = per_block_size  # shared buffers: storage is (rows, per_block_size)
        self.id_dtype = id_dtype
        self.w_id = self.r_id = None  # shadow arrays, allocated on the first write / read

    def _alloc_writes(self) -> None:
        self.w_id = np.full(self.size, -1, self.id_dtype)
        self.w_ep = np.zeros(self.size, np.int32)
        self.w_ins = np.zeros(self.size, np.int32)

    def _alloc_reads(self) -> None:
        self.r_id = np.full(self.size, -1, self.id_dtype)
        self.r_blk = np.full(self.size, -1, self.id_dtype)
        self.r_ep = np.zeros(self.size, np.int32)
        self.r_ins = np.zeros(self.size, np.int32)
        self.scratch = (np.zeros(self.size, self.id_dtype), np.zeros(self.size, self.id_dtype),
                        np.zeros(self.size, np.int32), np.zeros(self.size, bool), np.zeros(self.size, bool))

    def _ordered(self, prev_id, prev_blk, prev_ep, blk, ep):
        """True where a previous access (same block, earlier epoch) is ordered before the new one."""
        return (prev_blk == blk) & (prev_ep < ep)

    def _race(self, kind, mask, prev_id, prev_ins, ins, ids, addr) -> Race | None:
        if not mask.any():
            return None
        k = int(np.flatnonzero(mask)[0])
        pid = int(prev_id[k])
        pid = pid if pid >= 0 else -1
        addr_k = int(addr[k])
        if self.per_block_size:
            addr_k %= self.per_block_size
        other = (pid // self.stride, pid % self.stride) if pid >= 0 else (-1, -1)
        return Race(self.name, kind, int(prev_ins[k]), ins, other, divmod(int(ids[k]), self.stride), addr_k)

    def read(self, addr: np.ndarray, ids: np.ndarray, ep: np.ndarray, ins: int,
             several: np.ndarray | None = None) -> list[Race]:
        """Record reads of addresses `addr` by instances `ids` in epochs `ep` (1-d arrays). `several` marks
        elements that stand for reads by several instances of the block of `ids` (one of them `ids`)."""
        if addr.size == 0:
            return []
        blk = ids // self.stride
        races = []
        if self.w_id is not None:
            wid = self.w_id[addr]
            other = (wid != ids) if several is None else (wid != ids) | several
            bad = (wid >= 0) & other & ~self._ordered(wid, wid // self.stride, self.w_ep[addr], blk, ep)
            race = self._race("write-read", bad, wid, self.w_ins[addr], ins, ids, addr)
            if race:
                races.append(race)
        if self.r_id is None:
            self._alloc_reads()
        # summarise the readers of this instruction per address by scatter/gather (last write wins)
        sid, sblk, sep, multi, mblk = self.scratch
        sid[addr], sblk[addr], sep[addr] = ids, blk, ep
        multi[addr[sid[addr] != ids]] = True
        if several is not None:
            multi[addr[several]] = True
        mblk[addr[sblk[addr] != blk]] = True
        m_id, m_blk = multi[addr], mblk[addr]
        new_id = np.where(m_id, -2, sid[addr])
        new_blk = np.where(m_blk, -1, sblk[addr])
        emax = sep[addr]
        multi[addr] = False
        mblk[addr] = False
        pid, pblk, pep = self.r_id[addr], self.r_blk[addr], self.r_ep[addr]
        fresh = (pid == -1) | (~m_blk & (pblk == new_blk) & (pep < emax))
        same = (pid >= 0) & (new_id == pid)
        self.r_id[addr] = np.where(fresh | same, new_id, -2)
        self.r_blk[addr] = np.where(fresh, new_blk, np.where(pblk == new_blk, pblk, -1))
        self.r_ep[addr] = np.where(fresh, emax, np.maximum(pep, emax))
        self.r_ins[addr] = ins
        return races

    def write(self, addr: np.ndarray, ids: np.ndarray, ep: np.ndarray, ins: int) -> list[Race]:
        if addr.size == 0:
            return []
        blk = ids // self.stride
        races = []
        if self.w_id is None:
            self._alloc_writes()
        wid = self.w_id[addr]
        bad = (wid >= 0) & (wid != ids) & ~self._ordered(wid, wid // self.stride, self.w_ep[addr], blk, ep)
        race = self._race("write-write", bad, wid, self.w_ins[addr], ins, ids, addr)
        if race:
            races.append(race)
        if self.r_id is not None:
            rid, rblk, rep = self.r_id[addr], self.r_blk[addr], self.r_ep[addr]
            bad = (rid != -1) & (rid != ids) & ~self._ordered(rid, rblk, rep, blk, ep)
            race = self._race("read-write", bad, rid, self.r_ins[addr], ins, ids, addr)
            if race:
                races.append(race)
        # two instances writing one address in this instruction
        self.w_id[addr] = ids
        dup = self.w_id[addr] != ids
        if dup.any():
            k = int(np.flatnonzero(dup)[0])
            addr_k = int(addr[k]) % self.per_block_size if self.per_block_size else int(addr[k])
            races.append(Race(self.name, "write-write", ins, ins, divmod(int(self.w_id[addr[k]]), self.stride),
                              divmod(int(ids[k]), self.stride), addr_k))
        self.w_id[addr] = ids
        self.w_ep[addr] = ep
        self.w_ins[addr] = ins
        return races
