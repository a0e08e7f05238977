"""Softmax and LogSoftmax; Layer, RMS, Instance, Group and Batch normalisation (inference)."""
from __future__ import annotations

import onnx
from gir import ir
from gir.onnx.build import LANGUAGE_REACH, FunctionBuilder, Index, Unsupported, Value, read_broadcast
from gir.onnx.expr import add, call, div, f, mul, sub
from gir.onnx.model import attributes
from gir.onnx.ops import lowers
from gir.onnx.ops.elementwise import require_float

F32 = ir.DType.f32


def _output(node: onnx.NodeProto, k: int) -> str | None:
    return node.output[k] if len(node.output) > k and node.output[k] else None


@lowers("Softmax", "LogSoftmax")
def _softmax(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    require_float(node, x)
    dtype, _ = b.out_type(node, like=x)
    rank = x.rank
    if rank == 0:
        raise Unsupported(f"{node.op_type} of a scalar", "shape")
    # opset 13 reduces over one axis; earlier opsets over the flattened axes [axis, rank)
    if b.graph.opset >= 13:
        axes = [attributes(node).get("axis", -1) % rank]
    else:
        axes = list(range(attributes(node).get("axis", 1) % rank, rank))
    out = node.output[0]
    mx = b.reduce(None, "max", F32, x.shape, axes, x.read, hint=f"{out}_max")

    def shifted(idx: Index) -> ir.Expr:
        return sub(x.read(idx), mx.read(idx))
    if node.op_type == "LogSoftmax":
        s = b.reduce(None, "sum", F32, x.shape, axes, lambda idx: call("exp", shifted(idx)), hint=f"{out}_sum")
        b.define(out, dtype, x.shape, lambda idx: sub(shifted(idx), call("log", s.read(idx))))
        return
    e = b.define(None, F32, x.shape, lambda idx: call("exp", shifted(idx)), hint=f"{out}_exp")
    s = b.reduce(None, "sum", F32, x.shape, axes, e.read, hint=f"{out}_sum")
    b.define(out, dtype, x.shape, lambda idx: div(e.read(idx), s.read(idx)))


def _normalise(b: FunctionBuilder, node: onnx.NodeProto, x: Value, axes: list[int], eps: float,
               scale_bias, mean_out: str | None = None, inv_out: str | None = None) -> None:
    """y = (x - mean) * rsqrt(var + eps), then `scale_bias(value, idx)`, statistics over `axes`."""
    out = node.output[0]
    dtype, _ = b.out_type(node, like=x)
    stat = b.out_type(node, 1)[0] if mean_out else F32
    mu = b.reduce(mean_out, "mean", stat, x.shape, axes, x.read, hint=f"{out}_mean")
    d = b.define(None, F32, x.shape, lambda idx: sub(x.read(idx), mu.read(idx)), hint=f"{out}_centred")
    var = b.reduce(None, "mean", F32, x.shape, axes, lambda idx: mul(d.read(idx), d.read(idx)), hint=f"{out}_var")
    inv_dtype = b.out_type(node, 2)[0] if inv_out else F32
    inv = b.define(inv_out, inv_dtype, var.shape, lambda idx: call("rsqrt", add(var.read(idx), f(eps))),
                   hint=f"{out}_rstd")
    b.define(out, dtype, x.shape, lambda idx: scale_bias(mul(d.read(idx), inv.read(idx)), idx))


def _affine(scale: Value | None, bias: Value | None, index) -> callable:
    """`value * scale + bias`, reading scale and bias at `index(idx)`."""
    def apply(value: ir.Expr, idx: Index) -> ir.Expr:
        if scale is not None:
            value = mul(value, scale.read(index(idx, scale)))
        if bias is not None:
            value = add(value, bias.read(index(idx, bias)))
        return value
    return apply


def _broadcast_index(idx: Index, v: Value) -> Index:
    return tuple(idx[len(idx) - v.rank:]) if v.rank else ()


def _channel_index(idx: Index, v: Value) -> Index:
    return (idx[1],) if v.rank == 1 else _broadcast_index(idx, v)


@lowers("LayerNormalization")
def _layer_norm(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x, scale, bias = b.input(node, 0), b.input(node, 1), b.optional_input(node, 2)
    require_float(node, x)
    attrs = attributes(node)
    axis = attrs.get("axis", -1) % x.rank
    _normalise(b, node, x, list(range(axis, x.rank)), attrs.get("epsilon", 1e-5),
               _affine(scale, bias, _broadcast_index), _output(node, 1), _output(node, 2))


@lowers("RMSNormalization")
def _rms_norm(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x, scale = b.input(node, 0), b.input(node, 1)
    require_float(node, x)
    attrs = attributes(node)
    axes = list(range(attrs.get("axis", -1) % x.rank, x.rank))
    eps = attrs.get("epsilon", 1e-5)
    out = node.output[0]
    dtype, _ = b.out_type(node)
    ms = b.reduce(None, "mean", F32, x.shape, axes, lambda idx: mul(x.read(idx), x.read(idx)), hint=f"{out}_ms")
    b.define(out, dtype, x.shape, lambda idx: mul(mul(x.read(idx), call("rsqrt", add(ms.read(idx), f(eps)))),
                                                 read_broadcast(scale, idx)))


@lowers("InstanceNormalization")
def _instance_norm(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x, scale, bias = b.input(node, 0), b.input(node, 1), b.input(node, 2)
    require_float(node, x)
    if x.rank < 3:
        raise Unsupported("InstanceNormalization needs a rank of at least 3", "shape")
    _normalise(b, node, x, list(range(2, x.rank)), attributes(node).get("epsilon", 1e-5),
               _affine(scale, bias, _channel_index))


@lowers("GroupNormalization")
def _group_norm(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x, scale, bias = b.input(node, 0), b.input(node, 1), b.input(node, 2)
    require_float(node, x)
    attrs = attributes(node)
    groups, channels = attrs["num_groups"], x.shape[1] if x.rank >= 2 else None
    if x.rank < 3:
        raise Unsupported("GroupNormalization needs a rank of at least 3", "shape")
    if groups == channels:
        axes = list(range(2, x.rank))
    elif groups == 1:
        axes = list(range(1, x.rank))
    else:
        raise Unsupported(f"{groups} groups of the {channels} channels need a grouped view of the channel axis "
                          "(a reshape [N, C, ...] → [N, G, C/G, ...]); reshape views are not in the language "
                          "yet " + LANGUAGE_REACH, "language")
    _normalise(b, node, x, axes, attrs.get("epsilon", 1e-5), _affine(scale, bias, _channel_index))


@lowers("BatchNormalization")
def _batch_norm(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    if attributes(node).get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise Unsupported("BatchNormalization in training mode (batch statistics and running averages)",
                          "attribute")
    x, scale, bias, mean, var = (b.input(node, k) for k in range(5))
    require_float(node, x)
    eps = attributes(node).get("epsilon", 1e-5)
    dtype, _ = b.out_type(node)

    def body(idx: Index) -> ir.Expr:
        c = _channel_index(idx, scale)
        norm = mul(sub(x.read(idx), mean.read(c)), call("rsqrt", add(var.read(c), f(eps))))
        return add(mul(norm, scale.read(c)), bias.read(c))
    b.define(node.output[0], dtype, x.shape, body)
