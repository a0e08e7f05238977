"""Element-wise operators: arithmetic, comparisons, logic, activations (GIR's math builtins where one exists:
gelu, gelu_tanh, softplus, silu, floor, ceil, round, sin, cos, clamp), Where, Cast, Clip."""
from __future__ import annotations

import math
from typing import Callable

import onnx
from gir import ir
from gir.onnx.build import (LANGUAGE_REACH, FunctionBuilder, Unsupported, Value, broadcast_shapes, gir_dtype,
                            literal, read_broadcast)
from gir.onnx.expr import add, call, cmp, div, f, maximum, minimum, mul, neg, select
from gir.onnx.model import attributes
from gir.onnx.ops import lowers


def elementwise(b: FunctionBuilder, node: onnx.NodeProto, fn: Callable[..., ir.Expr],
                inputs: list[Value] | None = None, out: int = 0) -> Value:
    """Define output `out` of `node` as `fn` of its (broadcast) inputs."""
    ins = inputs if inputs is not None else [b.input(node, k) for k in range(len(node.input)) if node.input[k]]
    dtype, declared = b.out_type(node, out)
    shape = broadcast_shapes(*(v.shape for v in ins))
    if shape != declared:
        raise Unsupported(f"inferred shape {list(declared)} differs from the broadcast shape {list(shape)}",
                          "shape")
    return b.define(node.output[out], dtype, shape, lambda idx: fn(*[read_broadcast(v, idx) for v in ins]))


def require_float(node: onnx.NodeProto, *values: Value) -> None:
    for v in values:
        if not v.dtype.is_float:
            raise Unsupported(f"{node.op_type} on {v.dtype.value} tensors is not imported (only floats)", "dtype")


# ------------------------------------------------------------------ arithmetic
_BINARY = {"Add": "+", "Sub": "-", "Mul": "*"}


