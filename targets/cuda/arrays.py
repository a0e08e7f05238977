"""Host <-> device arrays for the CUDA runners. cupy has no bfloat16: a bf16 tensor lives on the device as
int16 (the same bits; kernels take plain pointers; every torch can view int16 as bfloat16) and is viewed back as
ml_dtypes.bfloat16 on the host. Results
start poisoned so that an element no kernel writes shows up in the comparison."""
from __future__ import annotations

import numpy as np


def is_bf16(dtype) -> bool:
    return np.dtype(dtype).name == "bfloat16"


def storage(dtype) -> np.dtype:
    """The cupy dtype holding `dtype`'s elements."""
    return np.dtype(np.int16) if is_bf16(dtype) else np.dtype(dtype)


def bits(host: np.ndarray) -> np.ndarray:
    """A host array as the device holds it (a bf16 one: a view of its bits)."""
    return host.view(np.int16) if is_bf16(host.dtype) else host


def from_bits(host: np.ndarray, dtype) -> np.ndarray:
    """A host copy of a device array holding `dtype` elements, as `dtype`."""
    return host.view(dtype) if is_bf16(dtype) else host


def as_torch(array, dtype):
    """A zero-copy torch tensor of a device array holding `dtype` elements (bf16: the bits viewed as bfloat16)."""
    import torch

    t = torch.from_dlpack(array)
    return t.view(torch.bfloat16) if dtype is not None and is_bf16(dtype) else t


def to_device(host: np.ndarray, dtype=None):
    """A cupy copy of a host array (converted to `dtype` first when given)."""
    import cupy as cp

    return cp.asarray(bits(np.ascontiguousarray(host if dtype is None else np.asarray(host).astype(dtype, copy=False))))


def to_host(array, dtype) -> np.ndarray:
    """The host copy of a device array holding `dtype` elements."""
    import cupy as cp

    return from_bits(cp.asnumpy(array), dtype)


def empty(shape, dtype):
    import cupy as cp

    return cp.empty(shape, dtype=storage(dtype))


def random(shape, dtype, seed: int, value_range: tuple[float, float] | None = None):
    """Random device values of `dtype` drawn on the device (no host copy: timing inputs of large cases), as
    gir.evaluate.random_inputs draws them: normal floats (uniform in `value_range` when given: an input's domain),
    integers 1..7, booleans half true."""
    import cupy as cp

    gen = cp.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return gen.random(shape, dtype=np.float32) < 0.5
    if dt.kind in "iu":
        return gen.integers(1, 8, size=shape).astype(dt)
    wide = np.float64 if dt.itemsize == 8 else np.float32
    if value_range is not None:
        lo, hi = value_range
        x = (lo + (hi - lo) * gen.random(shape, dtype=wide)).astype(wide)
    else:
        x = gen.standard_normal(shape, dtype=wide)
    if is_bf16(dt):
        return (x.view(np.uint32) >> 16).astype(np.int16)   # truncated to bf16's bits
    return x.astype(dt)


def poisoned(shape, dtype):
    """A device array of `dtype` elements that all read as 'never written': NaN for floats (bf16's NaN bits), the
    most negative value for integers, True for bool."""
    import cupy as cp

    dt = np.dtype(dtype)
    if is_bf16(dt):
        return cp.full(shape, 0x7FC0, dtype=np.int16)
    if dt.kind == "f":
        value = np.nan
    elif dt.kind in "iu":
        value = np.iinfo(dt).min
    else:
        value = True
    return cp.full(shape, value, dtype=dt)


__all__ = ["is_bf16", "storage", "bits", "from_bits", "as_torch", "to_device", "to_host", "empty", "random",
           "poisoned"]
