"""Array backends of the ONNX-subgraph interpreter (targets/bench/onnx_fn.py): numpy (checked against
onnx.reference on a CPU) and torch (tensors on a device, what torch.compile compiles). A backend supplies
primitives only; ONNX semantics live in the interpreter."""
from __future__ import annotations

import numpy as np

import onnx

_NP_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
             onnx.TensorProto.INT32: np.int32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.BOOL: np.bool_,
             onnx.TensorProto.DOUBLE: np.float64}


class NumpyBackend:
    """numpy arrays; unary functions from the GIR evaluator (float64, rounded to the operand's type)."""
    name = "numpy"

    def constant(self, value: np.ndarray):
        return np.asarray(value)

    def unary(self, fn: str, x):
        from gir.evaluate import UNARY_FLOAT

        if fn == "abs":  # integers too
            return np.abs(x)
        f = UNARY_FLOAT.get(fn) or {"tan": np.tan, "sinh": np.sinh, "cosh": np.cosh}[fn]
        with np.errstate(all="ignore"):
            return np.asarray(f(x.astype(np.float64))).astype(x.dtype)

    def cast(self, x, elem_type: int):
        if elem_type == onnx.TensorProto.BFLOAT16:
            import ml_dtypes
            return x.astype(ml_dtypes.bfloat16)
        return x.astype(_NP_TYPES[elem_type])

    def like(self, x, ref):
        return x.astype(ref.dtype)

    def maximum(self, a, b):
        return np.maximum(a, b)

    def minimum(self, a, b):
        return np.minimum(a, b)

    def where(self, c, a, b):
        return np.where(c, a, b)

    def reduce(self, kind: str, x, axes: tuple[int, ...], keepdims: bool):
        fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[kind]
        return fn(x, axis=axes, keepdims=keepdims).astype(x.dtype)

    def reshape(self, x, shape):
        return x.reshape(tuple(shape))

    def transpose(self, x, perm):
        return np.transpose(x, perm)

    def expand(self, x, shape):
        return np.broadcast_to(x, tuple(shape))

    def slice(self, x, slices: list[slice]):
        return x[tuple(slices)]

    def isnan(self, x):
        return np.isnan(x)

    def isinf(self, x):
        return np.isinf(x)

    def cumsum(self, x, axis: int, exclusive: bool, reverse: bool):
        y = np.flip(x, axis) if reverse else x
        y = np.cumsum(y, axis=axis, dtype=x.dtype)
        if exclusive:  # shift by one along the axis, the identity first
            first = np.zeros_like(np.take(y, [0], axis))
            y = np.concatenate([first, np.take(y, range(y.shape[axis] - 1), axis)], axis)
        return np.flip(y, axis) if reverse else y


class TorchBackend:
    """torch tensors on `device` (what torch.compile compiles); scalars stay Python numbers."""
    name = "torch"

    def __init__(self, device: str = "cuda"):
        import torch

        self.torch = torch
        self.device = device
        self.types = {onnx.TensorProto.FLOAT: torch.float32, onnx.TensorProto.FLOAT16: torch.float16,
                      onnx.TensorProto.BFLOAT16: torch.bfloat16, onnx.TensorProto.INT32: torch.int32,
                      onnx.TensorProto.INT64: torch.int64, onnx.TensorProto.BOOL: torch.bool,
                      onnx.TensorProto.DOUBLE: torch.float64}

    def constant(self, value: np.ndarray):
        value = np.ascontiguousarray(value)
        if value.dtype.name == "bfloat16":  # ml_dtypes: torch reads it through f32
            return self.torch.as_tensor(value.astype(np.float32), device=self.device).to(self.torch.bfloat16)
        return self.torch.as_tensor(value, device=self.device)

    def unary(self, fn: str, x):
        t, F = self.torch, self.torch.nn.functional
        table = {"exp": t.exp, "log": t.log, "sqrt": t.sqrt, "tanh": t.tanh, "erf": t.erf, "sigmoid": t.sigmoid,
                 "recip": t.reciprocal, "floor": t.floor, "ceil": t.ceil, "round": t.round, "sin": t.sin,
                 "cos": t.cos, "tan": t.tan, "sinh": t.sinh, "cosh": t.cosh, "abs": t.abs, "expm1": t.expm1,
                 "log1p": t.log1p, "softplus": F.softplus, "silu": F.silu, "gelu": F.gelu,
                 "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}
        return table[fn](x)

    def cast(self, x, elem_type: int):
        return x.to(self.types[elem_type])

    def like(self, x, ref):
        return x.to(ref.dtype)

    def maximum(self, a, b):
        return self.torch.clamp_min(a, b) if isinstance(b, (int, float)) else self.torch.maximum(a, b)

    def minimum(self, a, b):
        return self.torch.clamp_max(a, b) if isinstance(b, (int, float)) else self.torch.minimum(a, b)

    def where(self, c, a, b):
        return self.torch.where(c, a, b)

    def reduce(self, kind: str, x, axes: tuple[int, ...], keepdims: bool):
        t = self.torch
        if kind == "prod":
            for a in sorted(axes, reverse=True):
                x = t.prod(x, dim=a, keepdim=keepdims)
            return x
        fn = {"sum": t.sum, "mean": t.mean, "max": t.amax, "min": t.amin}[kind]
        return fn(x, dim=axes, keepdim=keepdims)

    def reshape(self, x, shape):
        return x.reshape(tuple(shape))

    def transpose(self, x, perm):
        return x.permute(*perm)

    def expand(self, x, shape):
        return x.expand(*shape)

    def slice(self, x, slices: list[slice]):
        for axis, s in enumerate(slices):
            if s.step is not None and s.step < 0:  # torch slices take positive steps only
                idx = self.torch.arange(*s.indices(x.shape[axis]), device=x.device)
                x = x.index_select(axis, idx)
                slices[axis] = slice(None)
        return x[tuple(slices)]

    def isnan(self, x):
        return self.torch.isnan(x)

    def isinf(self, x):
        return self.torch.isinf(x)

    def cumsum(self, x, axis: int, exclusive: bool, reverse: bool):
        t = self.torch
        y = t.flip(x, (axis,)) if reverse else x
        y = t.cumsum(y, dim=axis, dtype=x.dtype)
        if exclusive:  # shift by one along the axis, the identity first
            y = t.cat([t.zeros_like(y.narrow(axis, 0, 1)), y.narrow(axis, 0, y.shape[axis] - 1)], dim=axis)
        return t.flip(y, (axis,)) if reverse else y
