"""The Reduce* family: axes (attribute or constant input), keepdims, noop_with_empty_axes."""
from __future__ import annotations

from typing import Callable

import onnx
from gir import ir
from gir.onnx.build import FunctionBuilder, Index, Unsupported
from gir.onnx.expr import add, call, mul, sub
from gir.onnx.model import attributes
from gir.onnx.ops import lowers

# op → (GIR reduction, element transform, transform of the reduced value, floats only)
_SPEC: dict[str, tuple[str, Callable[[ir.Expr], ir.Expr], Callable[[ir.Expr], ir.Expr], bool]] = {
    "ReduceSum": ("sum", lambda x: x, lambda r: r, False),
    "ReduceMean": ("mean", lambda x: x, lambda r: r, True),
    "ReduceMax": ("max", lambda x: x, lambda r: r, False),
    "ReduceMin": ("min", lambda x: x, lambda r: r, False),
    "ReduceProd": ("prod", lambda x: x, lambda r: r, False),
    "ReduceL1": ("sum", lambda x: call("abs", x), lambda r: r, False),
    "ReduceL2": ("sum", lambda x: mul(x, x), lambda r: call("sqrt", r), True),
    "ReduceSumSquare": ("sum", lambda x: mul(x, x), lambda r: r, False),
    "ReduceLogSum": ("sum", lambda x: x, lambda r: call("log", r), True),
}


def reduce_axes(b: FunctionBuilder, node: onnx.NodeProto, rank: int) -> list[int] | None:
    """The reduced axes (normalised); None for a no-op (empty axes with noop_with_empty_axes)."""
    attrs = attributes(node)
    axes = attrs.get("axes")
    given = b.const_input(node, 1, "axes")
    if given is not None:
        axes = [int(a) for a in given.reshape(-1)]
    if not axes:
        return None if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    return sorted({a % rank for a in axes}) if rank else []


@lowers(*_SPEC, "ReduceLogSumExp", data=(0,))
def _reduce(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    if x.dtype == ir.DType.bool:
        raise Unsupported(f"{node.op_type} on booleans", "dtype")
    dtype, _ = b.out_type(node)
    axes = reduce_axes(b, node, x.rank)
    keepdims = bool(attributes(node).get("keepdims", 1))
    if axes is None:
        b.bind(node.output[0], x)
        return
    if node.op_type == "ReduceLogSumExp":
        _log_sum_exp(b, node, x, axes, keepdims, dtype)
        return
    op, pre, post, floats = _SPEC[node.op_type]
    if floats and not x.dtype.is_float:
        raise Unsupported(f"{node.op_type} on {x.dtype.value} tensors is not imported (only floats)", "dtype")
    b.reduce(node.output[0], op, dtype, x.shape, axes, lambda idx: pre(x.read(idx)), keepdims,
             post=lambda r, idx: post(r))


def _log_sum_exp(b: FunctionBuilder, node: onnx.NodeProto, x, axes: list[int], keepdims: bool,
                 dtype: ir.DType) -> None:
    if not x.dtype.is_float:
        raise Unsupported("ReduceLogSumExp on integers is not imported (only floats)", "dtype")
    out = node.output[0]
    mx = b.reduce(None, "max", ir.DType.f32, x.shape, axes, x.read, hint=f"{out}_max")

    def body(idx: Index) -> ir.Expr:
        return call("exp", sub(x.read(idx), mx.read(idx)))
    b.reduce(out, "sum", dtype, x.shape, axes, body, keepdims,
             post=lambda r, idx: add(call("log", r), mx.read(idx)))
