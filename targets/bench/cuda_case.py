"""One benchmark case on a real NVIDIA GPU: compile, check against numpy, time, and time the baselines."""
from __future__ import annotations

import math
import time

from gir import ir
from gir.evaluate import shape_of
from gir.targets.bench.cases import Case


CUDA_VALUES_LIMIT = 1 << 25   # elements over all tensors whose values are judged (the float64 evaluator on the host)


def measure_cuda(module: ir.Module, func: ir.Func, case, rng, args, copy_gbps: float) -> dict:
    """Compile, run once on poisoned results and judge (cases up to CUDA_VALUES_LIMIT elements; larger ones are
    timed only, on inputs drawn on the device), then time over rotated input sets."""
    import cupy as cp

    from gir.codegen import emit_func
    from gir.evaluate import domain_ranges
    from gir.passes.schedule import lower_module
    from gir.targets.bench.gpu_timing import median_time, rotation_count
    from gir.targets.bench.runners import total_elements
    from gir.targets.cuda import arrays as dev_arrays
    from gir.targets.cuda.runner import compiled_function, prepare_launches

    row: dict = {}
    t0 = time.perf_counter()
    low = lower_module(module, target="cuda", options={"sizes": dict(case.sizes)}).func(func.name)
    row["compile_s"] = time.perf_counter() - t0
    kernels = emit_func(low, "cuda", case.sizes, None)
    for k in kernels:   # NVRTC, before any input is drawn; a GirError names the kernel and the log
        compiled_function(k)

    values = total_elements(func, case.sizes) <= CUDA_VALUES_LIMIT
    host = case.make_inputs(func, rng) if values else None
    own_inputs = type(case).make_inputs is not Case.make_inputs   # e.g. an ONNX subgraph's: always from the case
    case_bytes = sum(math.prod(shape_of(p.type, case.sizes)) * p.type.dtype.numpy.itemsize for p in func.params)
    n_sets = rotation_count(case_bytes)
    seed = int(rng.integers(1 << 31))
    ranges = domain_ranges(func)
    sets = []
    for k in range(n_sets):
        if k == 0 and values:
            viewed = case.viewed(func, host)
            arrays = {p.name: dev_arrays.to_device(viewed[p.name], p.type.dtype.numpy) for p in func.params}
        elif own_inputs:
            h = case.viewed(func, case.make_inputs(func, rng))
            arrays = {p.name: dev_arrays.to_device(h[p.name], p.type.dtype.numpy) for p in func.params}
        else:
            arrays = {p.name: dev_arrays.random(shape_of(p.type, case.sizes), p.type.dtype.numpy, seed + k,
                                                ranges.get(p.name)) for p in func.params}
        for p in low.results:
            arrays[p.name] = dev_arrays.poisoned(shape_of(p.type, case.sizes), p.type.dtype.numpy)
        sets.append([launch[1:] for launch in prepare_launches(low, kernels, arrays, case.sizes)] + [arrays])

    def launch(k):
        for fn, grid, block, a in sets[k][:-1]:
            fn(grid, block, a)

    launch(0)
    cp.cuda.Device().synchronize()
    if values:
        outputs = {p.name: dev_arrays.to_host(sets[0][-1][p.name], p.type.dtype.numpy) for p in func.results}
        row.update(case.judge(func, host, outputs))
    else:
        row["status"] = "timed"
        row["note"] = (f"timed only: more than {CUDA_VALUES_LIMIT} elements for the host evaluator (the same kernels "
                       "are judged at smaller sizes)")
    row["time_s"] = median_time(launch, n_sets, args.repeat)
    row["rotated_sets"] = n_sets
    which = args.baselines   # all (torch eager, torch.compile, cupy), eager (no torch.compile) or none
    if which != "none":  # a case may bring its own (an ONNX subgraph: onnxruntime, torch.compile)
        own = getattr(case, "gpu_baselines", None)
        how = {"compiled": which == "all"}
        row.update(own(func, sets, args.repeat, **how) if own else _baselines(case, func, sets, args.repeat, **how))
    return row


def _baselines(case, func, sets, repeat, compiled: bool = True) -> dict:
    from gir.targets.bench.baselines import cupy_op, torch_op
    from gir.targets.bench.gpu_timing import median_time, torch_times
    from gir.targets.cuda import arrays as dev_arrays

    out: dict = {}
    params = [p.name for p in func.params]
    fn = None
    bf16 = [p.name for p in func.params if dev_arrays.is_bf16(p.type.dtype.numpy)]
    try:
        fn = torch_op(case.op)
        tsets = [[dev_arrays.as_torch(s[-1][p.name], p.type.dtype.numpy) for p in func.params] for s in sets]
    except ImportError:
        pass
    if fn is not None:
        out["torch_eager_s"], out["torch_compile_s"] = torch_times(fn, tsets, repeat, compiled)
    cfn = cupy_op(case.op)
    if cfn is not None and not bf16:   # cupy has no bfloat16
        out["cupy_s"] = median_time(lambda k: cfn(*[sets[k][-1][n] for n in params]), len(sets), repeat)
    return out
