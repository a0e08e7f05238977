"""Timing model: replays the traces of all tasks of a launch as if they ran in parallel.

Per task there are three timelines: the control thread (scalar work, issuing), the IO pipe (DMAs, in issue order)
and the compute pipe (__bang ops, in issue order). Issuing is free; a compute op starts at
max(issue time, compute pipe free); an async DMA starts at max(issue time, IO pipe free). Syncs move the control
thread to the end of the pipes they wait for; a synchronous __memcpy waits for the compute pipe, runs on the IO
pipe, and blocks the control thread until it is done. Barriers release all their tasks at the latest arrival plus
the barrier cost.

A DMA takes its latency, then moves its bytes as a fluid flow. All flows in progress share bandwidth resources
(GDRAM of the chip, the DMA port of each core, each cluster's memory-core DMA and SRAM port, each core's on-chip
move engine) by max-min fairness (progressive filling), recomputed whenever a flow starts or ends. The simulation
is event driven: time jumps to the next flow completion or scheduled event.

Cost: each task has at most one flow in progress (its IO pipe's current DMA), so an event costs O(tasks) (the
fair-share recomputation, only when the set of flows changed) plus O(log events) for the heap: the replay is
linear in the number of events (measured: 32 tasks x 100K DMAs in LANGUAGE.md, "Timing-only mode").
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from .errors import MluError
from .machine import MluMachine


class _Dma:
    __slots__ = ("task", "nbytes", "rem", "rate", "resources", "latency", "ready", "start", "is_async")

    def __init__(self, task, event, ready):
        _, self.is_async, self.nbytes, self.resources, self.latency = event
        self.task = task
        self.rem = float(self.nbytes)
        self.rate = 0.0
        self.ready = ready
        self.start = 0.0


@dataclass
class TaskTiming:
    """Timing of one task: when it finished and how long each pipe was busy (cycles)."""

    finish: float = 0.0
    io_busy: float = 0.0
    compute_busy: float = 0.0
    scalar: float = 0.0
    sync_wait: float = 0.0


class _Task:
    def __init__(self, index: int, trace: list, group_all: tuple, group_cluster: tuple):
        self.index = index
        self.trace = trace
        self.groups = {"all": group_all, "cluster": group_cluster}
        self.pc = 0
        self.t = 0.0
        self.cmp_free = 0.0
        self.io_free = 0.0
        self.io_cur: _Dma | None = None
        self.io_queue: deque[_Dma] = deque()
        self.waiting = None  # None, a _Dma (sync memcpy), "io" (drain), "barrier"
        self.done = False
        self.stats = TaskTiming()


@dataclass
class Timing:
    cycles: float
    tasks: list[TaskTiming] = field(default_factory=list)


def simulate_timing(traces: list[list], clusters_of: list[int], machine: MluMachine) -> Timing:
    """Cycle count of a launch whose task i ran on cluster ``clusters_of[i]`` and recorded ``traces[i]``."""
    return _Engine(traces, clusters_of, machine).run()


class _Engine:
    def __init__(self, traces, clusters_of, machine: MluMachine):
        self.m = machine
        everyone = tuple(range(len(traces)))
        by_cluster: dict[int, tuple] = {}
        for i, k in enumerate(clusters_of):
            by_cluster[k] = by_cluster.get(k, ()) + (i,)
        self.tasks = [_Task(i, tr, everyone, by_cluster[clusters_of[i]]) for i, tr in enumerate(traces)]
        self.capacity = self._capacities(clusters_of)
        self.now = 0.0
        self.events: list = []
        self.seq = 0
        self.flows: list[_Dma] = []
        self.barriers: dict[tuple, list] = {}

    def _capacities(self, clusters_of) -> dict:
        m = self.m
        cap = {("g",): m.bytes_per_cycle(m.gdram_bandwidth)}
        for i, k in enumerate(clusters_of):
            cap[("p", i)] = m.bytes_per_cycle(m.core_dma_bandwidth)
            cap[("v", i)] = m.bytes_per_cycle(m.nram_move_bandwidth)
            cap[("m", k)] = m.bytes_per_cycle(m.memcore_dma_bandwidth)
            cap[("s", k)] = m.bytes_per_cycle(m.sram_bandwidth)
        return cap

    def schedule(self, time: float, kind: str, obj) -> None:
        self.seq += 1
        heapq.heappush(self.events, (time, self.seq, kind, obj))

    # ------------------------------------------------------------ main loop
    def run(self) -> Timing:
        for task in self.tasks:
            self.advance(task)
        while True:
            t_event = self.events[0][0] if self.events else math.inf
            t_finish = min((self.now + f.rem / f.rate for f in self.flows), default=math.inf)
            if t_event == math.inf and t_finish == math.inf:
                break
            if t_finish <= t_event:
                changed = True
                self.progress(t_finish)
                finished = [f for f in self.flows if f.rem <= 1e-9 * max(f.nbytes, 1.0) + 1e-9]
                if not finished:  # rounding: finish the nearest one
                    finished = [min(self.flows, key=lambda f: f.rem / f.rate)]
                for f in finished:
                    self.flows.remove(f)
                for f in finished:
                    self.complete(f)
            else:
                self.progress(t_event)
                _, _, kind, obj = heapq.heappop(self.events)
                changed = False
                if kind == "data":
                    if obj.rem <= 0:
                        self.complete(obj)
                    else:
                        self.flows.append(obj)
                        changed = True
                else:  # "run"
                    self.advance(obj)
            if changed:  # shares depend only on the set of flows
                self.rates()
        stuck = [t.index for t in self.tasks if not t.done]
        if stuck:
            raise MluError(f"timing model deadlock: tasks {stuck} never finished")
        return Timing(max((t.stats.finish for t in self.tasks), default=0.0), [t.stats for t in self.tasks])

    def progress(self, time: float) -> None:
        dt = time - self.now
        if dt > 0:
            for f in self.flows:
                f.rem -= f.rate * dt
            self.now = time

    def rates(self) -> None:
        """Max-min fair shares by progressive filling over the resources the flows use."""
        flows = self.flows
        if not flows:
            return
        capacity = self.capacity
        left: dict = {}
        count: dict = {}  # resource -> number of its flows not yet fixed
        for f in flows:
            for r in f.resources:
                if r in count:
                    count[r] += 1
                else:
                    count[r] = 1
                    left[r] = capacity[r]
        pending = flows
        while pending:
            best, share = None, math.inf
            for r, n in count.items():
                if n and left[r] / n < share:
                    best, share = r, left[r] / n
            rest = []
            for f in pending:
                resources = f.resources
                if best in resources:
                    f.rate = share
                    for r in resources:
                        left[r] -= share
                        count[r] -= 1
                else:
                    rest.append(f)
            pending = rest

    # ------------------------------------------------------------ pipes
    def start_next(self, task: _Task) -> None:
        if task.io_cur is not None or not task.io_queue:
            return
        dma = task.io_queue.popleft()
        dma.start = max(dma.ready, task.io_free)
        task.io_cur = dma
        self.schedule(dma.start + dma.latency, "data", dma)

    def complete(self, dma: _Dma) -> None:
        task = dma.task
        task.io_cur = None
        task.io_free = self.now
        task.stats.io_busy += self.now - dma.start
        self.start_next(task)
        if task.waiting is dma or (task.waiting == "io" and task.io_cur is None):
            task.waiting = None
            task.stats.sync_wait += max(0.0, self.now - task.t)
            task.t = max(task.t, self.now)
            self.schedule(task.t, "run", task)

    # ------------------------------------------------------------ control thread
    def advance(self, task: _Task) -> None:
        """Run the task's control thread until it blocks or ends."""
        trace, stats = task.trace, task.stats
        while task.pc < len(trace):
            event = trace[task.pc]
            task.pc += 1
            kind = event[0]
            if kind == "s":
                task.t += event[1]
                stats.scalar += event[1]
            elif kind == "c":
                start = max(task.t, task.cmp_free)
                task.cmp_free = start + event[1]
                stats.compute_busy += event[1]
            elif kind == "d":
                dma = _Dma(task, event, task.t)
                task.io_queue.append(dma)
                self.start_next(task)
                if not dma.is_async:
                    task.waiting = dma
                    return
            elif kind == "y":
                if event[2] and task.cmp_free > task.t:
                    stats.sync_wait += task.cmp_free - task.t
                    task.t = task.cmp_free
                if event[1]:
                    if task.io_cur is not None or task.io_queue:
                        task.waiting = "io"
                        return
                    if task.io_free > task.t:
                        stats.sync_wait += task.io_free - task.t
                        task.t = task.io_free
            elif kind == "b":
                self.arrive(task, event[1], event[2])
                return
        task.done = True
        stats.finish = max(task.t, task.cmp_free, task.io_free)

    def arrive(self, task: _Task, scope: str, cost: float) -> None:
        members = task.groups[scope]
        key = (scope, members)
        arrived = self.barriers.setdefault(key, [])
        arrived.append(task)
        task.waiting = "barrier"
        if len(arrived) < len(members):
            return
        release = max(t.t for t in arrived) + cost
        del self.barriers[key]
        for t in arrived:
            t.stats.sync_wait += release - t.t
            t.t = release
            t.waiting = None
            self.schedule(release, "run", t)
