"""An ONNX subgraph as a Python function over an array backend, for the baselines of `gir bench MODEL.onnx`.

`onnx_function(model, backend)` interprets the nodes of a (sub)graph in order with the backend's arrays
(onnx_backends.py): `TorchBackend` (torch tensors on a device: the function torch.compile compiles for the
cuda baseline) or `NumpyBackend` (numpy arrays: the same interpreter checked against onnx.reference on a CPU,
where torch or a GPU may be missing). The op set is the one the importer lowers (gir/onnx/ops); the ONNX semantics (attributes,
opset differences, optional inputs and outputs) are written once here, a backend supplies primitives only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import onnx
from onnx import numpy_helper

from gir.onnx.model import attributes
from gir.targets.bench.onnx_backends import NumpyBackend, TorchBackend


class UnsupportedOp(Exception):
    """A node this interpreter has no rule for (one line)."""


# ------------------------------------------------------------------ the interpreter
@dataclass(frozen=True)
class _Step:
    """One node in plain Python data, read before any call (no protobuf inside the traced function)."""
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict
    consts: tuple  # the constant value of each input (numpy), None where it is not a constant


class _Node:
    """What an op rule sees: its inputs (None where absent), constant inputs as numpy, attributes, opset."""

    def __init__(self, step: _Step, ins: list, opset: int, be):
        self.op, self.inputs, self.attrs, self.consts = step.op, step.inputs, step.attrs, step.consts
        self.ins, self.opset, self.be = ins, opset, be

    def const(self, k: int) -> np.ndarray | None:
        if k >= len(self.consts) or self.inputs[k] == "":
            return None
        if self.consts[k] is None:
            raise UnsupportedOp(f"{self.op}: input {k} must be a constant")
        return self.consts[k]

    def axes(self, k: int, rank: int) -> list[int] | None:
        """Axes from input k (newer opsets) or the `axes` attribute; None when neither gives any."""
        given = self.const(k) if len(self.inputs) > k else None
        axes = [int(a) for a in given.reshape(-1)] if given is not None else self.attrs.get("axes")
        return None if axes is None else [int(a) % rank for a in axes] if rank else []


Rule = Callable[[_Node], tuple]
RULES: dict[str, Rule] = {}


def rule(*ops: str):
    def register(fn: Rule) -> Rule:
        for op in ops:
            RULES[op] = fn
        return fn
    return register


def onnx_function(model: onnx.ModelProto, backend) -> Callable:
    """The graph as `fn(*inputs) -> tuple of outputs`; `fn.input_names` are the graph inputs that are not
    initializers, in order. UnsupportedOp names the first node without a rule."""
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type not in RULES:
            raise UnsupportedOp(f"no interpreter rule for ONNX {node.op_type}")
        if node.op_type == "Constant":
            consts[node.output[0]] = _constant_value(node)
    arrays = {name: backend.constant(v) for name, v in consts.items()}
    names = [i.name for i in graph.input if i.name not in consts]
    outputs = [o.name for o in graph.output]
    steps = [_Step(node.op_type, tuple(node.input), tuple(node.output), attributes(node),
                   tuple(consts.get(n) if n else None for n in node.input))
             for node in graph.node if node.op_type != "Constant"]

    def fn(*args):
        env = dict(arrays)
        env.update(zip(names, args))
        for step in steps:
            ins = [env[n] if n else None for n in step.inputs]
            for name, value in zip(step.outputs, RULES[step.op](_Node(step, ins, opset, backend))):
                if name:
                    env[name] = value
        return tuple(env[o] for o in outputs)
    fn.input_names = names
    return fn


def _constant_value(node: onnx.NodeProto) -> np.ndarray:
    attr = node.attribute[0]
    if attr.name == "value":
        return numpy_helper.to_array(attr.t)
    value = onnx.helper.get_attribute_value(attr)
    types = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}
    if attr.name not in types:
        raise UnsupportedOp(f"Constant with attribute {attr.name}")
    return np.array(value, types[attr.name])


# ------------------------------------------------------------------ element-wise
@rule("Add", "Sub", "Mul", "Div", "Pow")
def _arith(n: _Node) -> tuple:
    a, b = n.ins
    op = n.op
    if op == "Pow":
        return (n.be.like(a ** b, a),)  # ONNX: the base's type
    return (a + b if op == "Add" else a - b if op == "Sub" else a * b if op == "Mul" else a / b,)


@rule("Max", "Min", "Sum", "Mean")
def _variadic(n: _Node) -> tuple:
    ins = [x for x in n.ins if x is not None]
    acc = ins[0]
    fold = {"Max": n.be.maximum, "Min": n.be.minimum}.get(n.op, lambda p, q: p + q)
    for x in ins[1:]:
        acc = fold(acc, x)
    return (acc / len(ins) if n.op == "Mean" else acc,)


_UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Tanh": "tanh", "Erf": "erf", "Sigmoid": "sigmoid",
          "Reciprocal": "recip", "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sin": "sin", "Cos": "cos",
          "Tan": "tan", "Sinh": "sinh", "Cosh": "cosh", "Abs": "abs", "Softplus": "softplus"}


@rule(*_UNARY)
def _unary(n: _Node) -> tuple:
    return (n.be.unary(_UNARY[n.op], n.ins[0]),)


@rule("Neg")
def _neg(n: _Node) -> tuple:
    return (-n.ins[0],)


@rule("Gelu")
def _gelu(n: _Node) -> tuple:
    tanh = n.attrs.get("approximate", b"none") in (b"tanh", "tanh")
    return (n.be.unary("gelu_tanh" if tanh else "gelu", n.ins[0]),)


@rule("Swish")
def _swish(n: _Node) -> tuple:
    x, alpha = n.ins[0], float(n.attrs.get("alpha", 1.0))
    return (n.be.unary("silu", x) if alpha == 1.0 else x * n.be.unary("sigmoid", x * alpha),)


@rule("Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "ThresholdedRelu")
def _relu_family(n: _Node) -> tuple:
    x, a, op = n.ins[0], n.attrs, n.op
    if op == "Relu":
        return (n.be.maximum(x, 0),)
    neg_part = {"LeakyRelu": lambda: x * a.get("alpha", 0.01),
                "PRelu": lambda: x * n.ins[1],
                "Elu": lambda: n.be.unary("expm1", x) * a.get("alpha", 1.0),
                "Selu": lambda: n.be.unary("expm1", x) * a.get("alpha", 1.6732632423543772848170429916717),
                "Celu": lambda: n.be.unary("expm1", x / a.get("alpha", 1.0)) * a.get("alpha", 1.0),
                "ThresholdedRelu": lambda: x * 0}[op]()
    if op == "ThresholdedRelu":
        return (n.be.where(x > a.get("alpha", 1.0), x, neg_part),)
    y = n.be.where(x <= 0 if op == "Selu" else x < 0, neg_part, x)
    return (y * a.get("gamma", 1.0507009873554804934193349852946) if op == "Selu" else y,)


@rule("HardSigmoid", "HardSwish", "Softsign", "Mish")
def _smooth(n: _Node) -> tuple:
    x, a, be = n.ins[0], n.attrs, n.be
    hard = lambda v: be.minimum(be.maximum(v, 0.0), 1.0)  # noqa: E731
    return ({"HardSigmoid": lambda: hard(x * a.get("alpha", 0.2) + a.get("beta", 0.5)),
             "HardSwish": lambda: x * hard(x / 6.0 + 0.5),
             "Softsign": lambda: x / (be.unary("abs", x) + 1.0),
             "Mish": lambda: x * be.unary("tanh", be.unary("softplus", x))}[n.op](),)


@rule("Sign")
def _sign(n: _Node) -> tuple:
    x = n.ins[0]
    return (n.be.like((x > 0) * 1 - (x < 0) * 1, x),)


@rule("IsNaN", "IsInf")
def _isnan(n: _Node) -> tuple:
    x = n.ins[0]
    if n.op == "IsNaN":
        return (n.be.isnan(x),)
    pos, neg = n.attrs.get("detect_positive", 1), n.attrs.get("detect_negative", 1)
    inf = n.be.isinf(x)
    return ((inf & (x > 0)) if not neg else (inf & (x < 0)) if not pos else inf,)


@rule("Clip")
def _clip(n: _Node) -> tuple:
    x = n.ins[0]
    if n.opset < 11:
        lo, hi = n.attrs.get("min"), n.attrs.get("max")
    else:
        lo = n.ins[1] if len(n.ins) > 1 else None
        hi = n.ins[2] if len(n.ins) > 2 else None
    if lo is not None:
        x = n.be.maximum(x, lo)
    return (n.be.minimum(x, hi) if hi is not None else x,)


_COMPARE = {"Equal": "__eq__", "Less": "__lt__", "LessOrEqual": "__le__", "Greater": "__gt__",
            "GreaterOrEqual": "__ge__", "And": "__and__", "Or": "__or__", "Xor": "__xor__"}


@rule(*_COMPARE)
def _compare(n: _Node) -> tuple:
    return (getattr(n.ins[0], _COMPARE[n.op])(n.ins[1]),)


@rule("Not")
def _not(n: _Node) -> tuple:
    return (~n.ins[0],)


@rule("Where")
def _where(n: _Node) -> tuple:
    return (n.be.where(*n.ins),)


@rule("Cast", "CastLike")
def _cast(n: _Node) -> tuple:
    if n.op == "Cast":
        return (n.be.cast(n.ins[0], n.attrs["to"]),)
    return (n.be.like(n.ins[0], n.ins[1]),)


@rule("Identity", "Dropout")
def _identity(n: _Node) -> tuple:
    return (n.ins[0],)


@rule("Constant")
def _constant(n: _Node) -> tuple:  # folded when the function is built
    return ()


# ------------------------------------------------------------------ views
@rule("Transpose")
def _transpose(n: _Node) -> tuple:
    x = n.ins[0]
    return (n.be.transpose(x, list(n.attrs.get("perm", range(x.ndim - 1, -1, -1)))),)


@rule("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def _reshape(n: _Node) -> tuple:
    x, op = n.ins[0], n.op
    shape = list(x.shape)
    if op == "Reshape":
        target = [int(v) for v in (n.const(1) if n.opset >= 5 else np.array(n.attrs["shape"])).reshape(-1)]
        if not n.attrs.get("allowzero", 0):
            target = [shape[k] if v == 0 else v for k, v in enumerate(target)]
    elif op == "Flatten":
        axis = n.attrs.get("axis", 1)
        axis = axis + len(shape) if axis < 0 else axis
        target = [math.prod(shape[:axis]), -1]
    elif op == "Squeeze":
        axes = n.axes(1, len(shape))
        target = [d for k, d in enumerate(shape) if (d != 1 if axes is None else k not in axes)]
    else:
        rank = len(shape) + len(n.axes(1, len(shape) + 1) or [])
        axes = set(n.axes(1, rank) or [])
        rest = iter(shape)
        target = [1 if k in axes else next(rest) for k in range(rank)]
    return (n.be.reshape(x, target),)


@rule("Expand")
def _expand(n: _Node) -> tuple:
    x = n.ins[0]
    shape = np.broadcast_shapes(tuple(x.shape), tuple(int(v) for v in n.const(1).reshape(-1)))
    return (n.be.expand(x, shape),)


@rule("Slice")
def _slice(n: _Node) -> tuple:
    x = n.ins[0]
    rank = len(x.shape)
    if n.opset < 10:
        starts, ends = n.attrs["starts"], n.attrs["ends"]
        axes, steps = n.attrs.get("axes", range(len(starts))), [1] * len(starts)
    else:
        starts, ends = n.const(1).reshape(-1), n.const(2).reshape(-1)
        axes = n.const(3).reshape(-1) if n.const(3) is not None else range(len(starts))
        steps = n.const(4).reshape(-1) if n.const(4) is not None else [1] * len(starts)
    slices = [slice(None)] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        first, last, step = slice(int(s), int(e), int(st)).indices(x.shape[int(a) % rank])
        slices[int(a) % rank] = slice(first, last if last >= 0 else None, step)
    return (n.be.slice(x, slices),)


# ------------------------------------------------------------------ softmax, normalisations, reductions
def _mean_var(be, x, axes):
    mean = be.reduce("mean", x, axes, True)
    d = x - mean
    return mean, be.reduce("mean", d * d, axes, True)


@rule("Softmax", "LogSoftmax")
def _softmax(n: _Node) -> tuple:
    x, be = n.ins[0], n.be
    rank = len(x.shape)
    if n.opset >= 13:
        axes = (n.attrs.get("axis", -1) % rank,)
    else:
        axes = tuple(range(n.attrs.get("axis", 1) % rank, rank))
    shifted = x - be.reduce("max", x, axes, True)
    if n.op == "LogSoftmax":
        return (shifted - be.unary("log", be.reduce("sum", be.unary("exp", shifted), axes, True)),)
    e = be.unary("exp", shifted)
    return (e / be.reduce("sum", e, axes, True),)


@rule("LayerNormalization", "RMSNormalization")
def _layer_norm(n: _Node) -> tuple:
    x, scale = n.ins[0], n.ins[1]
    bias = n.ins[2] if len(n.ins) > 2 else None
    be, rank = n.be, len(x.shape)
    axes = tuple(range(n.attrs.get("axis", -1) % rank, rank))
    eps = n.attrs.get("epsilon", 1e-5)
    xf = be.cast(x, onnx.TensorProto.FLOAT) if n.attrs.get("stash_type", 1) == 1 else x
    if n.op == "RMSNormalization":
        inv = be.unary("recip", be.unary("sqrt", be.reduce("mean", xf * xf, axes, True) + eps))
        return (be.like(xf * inv, x) * scale,)
    mean, var = _mean_var(be, xf, axes)
    inv = be.unary("recip", be.unary("sqrt", var + eps))
    y = be.like((xf - mean) * inv, x) * scale
    return (y + bias if bias is not None else y, mean, inv)


def _per_channel(be, v, rank: int):
    return be.reshape(v, [-1] + [1] * (rank - 2))


@rule("InstanceNormalization", "GroupNormalization", "BatchNormalization")
def _channel_norm(n: _Node) -> tuple:
    x, be, op = n.ins[0], n.be, n.op
    rank, eps = len(x.shape), n.attrs.get("epsilon", 1e-5)
    scale, bias = n.ins[1], n.ins[2]
    if op == "BatchNormalization":
        mean, var = (_per_channel(be, v, rank) for v in n.ins[3:5])
        y = (x - mean) * be.unary("recip", be.unary("sqrt", var + eps))
        return (y * _per_channel(be, scale, rank) + _per_channel(be, bias, rank),)
    if op == "InstanceNormalization":
        mean, var = _mean_var(be, x, tuple(range(2, rank)))
        y = (x - mean) * be.unary("recip", be.unary("sqrt", var + eps))
        return (y * _per_channel(be, scale, rank) + _per_channel(be, bias, rank),)
    groups = n.attrs["num_groups"]
    shape = list(x.shape)
    xf = be.cast(x, onnx.TensorProto.FLOAT) if n.opset >= 21 and n.attrs.get("stash_type", 1) == 1 else x
    g = be.reshape(xf, [shape[0], groups, -1])
    mean, var = _mean_var(be, g, (2,))
    g = (g - mean) * be.unary("recip", be.unary("sqrt", var + eps))
    if n.opset < 21:  # scale and bias per group
        g = g * be.reshape(scale, [-1, 1]) + be.reshape(bias, [-1, 1])
        return (be.like(be.reshape(g, shape), x),)
    y = be.like(be.reshape(g, shape), x)
    return (y * _per_channel(be, scale, rank) + _per_channel(be, bias, rank),)


_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod",
           "ReduceL1": "sum", "ReduceL2": "sum", "ReduceSumSquare": "sum", "ReduceLogSum": "sum",
           "ReduceLogSumExp": "sum"}


@rule(*_REDUCE)
def _reduce(n: _Node) -> tuple:
    x, be, op = n.ins[0], n.be, n.op
    rank = len(x.shape)
    keep = bool(n.attrs.get("keepdims", 1))
    axes = n.axes(1, rank)
    if not axes:  # none given or empty: every axis, or nothing with noop_with_empty_axes
        if n.attrs.get("noop_with_empty_axes", 0):
            return (x,)
        axes = list(range(rank))
    axes = tuple(axes)
    if op == "ReduceLogSumExp":
        mx = be.reduce("max", x, axes, True)
        s = be.unary("log", be.reduce("sum", be.unary("exp", x - mx), axes, True)) + mx
        return (s if keep else be.reshape(s, [d for k, d in enumerate(x.shape) if k not in axes]),)
    pre = {"ReduceL1": lambda: be.unary("abs", x), "ReduceL2": lambda: x * x,
           "ReduceSumSquare": lambda: x * x}.get(op, lambda: x)()
    r = be.reduce(_REDUCE[op], pre, axes, keep)
    post = {"ReduceL2": lambda: be.unary("sqrt", r), "ReduceLogSum": lambda: be.unary("log", r)}.get(op)
    return (post() if post else r,)


@rule("CumSum")
def _cumsum(n: _Node) -> tuple:
    x = n.ins[0]
    axis = int(n.const(1).reshape(-1)[0]) % len(x.shape)
    return (n.be.cumsum(x, axis, bool(n.attrs.get("exclusive", 0)), bool(n.attrs.get("reverse", 0))),)


__all__ = ["onnx_function", "UnsupportedOp", "RULES", "NumpyBackend", "TorchBackend"]
