"""Run an operator-layer GIR function on the simulated MLU: schedule → emit BANG-C text → parse that text →
simulate each kernel in order (the host part: GDRAM buffers for parameters, results and temporaries).
Nothing but the emitted program text reaches the simulator."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gir import ir
from gir.evaluate import bind_sizes
from gir.views import enter, to_outer


class MluStats(dict):
    """A dict of run statistics that also answers the attribute names of the other runners' stats
    (`global_bytes`, `global_read_bytes`, `global_write_bytes`: GDRAM bytes), as `gir run` prints them."""

    global_bytes = property(lambda self: int(self["gdram_traffic_bytes"]))
    global_read_bytes = property(lambda self: int(self["gdram_read_bytes"]))
    global_write_bytes = property(lambda self: int(self["gdram_write_bytes"]))


@dataclass
class MluRunResult:
    outputs: dict[str, np.ndarray]
    stats: dict = field(default_factory=dict)   # seconds, cycles, gdram bytes, kernels, per-kernel seconds
    source: str = ""
    explicit: ir.Func | None = None
    remarks: list = field(default_factory=list)   # missed remarks of the scheduler (gir.passes.remarks.Remark)


def _dev_dtype(dt: ir.DType) -> np.dtype:
    """GDRAM element type: bool is uint8; i64 is int32 on the device (`int` in the emitted code, 4-byte elements
    in codegen/mlu/emit.py), converted at the host boundary by `_to_device`."""
    return np.dtype(np.uint8) if dt == ir.DType.bool else np.dtype(np.int32) if dt == ir.DType.i64 else dt.numpy


def _to_device(name: str, value, dt: ir.DType, shape, loc) -> np.ndarray:
    a = np.asarray(value)
    if dt == ir.DType.i64 and a.size:
        lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        if a.min() < lo or a.max() > hi:
            from gir.errors import GirError
            raise GirError(f"i64 input '{name}' has values outside the int32 range the MLU target supports "
                           f"([{a.min()}, {a.max()}])", loc)
    return np.ascontiguousarray(a.astype(_dev_dtype(dt)).reshape(shape))


def run_func(func_or_module, inputs: dict[str, np.ndarray], sizes: dict[str, int] | None = None,
             mode: str = "fused", pipeline: bool = True, allow_sram: bool = True, machine=None,
             values: bool = True) -> MluRunResult:
    """``values=False``: timing-only simulation (`targets.mlu.ShapeOnly` for every GDRAM buffer, nothing allocated);
    ``inputs`` may be None (then every size must be in ``sizes``) and no outputs are returned."""
    import time
    from gir.codegen.mlu import emit_func
    from gir.passes.schedule_mlu import schedule_mlu
    from gir.targets.mlu import MLU370, ShapeOnly, parse_program, simulate

    func = func_or_module.funcs[0] if isinstance(func_or_module, ir.Module) else func_or_module
    machine = machine or MLU370
    inputs, sizes = enter(func, inputs or {}, sizes)   # reshape views: declared-shape arrays seen as the view
    sizes = bind_sizes(func, inputs, sizes) if values or inputs else dict(sizes or {})
    t0 = time.perf_counter()
    remarks: list = []
    explicit = schedule_mlu(func, sizes, mode=mode, allow_sram=allow_sram, remarks=remarks) \
        if not func.is_explicit else func
    kernels = emit_func(explicit, pipeline=pipeline)
    text = "".join(k.source for k in kernels)
    program = parse_program(text, f"{func.name}.mlu")
    compile_seconds = time.perf_counter() - t0
    shapes = {p.name: (tuple(p.type.shape), p.type.dtype) for p in explicit.params + explicit.results}
    for item in explicit.body:
        if isinstance(item, ir.Alloc):
            shapes[item.name] = (tuple(item.type.shape), item.type.dtype)
    mem = {}
    for name, (shape, dt) in shapes.items():
        if not values:
            mem[name] = ShapeOnly(shape, _dev_dtype(dt))
        elif name in inputs:
            mem[name] = _to_device(name, inputs[name], dt, shape, func.loc)
        else:
            mem[name] = np.zeros(shape, _dev_dtype(dt))
    stats = MluStats({"seconds": 0.0, "cycles": 0.0, "gdram_read_bytes": 0.0, "gdram_write_bytes": 0.0,
             "gdram_traffic_bytes": 0.0, "kernels": [], "compile_seconds": compile_seconds,
             "pipe_busy": {}})   # cycles summed over tasks and kernels, per pipe (io, compute, scalar)
    for k in kernels:
        args = {n: mem[n] for n in k.metadata["params"]}
        res = simulate(program, k.name, args, k.metadata["task_dim"], machine, values=values)
        if values:
            mem.update({n: res.outputs[n] for n in k.metadata["params"]})
        stats["seconds"] += res.seconds
        stats["cycles"] += res.cycles
        for key in ("gdram_read_bytes", "gdram_write_bytes", "gdram_traffic_bytes"):
            stats[key] += res.bytes.get(key, 0.0)
        stats["kernels"].append((k.name, res.seconds))
        for pipe, busy in res.pipe_busy.items():
            stats["pipe_busy"][pipe] = stats["pipe_busy"].get(pipe, 0.0) + busy
    outs = {}
    for p in (func.results if values else ()):
        v = mem[p.name]
        outs[p.name] = v.astype(bool) if p.type.dtype == ir.DType.bool else v.astype(p.type.dtype.numpy)
    return MluRunResult(to_outer(explicit, outs, sizes), stats, text, explicit, remarks)
