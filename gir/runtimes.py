"""The runtimes of `gir.compile` kernels (gir/api.py): `_HostRuntime` runs sim and mlu-sim on numpy arrays,
`_DeviceRuntime` the cuda target on device arrays (cupy, or anything with DLPack / `__cuda_array_interface__`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gir.errors import GirError

if TYPE_CHECKING:   # annotations only (gir/api.py imports this module)
    from gir.api import Kernel, Program


class _HostRuntime:
    """sim and mlu-sim: numpy arrays in and out."""

    def __init__(self, target: str):
        self.target = target

    def convert(self, what: str, value):
        if isinstance(value, np.ndarray):
            return value
        if hasattr(value, "__array__"):
            try:
                return np.asarray(value)
            except Exception as exc:  # a device array refusing an implicit copy to the host (cupy), ...
                raise GirError(f"{what}: a {_type_name(value)} is not a host array ({exc}); target "
                               f"'{self.target}' takes numpy arrays") from None
        raise GirError(f"{what}: expected a numpy array, got a {_type_name(value)} (target '{self.target}' takes "
                       "numpy arrays)")

    def run(self, kernel: Kernel, program: Program, values: dict, arrays: dict, outs, sizes) -> list:
        if self.target == "sim":
            from gir.targets.sim import run_func

            with np.errstate(all="ignore"):  # overflow to inf is the program's meaning, as in gir run
                res = run_func(program.explicit, arrays, sizes, warp_size=32, check_races=kernel.check_races)
        else:
            from gir.targets.mlu.run import run_func

            with np.errstate(all="ignore"):
                res = run_func(program.explicit, arrays, sizes)
        results = [res.outputs[p.name] for p in kernel.func.results]
        if outs is None:
            return results
        for (given, arr), r in zip(outs, results):
            np.copyto(arr, r.reshape(arr.shape))  # a reshape view's result: the same elements
        return [given for given, _ in outs]


class _DeviceRuntime:
    """cuda: device arrays from any DLPack tensor (targets.cuda.device); results on the inputs' device."""

    def __init__(self, device):
        self.device = device
        self.from_host: dict[str, bool] = {}   # by `what`: the device copied the value from the host (numpy)

    def convert(self, what: str, value):
        try:
            array, self.from_host[what] = self.device.to_device(value)
        except Exception as exc:  # TypeError, BufferError, a framework's own error (e.g. an unsupported dtype)
            raise GirError(f"{what}: cannot use a {_type_name(value)} on the GPU ({exc})") from None
        return array

    def run(self, kernel: Kernel, program: Program, values: dict, arrays: dict, outs, sizes) -> list:
        from gir.evaluate import shape_of

        dev = self.device
        devices = {name: dev.device_of(a) for name, a in arrays.items()}
        devices.update({f"out '{p.name}'": dev.device_of(a) for p, (_, a) in zip(kernel.func.results, outs or [])})
        first = next(iter(devices.values()), None)
        for name, d in devices.items():
            if d != first:
                where = name if name.startswith("out") else f"argument '{name}'"
                raise GirError(f"{where} is on device {d}, the first argument on device {first}: every tensor must "
                               "be on one device")
        with dev.using(first if first is not None else 0):
            buffers = {name: dev.contiguous(a) for name, a in arrays.items()}
            copies = []   # results computed into a fresh buffer, then copied into a strided, host or aliasing out=
            for p, (given, arr) in zip(kernel.func.results, outs or [(None, None)] * len(kernel.func.results)):
                on_host = self.from_host.get(f"out '{p.name}'", False)
                if arr is not None and dev.is_contiguous(arr) and not on_host and \
                        not any(dev.overlaps(arr, a) for a in arrays.values()):
                    buffers[p.name] = arr.reshape(shape_of(p.type, sizes))  # a view of a contiguous array
                    continue
                buffers[p.name] = dev.empty(shape_of(p.type, sizes), p.type.dtype.numpy)
                if arr is not None:
                    copies.append((buffers[p.name], given if on_host else arr, on_host))
            dev.launch(program.explicit, program.kernels, buffers, sizes)
            for result, dest, on_host in copies:
                if on_host:
                    dev.to_host(result, dest)
                else:
                    dest[...] = result.reshape(dest.shape)
        if outs is not None:
            return [given for given, _ in outs]
        like = next(iter(values.values()), None)
        return [dev.wrap(buffers[p.name], like, p.type.dtype.numpy) for p in kernel.func.results]


def _cuda_device():
    from gir.targets.cuda import available

    if not available():
        raise GirError("target 'cuda' cannot run here: no CUDA device available (it needs an NVIDIA GPU and "
                       "cupy); gir.compile(..., target='sim') runs the same kernels on the CPU simulator")
    from gir.targets.cuda.device import CupyDevice

    return CupyDevice()


def _type_name(value) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__qualname__}"


# -- loading ---------------------------------------------------------------------------------------------------
