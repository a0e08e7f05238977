"""Device arrays for `gir.compile(..., target="cuda")`: tensors of any framework in, through DLPack, without a
host round trip; results allocated on the inputs' device and handed back in the inputs' framework.

    dev = CupyDevice()
    x, on_host = dev.to_device(torch_tensor)        # a cupy view of the same memory (zero-copy)
    with dev.using(dev.device_of(x)):
        dev.launch(func, kernels, {"x": x, "y": y}, sizes)
    dev.wrap(y, like=torch_tensor)                  # a torch tensor viewing y's memory

The API (gir/api.py) speaks to a device only through these methods, so a test can stand a CPU device in for
this one (tests/api run the emitted CUDA on the CPU emulator that way).
"""
from __future__ import annotations

import numpy as np

from gir.targets.cuda.arrays import as_torch, bits, from_bits, storage


class CupyDevice:
    """cupy as the array library; kernels compiled with NVRTC and launched on cupy's current stream."""

    def __init__(self):
        import cupy

        self.xp = cupy

    def to_device(self, value):
        """(device array, came_from_host). cupy arrays as they are; numpy arrays are copied to the current
        device; anything with `__dlpack__` (torch, jax, ...) or `__cuda_array_interface__` is viewed in place.
        TypeError/ValueError/BufferError from the frameworks for anything else."""
        xp = self.xp
        if isinstance(value, xp.ndarray):
            return value, False
        if isinstance(value, np.ndarray):
            return xp.asarray(bits(value)), True
        if type(value).__module__.split(".")[0] == "torch" and str(getattr(value, "dtype", "")) == "torch.bfloat16":
            import torch

            return xp.from_dlpack(value.view(torch.int16)), False  # cupy has no bfloat16: its bits
        if hasattr(value, "__dlpack__"):
            return xp.from_dlpack(value), False
        if hasattr(value, "__cuda_array_interface__"):
            return xp.asarray(value), False
        raise TypeError(f"a {type(value).__module__}.{type(value).__qualname__} is neither a DLPack tensor nor a "
                        "numpy array")

    def device_of(self, array) -> int:
        return array.device.id

    def using(self, device: int):
        """A context manager making `device` current."""
        return self.xp.cuda.Device(device)

    def contiguous(self, array):
        return array if array.flags.c_contiguous else self.xp.ascontiguousarray(array)

    def is_contiguous(self, array) -> bool:
        return bool(array.flags.c_contiguous)

    def overlaps(self, a, b) -> bool:
        """Whether two device arrays may share memory (a result written in place over an input)."""
        return bool(self.xp.may_share_memory(a, b))

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype=storage(dtype))

    def launch(self, func, kernels, arrays: dict, sizes: dict[str, int]) -> None:
        from gir.targets.cuda.runner import launch_device

        launch_device(func, kernels, arrays, sizes)

    def to_host(self, array, out: np.ndarray) -> None:
        """Copy a device array into the numpy array `out` (synchronises)."""
        np.copyto(out, from_bits(self.xp.asnumpy(array), out.dtype))

    def wrap(self, array, like, dtype=None):
        """`array` (holding `dtype` elements) in the framework of the input `like`: numpy (a copy to the host,
        as numpy inputs came from there), torch (a zero-copy view through DLPack), otherwise the cupy array
        itself (a bf16 result: its bits, as int16)."""
        if isinstance(like, np.ndarray):
            host = self.xp.asnumpy(array)
            return from_bits(host, dtype) if dtype is not None else host
        if type(like).__module__.split(".")[0] == "torch":
            return as_torch(array, dtype)
        return array


__all__ = ["CupyDevice"]
