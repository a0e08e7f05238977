"""Timing on a real GPU with CUDA events (METHOD.md): warm-up, median of many runs, input sets rotated so that
the working set exceeds L2, and a device copy bandwidth measured in the same process."""
from __future__ import annotations

import statistics

L2_BYTES = 50 * 2**20  # H100; rotation aims at 4x this


def rotation_count(case_bytes: int, max_sets: int = 8) -> int:
    """How many input sets to rotate through so that one pass over them does not fit in L2."""
    if case_bytes <= 0:
        return 1
    return max(1, min(max_sets, -(-4 * L2_BYTES // case_bytes)))


def median_time(launch, n_sets: int, repeat: int, warmup: int = 5) -> float:
    """Median seconds of `launch(k)` (k = input set index), timed one launch at a time with events."""
    import cupy as cp

    for k in range(warmup):
        launch(k % n_sets)
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for r in range(repeat):
        start.record()
        launch(r % n_sets)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 1 << 30, repeat: int = 20) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written."""
    import cupy as cp

    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    t = median_time(lambda k: dst.__setitem__(Ellipsis, src), 1, repeat)
    return 2 * nbytes / t / 1e9


def torch_times(fn, tensors_sets, repeat: int, compiled: bool = True) -> tuple[float | None, float | None]:
    """(eager, torch.compile) median seconds of `fn` over rotated input sets; None where unavailable or not
    wanted (`compiled` False)."""
    try:
        import torch
    except ImportError:
        return None, None

    def timed(f):
        for k in range(3):
            f(*tensors_sets[k % len(tensors_sets)])
        torch.cuda.synchronize()
        times = []
        for r in range(repeat):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            f(*tensors_sets[r % len(tensors_sets)])
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        return statistics.median(times)

    eager = timed(fn)
    if not compiled:
        return eager, None
    try:
        compiled = timed(torch.compile(fn))
    except Exception:  # torch.compile needs a working Triton; report the eager number alone
        compiled = None
    return eager, compiled
