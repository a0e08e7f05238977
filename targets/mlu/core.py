"""Per-task state while a kernel runs: values live in regions, time is recorded as a trace for ``timing.py``.

The trace is a list of tuples, one per event, in program order:
  ("s", cycles)                               scalar work of the control thread
  ("c", cycles)                               one op on the compute pipe
  ("d", is_async, flow_bytes, resources, latency)   one DMA on the IO pipe
  ("y", wait_io, wait_compute)                the control thread waits for pipes to drain
  ("b", scope, cycles)                        a barrier ("cluster" or "all"); preceded by a full drain

Cross-pipe races are found here: an async DMA and a compute op issued without a sync between them must not touch
overlapping on-chip bytes where either writes (the DMA's destination counts as written, its source as read).
"""
from __future__ import annotations

from collections import Counter

from .errors import MluError, Span
from .lang import GDRAM, SPACE_NAMES
from .machine import MluMachine
from .memory import Ptr, Region

Access = tuple[Region, int, int]  # region, first byte, end byte


class ReturnSignal(Exception):
    """Raised by ``return;`` and caught at the kernel's top."""


class CoreCtx:
    """One task (one core) of a launch."""

    def __init__(self, machine: MluMachine, task_id: int, task_dim: int, cluster_id: int, cluster_dim: int,
                 core_id: int, buffers: list[Ptr], barrier_hook, values: bool = True):
        self.machine = machine
        self.task_id = task_id
        self.task_dim = task_dim
        self.cluster_id = cluster_id
        self.cluster_dim = cluster_dim
        self.core_id = core_id
        self.core_dim = machine.cores_per_cluster
        self.buffers = buffers
        self.values = values  # False: timing-only mode, regions hold no data (see shapeonly.py)
        self._barrier_hook = barrier_hook
        self.trace: list[tuple] = []
        self.sc = 0  # scalar statements executed since the last flush
        self.sa = 0  # scalar on-chip accesses since the last flush
        self.io_pending: list[tuple[Region, int, int, bool, str, int]] = []
        self.cmp_pending: list[tuple[Region, int, int, bool, str, int]] = []
        self.stats: Counter = Counter()

    def where(self) -> str:
        return f"in task {self.task_id} (cluster {self.cluster_id}, core {self.core_id})"

    # ------------------------------------------------------------ trace
    def flush(self) -> None:
        if self.sc or self.sa:
            m = self.machine
            cycles = self.sc * m.scalar_cycles + self.sa * m.scalar_access_cycles
            self.trace.append(("s", cycles))
            self.stats["scalar_statements"] += self.sc
            self.stats["scalar_accesses"] += self.sa
            self.sc = 0
            self.sa = 0

    def compute(self, cycles: float, reads: list[Access], writes: list[Access], what: str, span: Span) -> None:
        """Record one compute-pipe op after checking it against in-flight async DMAs."""
        if self.io_pending:
            for region, lo, hi in reads:
                self._check_io(region, lo, hi, False, what, span)
            for region, lo, hi in writes:
                self._check_io(region, lo, hi, True, what, span)
        line = span.line
        pend = self.cmp_pending
        for region, lo, hi in reads:
            pend.append((region, lo, hi, False, what, line))
        for region, lo, hi in writes:
            pend.append((region, lo, hi, True, what, line))
        self.flush()
        self.trace.append(("c", cycles))
        self.stats["vector_ops"] += 1
        self.stats["compute_cycles"] += cycles

    def dma(self, is_async: bool, flow_bytes: float, resources: tuple, latency: float,
            read: Access, write: Access, what: str, span: Span) -> None:
        """Record one DMA. A synchronous one waits for the compute pipe first and for itself after."""
        self.flush()
        if is_async:
            if self.cmp_pending:
                self._check_cmp(read, False, what, span)
                self._check_cmp(write, True, what, span)
            for access, is_write in ((read, False), (write, True)):
                if access[0].space != GDRAM:
                    self.io_pending.append((*access, is_write, what, span.line))
        else:
            self.trace.append(("y", False, True))
            self.cmp_pending.clear()
            self.io_pending.clear()
        self.trace.append(("d", is_async, flow_bytes, resources, latency))
        self.stats["dmas"] += 1

    def sync(self, wait_io: bool, wait_compute: bool) -> None:
        self.flush()
        self.trace.append(("y", wait_io, wait_compute))
        if wait_io:
            self.io_pending.clear()
        if wait_compute:
            self.cmp_pending.clear()

    def barrier(self, scope: str, span: Span) -> None:
        """__sync_cluster / __sync_all: drain both pipes, then wait for the other tasks (see ``launch.py``)."""
        self.sync(True, True)
        m = self.machine
        cost = m.sync_cluster_cycles if scope == "cluster" else m.sync_all_cycles
        self.trace.append(("b", scope, cost))
        self._barrier_hook(scope, span)

    def scalar_access(self, ptr: Ptr, write: bool, span: Span) -> None:
        """A scalar element access waits for the compute pipe; it must not touch bytes of an in-flight DMA.
        ``ptr`` None: a timing-only read at a value-dependent index (costed, not checked)."""
        if ptr is not None and ptr.region.space == GDRAM:
            raise MluError(f"scalar access to GDRAM pointer '{ptr.region.name}' is not supported; "
                           f"copy to NRAM with __memcpy first")
        if self.cmp_pending:
            self.flush()
            self.trace.append(("y", False, True))
            self.cmp_pending.clear()
        self.sa += 1
        if self.io_pending and ptr is not None:
            lo = ptr.off
            self._check_io(ptr.region, lo, lo + ptr.elem.itemsize, write,
                           "scalar write" if write else "scalar read", span)

    def end(self) -> None:
        self.sync(True, True)

    # ------------------------------------------------------------ races
    def _check_io(self, region: Region, lo: int, hi: int, is_write: bool, what: str, span: Span) -> None:
        for other, olo, ohi, other_writes, other_what, line in self.io_pending:
            if other is region and lo < ohi and olo < hi and (is_write or other_writes):
                verb = "writes" if is_write else "reads"
                theirs = "writing" if other_writes else "reading"
                raise MluError(
                    f"race between pipes: {what} {verb} {_bytes(region, lo, hi)} while the {other_what} at line "
                    f"{line} may still be {theirs} {_bytes(region, olo, ohi)} on the IO pipe; "
                    f"insert __sync_io() before this statement", span)

    def _check_cmp(self, access: Access, is_write: bool, what: str, span: Span) -> None:
        region, lo, hi = access
        if region.space == GDRAM:
            return
        for other, olo, ohi, other_writes, other_what, line in self.cmp_pending:
            if other is region and lo < ohi and olo < hi and (is_write or other_writes):
                verb = "writes" if is_write else "reads"
                theirs = "writing" if other_writes else "reading"
                raise MluError(
                    f"race between pipes: {what} {verb} {_bytes(region, lo, hi)} while the {other_what} at line "
                    f"{line} may still be {theirs} {_bytes(region, olo, ohi)} on the compute pipe; "
                    f"insert __sync_compute() before this statement", span)


def _bytes(region: Region, lo: int, hi: int) -> str:
    return f"bytes [{lo}, {hi}) of {SPACE_NAMES[region.space]} buffer '{region.name}'"
