"""``simulate``: run one kernel of a parsed program on the simulated MLU for one launch.

1. compile the kernel (cached), lay out its on-chip buffers and check capacities;
2. copy the GDRAM arguments, build one `CoreCtx` per task (NRAM/WRAM per task, SRAM per cluster);
3. execute all tasks functionally (``launch.py``), recording traces;
4. replay the traces in the timing model (``timing.py``) and collect statistics.

With ``values=False`` (timing-only mode, ``shapeonly.py``) step 2 allocates nothing and step 3 checks and times
every statement without computing values, so launches on tensors larger than host memory can be timed.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from . import syntax as S
from .compiler import CompiledKernel, compile_kernel
from .core import CoreCtx
from .errors import MluError
from .lang import NRAM, SRAM, WRAM
from .launch import run_tasks
from .machine import MLU370, MluMachine
from .memory import Ptr, check_capacity, gdram_region, gdram_region_shape, layout, onchip_region
from .result import CoreStats, SimResult
from .shapeonly import ShapeOnly
from .timing import simulate_timing

_GDRAM_BASE = 1 << 20
_GDRAM_ALIGN = 4096


def launch_shape(task_dim: int | str, machine: MluMachine) -> tuple[int, int]:
    """(number of tasks, number of clusters) of a launch.

    ``task_dim`` is an int (1..cores_per_cluster tasks run in one cluster; larger counts must be whole clusters)
    or a string: "Block" (one task) or "UnionN" (N clusters of cores_per_cluster tasks).
    """
    cpc = machine.cores_per_cluster
    if isinstance(task_dim, str):
        text = task_dim.strip()
        if text.lower() == "block":
            task_dim = 1
        elif text.lower().startswith("union") and text[5:].isdigit():
            task_dim = int(text[5:]) * cpc
        else:
            raise MluError(f"task_dim '{text}' is not an int, 'Block' or 'UnionN'")
    if not isinstance(task_dim, (int, np.integer)) or task_dim < 1:
        raise MluError(f"task_dim must be a positive int, got {task_dim!r}")
    task_dim = int(task_dim)
    if task_dim > machine.total_cores:
        raise MluError(f"task_dim={task_dim} exceeds the {machine.total_cores} cores of {machine.name}")
    if task_dim > cpc and task_dim % cpc:
        raise MluError(f"task_dim={task_dim} must be at most {cpc} or a multiple of {cpc} (whole clusters)")
    return task_dim, max(1, task_dim // cpc)


def simulate(program: S.Program, kernel_name: str, args: dict, task_dim: int | str,
             machine: MluMachine = MLU370, values: bool = True) -> SimResult:
    """Run ``kernel_name`` with ``args`` (name -> numpy array for pointer parameters, int for int parameters).

    ``values=False`` is timing-only mode: pointer arguments may be `ShapeOnly(shape, dtype)` (or arrays, of which
    only shape and dtype are used); no GDRAM or on-chip data is allocated and no element is computed, while every
    check (bounds, spaces, alignment, capacity, races, barriers) runs and ``cycles``, ``seconds``, ``bytes``,
    ``pipe_busy`` and ``per_core`` are exactly those of ``values=True``. ``outputs`` is then empty. Control flow,
    pointer offsets and sizes must not depend on values read from on-chip memory (an `MluError` says where they do).
    """
    kernel = compile_kernel(program, kernel_name)
    ntasks, nclusters = launch_shape(task_dim, machine)
    buffers = layout(list(kernel.buffers), machine.vector_align_bytes)
    check_capacity(buffers, {NRAM: machine.nram_bytes, WRAM: machine.wram_bytes, SRAM: machine.sram_bytes})
    params, gdram = _bind_args(kernel, args, values)

    cpc = machine.cores_per_cluster
    clusters_of = [t // cpc for t in range(ntasks)]
    sram = [{i: onchip_region(b, 0, values=values) for i, b in enumerate(buffers) if b.space == SRAM}
            for _ in range(nclusters)]
    ctxs, bodies = [], []
    for t in range(ntasks):
        cluster = clusters_of[t]
        ptrs = []
        for i, b in enumerate(buffers):
            region = sram[cluster][i] if b.space == SRAM else onchip_region(b, 0, values=values)
            ptrs.append(Ptr(region, 0, b.elem))
        ctx = CoreCtx(machine, t, ntasks, cluster, nclusters, t % cpc, ptrs, None, values)
        ctxs.append(ctx)
        bodies.append(_task_body(kernel, ctx, params))
    run_tasks(bodies, clusters_of, ctxs)

    timing = simulate_timing([c.trace for c in ctxs], clusters_of, machine)
    outputs = {name: region.data.view(dtype).reshape(shape).copy() for name, (region, dtype, shape) in gdram.items()
               if values}
    return _result(outputs, timing, ctxs, machine, ntasks)


def _task_body(kernel: CompiledKernel, ctx: CoreCtx, values: list):
    def body(barrier_hook):
        ctx._barrier_hook = barrier_hook
        frame = [None] * kernel.nslots
        for param, value in zip(kernel.params, values):
            frame[param.slot] = value
        kernel.run(ctx, frame)
    return body


def _bind_args(kernel: CompiledKernel, args: dict, with_values: bool = True):
    names = {p.name for p in kernel.params}
    extra = sorted(set(args) - names)
    if extra:
        raise MluError(f"kernel '{kernel.name}' has no parameter(s) {', '.join(extra)}")
    values, gdram = [], {}
    addr = _GDRAM_BASE
    for p in kernel.params:
        if p.name not in args:
            raise MluError(f"missing argument for parameter '{p.name}' ({p.type})", p.span)
        value = args[p.name]
        if p.type.kind == "ptr":
            shape_only = isinstance(value, ShapeOnly)
            if not isinstance(value, np.ndarray) and not (shape_only and not with_values):
                what = "a numpy array (ShapeOnly needs values=False)" if shape_only else (
                    "a numpy array" if with_values else "a numpy array or ShapeOnly")
                raise MluError(f"argument '{p.name}' must be {what} for {p.type}", p.span)
            if value.dtype != p.type.elem.dtype:
                raise MluError(f"argument '{p.name}' has dtype {value.dtype} but the parameter is {p.type} "
                               f"({p.type.elem.dtype})", p.span)
            if with_values:
                region = gdram_region(p.name, value, addr)
            else:
                region = gdram_region_shape(p.name, value.size * value.dtype.itemsize, addr)
            addr = (addr + region.size + _GDRAM_ALIGN - 1) // _GDRAM_ALIGN * _GDRAM_ALIGN + _GDRAM_ALIGN
            gdram[p.name] = (region, value.dtype, value.shape)
            values.append(Ptr(region, 0, p.type.elem))
        elif p.type.kind == "int":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise MluError(f"argument '{p.name}' must be an int, got {type(value).__name__}", p.span)
            values.append(int(value))
        else:
            values.append(float(value))
    return values, gdram


def _result(outputs, timing, ctxs: list[CoreCtx], machine: MluMachine, ntasks: int) -> SimResult:
    per_core, total = [], Counter()
    for ctx, t in zip(ctxs, timing.tasks):
        stats = {k: float(v) for k, v in ctx.stats.items() if k.endswith("_bytes")}
        total.update(stats)
        per_core.append(CoreStats(ctx.task_id, ctx.cluster_id, ctx.core_id, t.finish, t.io_busy, t.compute_busy,
                                  t.scalar, t.sync_wait, int(ctx.stats["dmas"]), int(ctx.stats["vector_ops"]),
                                  stats))
    busy = {
        "io": sum(t.io_busy for t in timing.tasks),
        "compute": sum(t.compute_busy for t in timing.tasks),
        "scalar": sum(t.scalar for t in timing.tasks),
    }
    return SimResult(outputs, timing.cycles, timing.cycles / machine.clock_hz, busy, dict(total), tuple(per_core),
                     ntasks)

