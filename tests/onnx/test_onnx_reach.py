"""Importer reach: ONNX activations and rounding ops lowered to GIR's math builtins, Clip to clamp, prefix
Slices as index maps. Every imported function is checked against onnx.reference (crosscheck)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

from gir.onnx import import_onnx  # noqa: E402
from gir.onnx.crosscheck import crosscheck  # noqa: E402
import onnx_graphs as graphs  # noqa: E402

ELEM = {"f32": T.FLOAT, "f16": T.FLOAT16, "bf16": T.BFLOAT16}


def imported_and_matching(model, sizes=None):
    r = import_onnx(model)
    assert not r.left_out, [(x.op_type, x.reason) for x in r.left_out]
    for fn in r.functions:
        for name, (err, tol) in crosscheck(r, fn, sizes, seed=7).items():
            assert err <= tol, f"{fn.name}: {name}: error {err:.3g} > {tol:g}\n{fn.text}"
    return r


def unary(op: str, elem: int, shape, opset: int = 22, **attrs):
    return graphs.model([h.make_node(op, ["x"], ["out"], **attrs)], [("x", elem, shape)], ["out"], [], opset)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op, builtin", [
    ("Floor", "floor("), ("Ceil", "ceil("), ("Round", "round("), ("Sin", "sin("), ("Cos", "cos("),
    ("Softplus", "softplus("), ("Mish", "softplus("), ("Tan", "sin("), ("Sinh", "expm1("), ("Cosh", "exp("),
    ("Elu", "expm1("), ("Celu", "expm1("), ("Selu", "expm1(")])
def test_float_unary_ops_use_builtins(op, builtin, dtype):
    r = imported_and_matching(unary(op, ELEM[dtype], ["N", 7]), {"N": 13})  # 13 x 7: a prime and odd
    assert builtin in r.functions[0].text


@pytest.mark.parametrize("approximate, builtin", [("none", "gelu("), ("tanh", "gelu_tanh(")])
def test_gelu_is_one_builtin(approximate, builtin):
    r = imported_and_matching(unary("Gelu", T.FLOAT, [5, 33], opset=20, approximate=approximate))
    text = r.functions[0].text
    assert builtin in text and "erf(" not in text and "tanh(" not in text.replace("gelu_tanh(", "")


@pytest.mark.parametrize("alpha, builtin", [(1.0, "silu("), (0.5, "sigmoid(")])
def test_swish(alpha, builtin):
    r = imported_and_matching(unary("Swish", T.FLOAT, [1, 31], opset=24, alpha=alpha))
    assert builtin in r.functions[0].text


@pytest.mark.parametrize("elem, values", [(T.FLOAT, (-0.5, 0.7)), (T.INT32, (-1, 2)), (T.INT64, (0, 3))])
def test_clip_with_both_bounds_is_clamp(elem, values):
    np_type = {T.FLOAT: np.float32, T.INT32: np.int32, T.INT64: np.int64}[elem]
    inits = [graphs.const("lo", np.array(values[0], np_type)), graphs.const("hi", np.array(values[1], np_type))]
    m = graphs.model([h.make_node("Clip", ["x", "lo", "hi"], ["out"])], [("x", elem, [4, 9])], ["out"], inits, 13)
    r = imported_and_matching(m)
    assert "clamp(" in r.functions[0].text


def test_clip_with_one_bound_is_max():
    inits = [graphs.const("lo", np.array(0.25, np.float32))]
    m = graphs.model([h.make_node("Clip", ["x", "lo"], ["out"])], [("x", T.FLOAT, [3, 5])], ["out"], inits, 13)
    r = imported_and_matching(m)
    assert "max(" in r.functions[0].text and "clamp(" not in r.functions[0].text


def _slice_model(starts, ends, axes, reader: str | None):
    inits = [graphs.const(n, np.array(v, np.int64)) for n, v in (("s", starts), ("e", ends), ("a", axes))]
    nodes = [h.make_node("Slice", ["x", "s", "e", "a"], ["sl"])]
    inputs = [("x", T.FLOAT, [6, 10])]
    if reader is not None:  # an element-wise reader whose other operand gives the sliced axis its range
        nodes.append(h.make_node(reader, ["sl", "y"], ["out"]))
        out_shape = [6, 10][:]
        out_shape[axes[0]] = ends[0] - starts[0]
        inputs.append(("y", T.FLOAT, out_shape))
    return graphs.model(nodes, inputs, ["out" if reader else "sl"], inits, 13)


@pytest.mark.parametrize("axis, end", [(1, 4), (0, 1), (1, 9), (-1, 5)])
def test_prefix_slice_into_a_result(axis, end):
    r = imported_and_matching(_slice_model([0], [end], [axis], None))
    assert "+ 0]" in r.functions[0].text or end == 1  # x[i, j + 0]: the range comes from the result


@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_prefix_slice_read_by_an_intermediate_with_a_ranged_operand(op):
    r = imported_and_matching(_slice_model([0], [7], [1], op))
    assert [f.op_types for f in r.functions] == [["Slice", op]]


def test_rotate_half_halves_are_imported():
    """RoPE's rotate-half reads both halves of the last axis; only its Concat is left out."""
    r = import_onnx(graphs.llama_block())
    assert {x.op_type for x in r.left_out} == {"MatMul", "Concat"}
    for fn in r.functions:
        for name, (err, tol) in crosscheck(r, fn, {"batch": 1, "seq": 5}).items():
            assert err <= tol, name
