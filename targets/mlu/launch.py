"""Functional execution of all tasks of a launch, honouring barriers.

Tasks run one at a time, each in its own thread, handing a baton to the scheduler at every barrier
(``__sync_cluster`` / ``__sync_all``) and at the end; the scheduler releases a barrier once every task of its group
is waiting on it. Execution order is deterministic (task 0, 1, ... between barriers). Time is not measured here:
each task records a trace that ``timing.py`` replays as if all tasks ran in parallel.
"""
from __future__ import annotations

import threading

import numpy as np

from .core import CoreCtx
from .errors import MluError, Span


class _Abort(BaseException):
    """Unwinds a task thread when another task failed."""


class TaskThread:
    """One task's thread plus its baton."""

    def __init__(self, index: int, cluster: int, body, yielded: threading.Semaphore):
        self.index = index
        self.cluster = cluster
        self.body = body  # callable(barrier_hook) -> None
        self.go = threading.Semaphore(0)
        self.yielded = yielded
        self.state: tuple = ("new",)
        self.error: BaseException | None = None
        self.abort = False
        self.thread = threading.Thread(target=self._main, name=f"mlu-task-{index}", daemon=True)

    def _main(self) -> None:
        self.go.acquire()
        try:
            if not self.abort:
                with np.errstate(all="ignore"):
                    self.body(self.barrier)
            self.state = ("done",)
        except _Abort:
            self.state = ("done",)
        except BaseException as err:  # reported by the scheduler
            self.error = err
            self.state = ("error",)
        finally:
            self.yielded.release()

    def barrier(self, scope: str, span: Span) -> None:
        self.state = ("barrier", scope, span)
        self.yielded.release()
        self.go.acquire()
        if self.abort:
            raise _Abort()

    def resume(self) -> None:
        self.go.release()
        self.yielded.acquire()


def run_tasks(bodies: list, clusters_of: list[int], ctxs: list[CoreCtx]) -> None:
    """Run ``bodies[i](barrier_hook)`` for every task; raise the first task's error (with a note naming it)."""
    yielded = threading.Semaphore(0)
    tasks = [TaskThread(i, clusters_of[i], body, yielded) for i, body in enumerate(bodies)]
    for task in tasks:
        task.thread.start()
    runnable = list(tasks)
    try:
        while runnable:
            for task in runnable:
                task.resume()
                if task.error is not None:
                    err = task.error
                    if isinstance(err, MluError):
                        raise err.with_note(ctxs[task.index].where()) from None
                    raise err
            runnable = _release_barriers(tasks)
    finally:
        for task in tasks:
            if task.state[0] != "done" and task.state[0] != "error":
                task.abort = True
                task.go.release()
        for task in tasks:
            task.thread.join()


def _release_barriers(tasks: list[TaskThread]) -> list[TaskThread]:
    waiting = [t for t in tasks if t.state[0] == "barrier"]
    if not waiting:
        return []
    released: list[TaskThread] = []
    if all(t.state[0] == "barrier" and t.state[1] == "all" for t in tasks):
        released = list(tasks)
    else:
        clusters = sorted({t.cluster for t in waiting})
        for k in clusters:
            group = [t for t in tasks if t.cluster == k]
            if all(t.state[0] == "barrier" and t.state[1] == "cluster" for t in group):
                released.extend(group)
    if released:
        for t in released:
            t.state = ("running",)
        return released
    first = waiting[0]
    others = [t for t in tasks if t.state[0] != "barrier" or t.state[1] != first.state[1]]
    other = others[0] if others else None
    name = "__sync_all" if first.state[1] == "all" else "__sync_cluster"
    detail = ""
    if other is not None:
        what = "finished" if other.state[0] == "done" else f"waits at a different barrier (line {other.state[2].line})"
        detail = f"; task {other.index} {what}"
    raise MluError(f"deadlock: task {first.index} waits at {name}() but not every task of its group reaches it"
                   f"{detail}", first.state[2])
