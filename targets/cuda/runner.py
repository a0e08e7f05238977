"""Run an explicit GIR func on an NVIDIA GPU: generate CUDA (codegen), compile with NVRTC (cupy.RawModule),
allocate outputs and global temporaries, launch every kernel in order with its launch metadata, time it.

    if available():
        res = run_func(func, {"x": x}, sizes=None, repeat=10)
        res.outputs["y"], res.seconds
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gir import ir
from gir.codegen import INT32_MAX
from gir.errors import GirError


def available() -> bool:
    """True if cupy imports and sees at least one CUDA device."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, no driver, no device
        return False


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    seconds: float  # mean wall time of one run of all kernels (device events), 0 if repeat == 0
    kernel_seconds: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)


def launch_args(meta: dict, arrays: dict, sizes: dict[str, int]) -> tuple[tuple, tuple, tuple]:
    """(grid, block, args) for one kernel from its metadata (codegen.KernelSource.meta)."""
    from gir.codegen.launch import eval_size_expr

    grid = tuple(eval_size_expr(g, sizes) for g in meta["grid"])
    if grid[0] > INT32_MAX or grid[1] > 65535 or grid[2] > 65535:
        raise GirError(f"kernel '{meta['name']}': grid {grid} exceeds the CUDA limits")
    args = []
    for a in meta["args"]:
        if a["kind"] == "tensor":
            n = arrays[a["name"]].size
            if meta.get("index_type", "int32") == "int32" and n > INT32_MAX:
                raise GirError(f"kernel '{meta['name']}' was compiled with int32 indices but '{a['name']}' has {n} "
                               "elements at these sizes (more than 2^31-1): recompile with --index-type int64 or "
                               "`with index=int64`")
            args.append(arrays[a["name"]])
        else:
            v = sizes[a["name"]]
            if a["dtype"] != "i64" and not -INT32_MAX - 1 <= v <= INT32_MAX:
                raise GirError(f"kernel '{meta['name']}': size {a['name']}={v} does not fit its int32 parameter")
            args.append((np.int64 if a["dtype"] == "i64" else np.int32)(v))
    return grid, tuple(meta["block"]), tuple(args)


_FUNCTIONS: dict[tuple[int, str, str], object] = {}  # (device, kernel name, source) -> NVRTC function


def compiled_function(ks):
    """The cupy function of one KernelSource on the current device (compiled with NVRTC once per process)."""
    import cupy as cp

    key = (cp.cuda.Device().id, ks.name, ks.source)
    fn = _FUNCTIONS.get(key)
    if fn is None:
        try:
            fn = cp.RawModule(code=ks.source, options=("-std=c++17",)).get_function(ks.name)
        except cp.cuda.compiler.CompileException as exc:
            raise GirError(f"NVRTC failed on kernel '{ks.name}':\n{exc}") from exc
        _FUNCTIONS[key] = fn
    return fn


def prepare_launches(func: ir.Func, kernels, arrays: dict, sizes: dict[str, int]) -> list[tuple]:
    """(name, function, grid, block, args) for every kernel of `func`, in order. `arrays` holds a C-contiguous
    cupy array for every parameter and result (on the current device); the global temporaries are allocated
    into it here."""
    from gir.evaluate import shape_of
    from gir.targets.cuda.arrays import empty

    for item in func.body:
        if isinstance(item, ir.Alloc):
            arrays[item.name] = empty(shape_of(item.type, sizes), item.type.dtype.numpy)
    return [(ks.name, compiled_function(ks), *launch_args(ks.meta, arrays, sizes)) for ks in kernels]


def launch_device(func: ir.Func, kernels, arrays: dict, sizes: dict[str, int]) -> None:
    """Launch every kernel of `func` on device arrays (see prepare_launches), asynchronously on cupy's current
    stream: the results are written into `arrays[result name]`. Nothing is copied to or from the host."""
    for _, fn, grid, block, args in prepare_launches(func, kernels, arrays, sizes):
        fn(grid, block, args)


def run_func(func: ir.Func, inputs: dict[str, np.ndarray], sizes: dict[str, int] | None = None,
             repeat: int = 0, options: dict | None = None) -> RunResult:
    """Run `func` on host (numpy) inputs: copy them to the device, launch, copy the results back."""
    import cupy as cp

    from gir.codegen import emit_func
    from gir.evaluate import bind_sizes, shape_of
    from gir.targets.cuda import arrays as dev_arrays
    from gir.views import enter, to_outer

    inputs, sizes = enter(func, inputs, sizes)   # reshape views: declared-shape arrays seen in the view's shape
    sizes = bind_sizes(func, inputs, sizes)
    kernels = emit_func(func, "cuda", sizes, options)
    arrays = {p.name: dev_arrays.to_device(inputs[p.name], p.type.dtype.numpy) for p in func.params}
    for p in func.results:  # poisoned: an element no kernel writes shows up in the comparison
        arrays[p.name] = dev_arrays.poisoned(shape_of(p.type, sizes), p.type.dtype.numpy)
    launches = prepare_launches(func, kernels, arrays, sizes)

    def once():
        for _, fn, grid, block, args in launches:
            fn(grid, block, args)

    once()
    cp.cuda.Device().synchronize()  # raises on launch/runtime errors
    seconds, per_kernel = 0.0, {}
    if repeat > 0:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for name, fn, grid, block, args in launches:
            start.record()
            for _ in range(repeat):
                fn(grid, block, args)
            stop.record()
            stop.synchronize()
            per_kernel[name] = cp.cuda.get_elapsed_time(start, stop) / 1e3 / repeat
        seconds = sum(per_kernel.values())
    outputs = {p.name: dev_arrays.to_host(arrays[p.name], p.type.dtype.numpy) for p in func.results}
    return RunResult(to_outer(func, outputs, sizes), seconds, per_kernel, {ks.name: ks.source for ks in kernels})


__all__ = ["available", "run_func", "RunResult", "launch_args", "launch_device", "prepare_launches",
           "compiled_function"]