@lowers("Add", "Sub", "Mul")
def _arith(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    a, c = b.input(node, 0), b.input(node, 1)
    if ir.DType.bool in (a.dtype, c.dtype):
        raise Unsupported(f"{node.op_type} on booleans", "dtype")
    elementwise(b, node, lambda x, y: ir.BinOp(_BINARY[node.op_type], x, y), [a, c])


@lowers("Div")
def _div(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    a, c = b.input(node, 0), b.input(node, 1)
    if not a.dtype.is_float:
        raise Unsupported("integer Div truncates; GIR's '/' is true division", "dtype")
    elementwise(b, node, div, [a, c])


@lowers("Pow")
def _pow(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    base, exp = b.input(node, 0), b.input(node, 1)
    require_float(node, base)
    special = {1.0: lambda x: x, 2.0: lambda x: mul(x, x), 3.0: lambda x: mul(mul(x, x), x),
               0.5: lambda x: call("sqrt", x), -0.5: lambda x: call("rsqrt", x), -1.0: lambda x: call("recip", x)}
    if exp.scalar is not None and float(exp.scalar) in special:
        fn = special[float(exp.scalar)]
        elementwise(b, node, lambda x, _: fn(x), [base, exp])
    else:
        elementwise(b, node, lambda x, y: call("pow", x, y if exp.dtype.is_float else call("f32", y)), [base, exp])


@lowers("Max", "Min", "Sum", "Mean")
def _variadic(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    ins = [b.input(node, k) for k in range(len(node.input)) if node.input[k]]
    if any(v.dtype == ir.DType.bool for v in ins):
        raise Unsupported(f"{node.op_type} on booleans", "dtype")
    if node.op_type == "Mean":
        require_float(node, *ins)
    fold = {"Max": maximum, "Min": minimum, "Sum": add, "Mean": add}[node.op_type]

    def fn(*xs: ir.Expr) -> ir.Expr:
        acc = xs[0]
        for x in xs[1:]:
            acc = fold(acc, x)
        return div(acc, f(len(xs))) if node.op_type == "Mean" and len(xs) > 1 else acc
    elementwise(b, node, fn, ins)


@lowers("Neg", "Abs")
def _neg_abs(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    if x.dtype == ir.DType.bool:
        raise Unsupported(f"{node.op_type} on booleans", "dtype")
    elementwise(b, node, neg if node.op_type == "Neg" else (lambda e: call("abs", e)), [x])


# ------------------------------------------------------------------ float functions
def _gelu(x: ir.Expr, attrs: dict) -> ir.Expr:
    tanh = attrs.get("approximate", b"none") in (b"tanh", "tanh")
    return call("gelu_tanh" if tanh else "gelu", x)


def _swish(x: ir.Expr, attrs: dict) -> ir.Expr:
    alpha = float(attrs.get("alpha", 1.0))
    return call("silu", x) if alpha == 1.0 else mul(x, call("sigmoid", mul(f(alpha), x)))


def _selu(x: ir.Expr, attrs: dict) -> ir.Expr:
    alpha = attrs.get("alpha", 1.6732632423543772848170429916717)
    gamma = attrs.get("gamma", 1.0507009873554804934193349852946)
    return mul(f(gamma), select(cmp("<=", x, f(0.0)), mul(f(alpha), call("expm1", x)), x))


_FLOAT_UNARY: dict[str, Callable[[ir.Expr, dict], ir.Expr]] = {
    "Exp": lambda x, a: call("exp", x),
    "Log": lambda x, a: call("log", x),
    "Sqrt": lambda x, a: call("sqrt", x),
    "Tanh": lambda x, a: call("tanh", x),
    "Erf": lambda x, a: call("erf", x),
    "Sigmoid": lambda x, a: call("sigmoid", x),
    "Reciprocal": lambda x, a: call("recip", x),
    "Gelu": _gelu,
    "Swish": _swish,
    "Floor": lambda x, a: call("floor", x),
    "Ceil": lambda x, a: call("ceil", x),
    "Round": lambda x, a: call("round", x),
    "Sin": lambda x, a: call("sin", x),
    "Cos": lambda x, a: call("cos", x),
    "Tan": lambda x, a: div(call("sin", x), call("cos", x)),
    "Sinh": lambda x, a: mul(f(0.5), add(call("expm1", x), neg(call("expm1", neg(x))))),  # no cancellation at 0
    "Cosh": lambda x, a: mul(f(0.5), add(call("exp", x), call("exp", neg(x)))),
    "Selu": _selu,
    "LeakyRelu": lambda x, a: select(cmp("<", x, f(0.0)), mul(f(a.get("alpha", 0.01)), x), x),
    "Elu": lambda x, a: select(cmp("<", x, f(0.0)), mul(f(a.get("alpha", 1.0)), call("expm1", x)), x),
    "Celu": lambda x, a: add(maximum(f(0.0), x), minimum(f(0.0), mul(f(a.get("alpha", 1.0)),
                                                                 call("expm1", div(x, f(a.get("alpha", 1.0))))))),
    "HardSigmoid": lambda x, a: maximum(f(0.0), minimum(f(1.0), add(mul(f(a.get("alpha", 0.2)), x),
                                                                    f(a.get("beta", 0.5))))),
    "HardSwish": lambda x, a: mul(x, maximum(f(0.0), minimum(f(1.0), add(div(x, f(6.0)), f(0.5))))),
    "Softplus": lambda x, a: call("softplus", x),
    "Softsign": lambda x, a: div(x, add(f(1.0), call("abs", x))),
    "Mish": lambda x, a: mul(x, call("tanh", call("softplus", x))),
    "ThresholdedRelu": lambda x, a: select(cmp(">", x, f(a.get("alpha", 1.0))), x, f(0.0)),
}


@lowers(*_FLOAT_UNARY)
def _float_unary(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    require_float(node, x)
    attrs = attributes(node)
    elementwise(b, node, lambda e: _FLOAT_UNARY[node.op_type](e, attrs), [x])


@lowers("Relu")
def _relu(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    if x.dtype == ir.DType.bool:
        raise Unsupported("Relu on booleans", "dtype")
    elementwise(b, node, lambda e: maximum(e, literal(0, x.dtype)), [x])


@lowers("PRelu")
def _prelu(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x, slope = b.input(node, 0), b.input(node, 1)
    require_float(node, x)
    elementwise(b, node, lambda e, s: select(cmp("<", e, f(0.0)), mul(s, e), e), [x, slope])


@lowers("Sign")
def _sign(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    if x.dtype == ir.DType.bool:
        raise Unsupported("Sign on booleans", "dtype")
    one, zero = literal(1, x.dtype), literal(0, x.dtype)
    elementwise(b, node, lambda e: select(cmp(">", e, zero), one, select(cmp("<", e, zero), neg(one), zero)), [x])


@lowers("IsNaN")
def _isnan(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    require_float(node, x)
    elementwise(b, node, lambda e: cmp("!=", e, e), [x])


@lowers("IsInf")
def _isinf(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    require_float(node, x)
    attrs = attributes(node)
    pos, negative = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if not (pos or negative):
        raise Unsupported("IsInf detecting neither sign is constant false", "attribute")

    def fn(e: ir.Expr) -> ir.Expr:
        tests = ([cmp("==", e, ir.Const(math.inf))] if pos else []) + \
            ([cmp("==", e, ir.Const(-math.inf))] if negative else [])
        return tests[0] if len(tests) == 1 else ir.BinOp("or", tests[0], tests[1])
    elementwise(b, node, fn, [x])


@lowers("Clip")
def _clip(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    if x.dtype == ir.DType.bool:
        raise Unsupported("Clip on booleans", "dtype")
    attrs = attributes(node)
    if b.graph.opset < 11:
        bounds = [Value(x.dtype, (), lambda idx, c=literal(attrs[k], x.dtype): c, scalar=attrs[k])
                  if k in attrs else None for k in ("min", "max")]
    else:
        bounds = [b.optional_input(node, 1), b.optional_input(node, 2)]
    lo, hi = bounds
    ins = [x] + [v for v in bounds if v is not None]

    def fn(e: ir.Expr, *rest: ir.Expr) -> ir.Expr:
        if lo is not None and hi is not None:
            return ir.Call("clamp", (e, rest[0], rest[1]))  # min(max(x, lo), hi), as numpy.clip
        if lo is not None:
            return maximum(e, rest[0])
        return minimum(e, rest[0]) if hi is not None else e
    elementwise(b, node, fn, ins)


# ------------------------------------------------------------------ comparisons and logic
_COMPARE = {"Equal": "==", "Less": "<", "LessOrEqual": "<=", "Greater": ">", "GreaterOrEqual": ">="}


@lowers(*_COMPARE)
def _compare(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    a, c = b.input(node, 0), b.input(node, 1)
    if node.op_type != "Equal" and ir.DType.bool in (a.dtype, c.dtype):
        raise Unsupported(f"{node.op_type} on booleans", "dtype")
    elementwise(b, node, lambda x, y: cmp(_COMPARE[node.op_type], x, y), [a, c])


_LOGIC = {"And": "and", "Or": "or", "Xor": "!="}


@lowers(*_LOGIC)
def _logic(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    elementwise(b, node, lambda x, y: ir.BinOp(_LOGIC[node.op_type], x, y))


@lowers("Not")
def _not(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    elementwise(b, node, lambda x: ir.UnOp("not", x))


@lowers("Where")
def _where(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    elementwise(b, node, select)


# ------------------------------------------------------------------ casts
@lowers("Cast")
def _cast(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    to = gir_dtype(attributes(node)["to"])
    elementwise(b, node, lambda e: call(to.value, e), [x])


@lowers("CastLike", data=(0,))
def _cast_like(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    to = gir_dtype(b.graph.tensors[node.input[1]].elem_type)  # only the element type of 'like' matters
    elementwise(b, node, lambda e: call(to.value, e), [x])


@lowers("Asin", "Acos", "Atan", "Asinh",
        "Acosh", "Atanh", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot")
def _not_in_language(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    raise Unsupported(f"GIR has no {node.op_type.lower()} function yet " + LANGUAGE_REACH, "language")
