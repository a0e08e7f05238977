"""Baselines of an ONNX subgraph on a GPU, for `gir bench MODEL.onnx --target cuda`: onnxruntime with the
CUDAExecutionProvider on the subgraph exported as its own model, and torch.compile of the subgraph interpreted
with torch (targets/bench/onnx_fn.py). Both read the same device arrays as the GIR kernels (the rotated input
sets of cuda_case.py), without host copies. Where a framework is missing or cannot run the subgraph, its time is
None and `ort_note` / `torch_note` says why in one line.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from gir import ir

ORT_MISSING = "onnxruntime is not installed (pip install onnxruntime-gpu): no onnxruntime time"
TORCH_MISSING = "torch is not installed (pip install torch): no torch.compile time"


def model_baselines(case, func: ir.Func, sets: list, repeat: int, compiled: bool = True) -> dict:
    """`ort_s` and `torch_eager_s` / `torch_compile_s` (median seconds; torch.compile when `compiled`) with
    their notes."""
    model = case.subgraph()
    out = ort_time(model, case, func, sets, repeat)
    out.update(torch_time(model, case, func, sets, repeat, compiled))
    return out


def ort_time(model, case, func: ir.Func, sets: list, repeat: int) -> dict:
    try:
        import onnxruntime as ort
    except ImportError:
        return {"ort_s": None, "ort_note": ORT_MISSING}
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return {"ort_s": None, "ort_note": "onnxruntime has no CUDAExecutionProvider here (install "
                                           "onnxruntime-gpu): no onnxruntime time"}
    if case.retyped:
        return {"ort_s": None, "ort_note": f"onnxruntime runs the model in its own element types, not "
                                           f"--dtypes {case.dtype}: no onnxruntime time for retyped cases"}
    if any(p.type.dtype == ir.DType.bf16 for p in func.params + func.results):
        return {"ort_s": None, "ort_note": "onnxruntime's IO binding takes no bfloat16 numpy type here: no "
                                           "onnxruntime time for bf16 subgraphs"}
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CUDAExecutionProvider"])
        bindings = [_bind(session, case.function, func, s[-1]) for s in sets]
        return {"ort_s": _median_wall(lambda k: session.run_with_iobinding(bindings[k]), len(sets), repeat)}
    except Exception as exc:  # onnxruntime's own errors (an op without a CUDA kernel, ...): one line
        return {"ort_s": None, "ort_note": f"onnxruntime failed: {str(exc).splitlines()[0][:200]}"}


def _bind(session, fn, func: ir.Func, arrays: dict):
    io = session.io_binding()
    for p in func.params:
        a = arrays[p.name]
        io.bind_input(fn.inputs[p.name], "cuda", 0, np.dtype(a.dtype), list(a.shape), a.data.ptr)
    for p in func.results:
        a = arrays[p.name]
        io.bind_output(fn.outputs[p.name], "cuda", 0, np.dtype(a.dtype), list(a.shape), a.data.ptr)
    return io


def _median_wall(run, n_sets: int, repeat: int, warmup: int = 5) -> float:
    """Median host seconds of a synchronous call (onnxruntime's run_with_iobinding returns when it is done)."""
    for k in range(warmup):
        run(k % n_sets)
    times = []
    for r in range(repeat):
        t0 = time.perf_counter()
        run(r % n_sets)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_time(model, case, func: ir.Func, sets: list, repeat: int, compiled: bool = True) -> dict:
    try:
        import torch  # noqa: F401 - whether torch imports (as_torch uses it below)
    except ImportError:
        return {"torch_eager_s": None, "torch_compile_s": None, "torch_note": TORCH_MISSING}
    from gir.targets.bench.gpu_timing import torch_times
    from gir.targets.bench.onnx_fn import TorchBackend, UnsupportedOp, onnx_function
    from gir.targets.cuda.arrays import as_torch

    try:
        fn = onnx_function(model, TorchBackend("cuda"))
    except UnsupportedOp as exc:
        return {"torch_eager_s": None, "torch_compile_s": None, "torch_note": f"torch: {exc}"}
    by_onnx = {t: g for g, t in case.function.inputs.items()}
    dtypes = {p.name: p.type.dtype.numpy for p in func.params}
    tsets = [[as_torch(s[-1][by_onnx[name]], dtypes[by_onnx[name]]) for name in fn.input_names] for s in sets]
    eager, timed = torch_times(fn, tsets, repeat, compiled)
    out = {"torch_eager_s": eager, "torch_compile_s": timed}
    if compiled and timed is None:
        out["torch_note"] = "torch.compile failed on this subgraph (it needs a working Triton): eager time only"
    return out
