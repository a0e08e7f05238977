"""The cuda path of gir.compile: DLPack arguments, validation, result allocation and out=.

Without a GPU, a CPU device stands in for targets.cuda.device.CupyDevice: numpy is the array library (taking
DLPack tensors through np.from_dlpack, zero-copy) and the emitted CUDA runs on the CPU emulator
(targets/cuda_emu). On a machine with a GPU the same calls run through cupy (and torch, when installed)."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import gir
from gir.errors import GirError
from gir.targets import cuda_emu

from .common import SOFTMAX, TWO, assert_matches, normal


class Tensor:
    """A framework tensor that is neither numpy nor cupy: DLPack only, on a given device."""

    def __init__(self, array: np.ndarray, device: int = 0):
        self._array, self.device_id = array, device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class EmuDevice:
    """The interface of targets.cuda.device.CupyDevice over numpy arrays and the CUDA emulator."""

    def __init__(self):
        self.devices: dict[int, int] = {}   # id(array) -> device of the tensor it views
        self.launched: list[str] = []

    def to_device(self, value):
        array = np.from_dlpack(value)  # TypeError/AttributeError for anything without __dlpack__
        self.devices[id(array)] = getattr(value, "device_id", 0)
        return array, False

    def device_of(self, array) -> int:
        return self.devices.get(id(array), 0)

    def using(self, device: int):
        return contextlib.nullcontext()

    def contiguous(self, array):
        return np.ascontiguousarray(array)

    def is_contiguous(self, array) -> bool:
        return bool(array.flags.c_contiguous)

    def overlaps(self, a, b) -> bool:
        return bool(np.may_share_memory(a, b))

    def empty(self, shape, dtype):
        return np.full(shape, np.nan, dtype)

    def launch(self, func, kernels, arrays, sizes) -> None:
        from gir.codegen import combined_source
        from gir.codegen.launch import eval_size_expr
        from gir import ir
        from gir.evaluate import shape_of
        from gir.targets.cuda_emu.run import DeviceBuffer, compile_source, launch

        lib = compile_source(combined_source(kernels), [ks.name for ks in kernels])
        types = {p.name: p.type for p in func.params + func.results}
        types.update({a.name: a.type for a in func.body if isinstance(a, ir.Alloc)})
        bufs = {name: DeviceBuffer(shape_of(t, sizes), t.dtype, arrays.get(name)) for name, t in types.items()}
        for ks in kernels:
            grid = tuple(eval_size_expr(g, sizes) for g in ks.meta["grid"])
            args = [bufs[a["name"]] if a["kind"] == "tensor" else
                    (np.int64 if a["dtype"] == "i64" else np.int32)(sizes[a["name"]]) for a in ks.meta["args"]]
            launch(lib, ks.name, grid, tuple(ks.meta["block"]), args)
            self.launched.append(ks.name)
        for p in func.results:
            arrays[p.name][...] = bufs[p.name].array

    def to_host(self, array, out) -> None:
        np.copyto(out, array)

    def wrap(self, array, like, dtype=None):
        return array


needs_emu = pytest.mark.skipif(not cuda_emu.available(), reason="the CUDA emulator needs g++ with C++20")


@pytest.fixture
def device(monkeypatch):
    dev = EmuDevice()
    monkeypatch.setattr(gir.api, "_cuda_device", lambda: dev)
    return dev


@needs_emu
def test_dlpack_tensors_in_device_arrays_out(device):
    k = gir.compile(SOFTMAX, target="cuda")
    x = normal((5, 70), seed=20)
    y = k(Tensor(x))
    assert isinstance(y, np.ndarray) and device.launched
    assert_matches(k, {"x": x}, y)


@needs_emu
def test_several_results_keywords_and_out(device):
    k = gir.compile(TWO, target="cuda")
    x, b = normal((4, 33), seed=21), normal((33,), seed=22)
    y, s = np.empty((4, 33), np.float32), np.empty(4, np.float32)
    ty, ts = Tensor(y), Tensor(s)
    got = k(b=Tensor(b), x=Tensor(x), out=(ty, ts))
    assert got[0] is ty and got[1] is ts  # the caller's tensors come back, written in place
    assert_matches(k, {"x": x, "b": b}, (y, s))


@needs_emu
def test_strided_inputs_and_out(device):
    k = gir.compile(SOFTMAX, target="cuda")
    big = normal((6, 80), seed=23)
    x = big[::2, ::2]                   # not contiguous: copied to a contiguous device buffer first
    dest = np.zeros((3, 80), np.float32)
    view = dest[:, ::2]                 # a strided out=: computed into a buffer, then copied in
    assert k(Tensor(x), out=Tensor(view)) is not None
    assert_matches(k, {"x": x}, np.ascontiguousarray(view))
    assert not dest[:, 1::2].any()      # nothing outside the view was written


@needs_emu
def test_out_over_an_input_is_computed_aside(device):
    k = gir.compile(SOFTMAX, target="cuda")
    x = normal((4, 50), seed=25)
    inout = x.copy()
    t = Tensor(inout)
    assert k(t, out=t) is t
    assert_matches(k, {"x": x}, inout)


@pytest.mark.parametrize("call, message", [
    (lambda k: k(Tensor(normal((4, 7), dtype=np.float64)), Tensor(normal((7,)))),
     r"argument 'x': expected f32\[4, 7\], got float64\[4, 7\]"),
    (lambda k: k(Tensor(normal((4, 7))), Tensor(normal((6,)))), r"argument 'b': expected f32\[7\], got float32\[6\]"),
    (lambda k: k(Tensor(normal((4, 7))), [1.0] * 7), r"argument 'b': cannot use a list on the GPU"),
    (lambda k: k(Tensor(normal((4, 7))), Tensor(normal((7,)), device=1)),
     r"argument 'b' is on device 1, the first argument on device 0"),
    (lambda k: k(Tensor(normal((4, 7))), Tensor(normal((7,))), out=(Tensor(np.empty((4, 7), np.float32)),
                                                                     Tensor(np.empty(5, np.float32)))),
     r"out 's': expected f32\[4\], got float32\[5\]"),
    (lambda k: k(Tensor(normal((4, 7)))), r"missing argument 'b'"),
])
def test_errors_name_the_argument(device, call, message):
    k = gir.compile(TWO, target="cuda")
    with pytest.raises(GirError, match=message):
        call(k)
    assert device.launched == []


def test_cupy_device_wraps_frameworks_without_a_gpu():
    """The conversions of CupyDevice that need no device: what is refused, and into which framework results go."""
    from gir.targets.cuda.device import CupyDevice

    class FakeCupy:
        class ndarray:
            pass

        @staticmethod
        def asnumpy(a):
            return np.asarray(a)

        @staticmethod
        def from_dlpack(v):
            return ("viewed", v)

        @staticmethod
        def asarray(v):
            return ("copied", v)

    dev = CupyDevice.__new__(CupyDevice)
    dev.xp = FakeCupy
    t = Tensor(normal((2,)))
    assert dev.to_device(t) == (("viewed", t), False)
    host = normal((2,))
    assert dev.to_device(host) == (("copied", host), True)
    with pytest.raises(TypeError, match="neither a DLPack tensor nor a numpy array"):
        dev.to_device([1.0])
    assert dev.wrap("device array", like=t) == "device array"
    assert isinstance(dev.wrap(host, like=host), np.ndarray)


from gir.targets.cuda import available as gpu_available  # noqa: E402

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA device (needs an NVIDIA GPU and cupy)")


@needs_gpu
def test_gpu_cupy_and_torch_tensors_stay_on_the_device():
    import cupy as cp

    k = gir.compile(SOFTMAX, target="cuda")
    x = normal((33, 1000), seed=24)
    y = k(cp.asarray(x))
    assert isinstance(y, cp.ndarray)
    assert_matches(k, {"x": x}, cp.asnumpy(y))
    out = cp.empty_like(y)
    assert k(cp.asarray(x), out=out) is out
    np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(y))
    assert_matches(k, {"x": x}, k(x))  # numpy in: copied over and back
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    ty = k(torch.from_numpy(x).cuda())
    assert isinstance(ty, torch.Tensor) and ty.is_cuda
    assert_matches(k, {"x": x}, ty.cpu().numpy())


def test_device_bf16_bits_are_a_bf16_argument():
    """cupy has no bfloat16: a device array of int16 carries a bf16 argument's bits (targets/cuda/arrays.py); a
    host int16 array, or device bits of another width, is still refused."""
    from gir import ir
    from gir.api import check_array
    from gir.errors import GirError

    class DeviceArray:   # what check_array reads of a cupy array
        def __init__(self, dtype, shape):
            self.dtype, self.shape = np.dtype(dtype), shape

    bf16 = ir.TensorType(ir.DType.bf16, ("N",))
    check_array("argument 'x'", bf16, DeviceArray(np.int16, (5,)), {"N": 5})
    for bad in (DeviceArray(np.float32, (5,)), DeviceArray(np.int16, (4,)), np.zeros(5, np.int16)):
        with pytest.raises(GirError, match="argument 'x': expected bf16"):
            check_array("argument 'x'", bf16, bad, {"N": 5})
    with pytest.raises(GirError, match="expected f16"):
        check_array("argument 'x'", ir.TensorType(ir.DType.f16, ("N",)), DeviceArray(np.int16, (5,)), {"N": 5})
