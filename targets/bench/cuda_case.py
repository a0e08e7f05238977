"""One benchmark case on a real NVIDIA GPU: compile, check against numpy, time, and time the baselines."""
from __future__ import annotations

import time

import numpy as np

from gir import ir
from gir.evaluate import shape_of


def measure_cuda(module: ir.Module, func: ir.Func, case, rng, args, copy_gbps: float) -> dict:
    import cupy as cp

    from gir.codegen import emit_func
    from gir.passes.schedule import lower_module
    from gir.targets.bench.gpu_timing import median_time, rotation_count
    from gir.targets.cuda.runner import launch_args

    row: dict = {}
    t0 = time.perf_counter()
    low = lower_module(module, target="cuda", options={"sizes": dict(case.sizes)}).func(func.name)
    row["compile_s"] = time.perf_counter() - t0
    kernels = emit_func(low, "cuda", case.sizes, None)
    fns = [cp.RawModule(code=k.source, options=("-std=c++17",)).get_function(k.name) for k in kernels]

    host = case.make_inputs(func, rng)
    case_bytes = sum(v.nbytes for v in host.values())
    n_sets = rotation_count(case_bytes)
    sets = []
    for k in range(n_sets):
        h = host if k == 0 else case.make_inputs(func, rng)
        arrays = {p.name: cp.asarray(np.ascontiguousarray(h[p.name], dtype=p.type.dtype.numpy)) for p in func.params}
        for p in low.results:
            arrays[p.name] = cp.full(shape_of(p.type, case.sizes), np.nan, dtype=p.type.dtype.numpy) \
                if p.type.dtype.is_float else cp.zeros(shape_of(p.type, case.sizes), dtype=p.type.dtype.numpy)
        for item in low.body:
            if isinstance(item, ir.Alloc):
                arrays[item.name] = cp.empty(shape_of(item.type, case.sizes), dtype=item.type.dtype.numpy)
        sets.append([(fn, *launch_args(ks.meta, arrays, case.sizes)) for fn, ks in zip(fns, kernels)])
        sets[-1].append(arrays)

    def launch(k):
        for fn, grid, block, a in sets[k][:-1]:
            fn(grid, block, a)

    launch(0)
    cp.cuda.Device().synchronize()
    outputs = {p.name: cp.asnumpy(sets[0][-1][p.name]) for p in func.results}
    row.update(case.judge(func, host, outputs))
    row["time_s"] = median_time(launch, n_sets, args.repeat)
    row["rotated_sets"] = n_sets
    if not args.no_baselines:  # a case may bring its own (an ONNX subgraph: onnxruntime, torch.compile)
        row.update(getattr(case, "gpu_baselines", lambda *a: _baselines(case, *a))(func, sets, args.repeat))
    return row


def _baselines(case, func, sets, repeat) -> dict:
    from gir.targets.bench.baselines import cupy_op, torch_op
    from gir.targets.bench.gpu_timing import median_time, torch_times

    out: dict = {}
    params = [p.name for p in func.params]
    fn = None
    try:
        import torch

        fn = torch_op(case.op)
        tsets = [[torch.from_dlpack(s[-1][n]) for n in params] for s in sets]
    except ImportError:
        pass
    if fn is not None:
        out["torch_eager_s"], out["torch_compile_s"] = torch_times(fn, tsets, repeat)
    cfn = cupy_op(case.op)
    if cfn is not None:
        out["cupy_s"] = median_time(lambda k: cfn(*[sets[k][-1][n] for n in params]), len(sets), repeat)
    return out
