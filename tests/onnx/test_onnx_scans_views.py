"""CumSum (scans), reshapes as parameter / result views around norms, float64: each function matches
onnx.reference on seeded random inputs (gir.onnx.crosscheck)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

from gir.onnx import import_onnx  # noqa: E402
from gir.onnx.crosscheck import crosscheck  # noqa: E402
import onnx_graphs as graphs  # noqa: E402


def check_all(result, sizes=None):
    assert result.functions and not result.left_out, [(x.op_type, x.reason) for x in result.left_out]
    for fn in result.functions:
        for name, (err, tol) in crosscheck(result, fn, sizes, seed=7).items():
            assert err <= tol, f"{fn.name}: {name}: error {err:.3g} > {tol:g}\n{fn.text}"


def cumsum_model(dtype, shape, axis, **flags):
    node = h.make_node("CumSum", ["x", "axis"], ["y"], **flags)
    return graphs.model([node], [("x", dtype, shape)], ["y"], [graphs.const("axis", np.array(axis, np.int64))],
                        opset=14)


@pytest.mark.parametrize("shape,axis", [([5, 7], 1), ([5, 7], -2), ([3, 1, 13], 2), ([2, 4, 3], -1), ([11], 0)])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_axes_and_flags(shape, axis, exclusive, reverse):
    r = import_onnx(cumsum_model(T.FLOAT, shape, axis, exclusive=exclusive, reverse=reverse))
    assert "cumsum(" in r.functions[0].text
    check_all(r)


@pytest.mark.parametrize("dtype", [T.FLOAT16, T.DOUBLE, T.INT32, T.INT64])
def test_cumsum_dtypes(dtype):
    check_all(import_onnx(cumsum_model(dtype, [4, 9], 1, exclusive=1)))


@pytest.mark.parametrize("exclusive", [0, 1])
def test_cumsum_along_an_axis_of_extent_1(exclusive):
    check_all(import_onnx(cumsum_model(T.FLOAT, [6, 1], 1, exclusive=exclusive)))


def test_cumsum_negative_axis_inside_a_chain():
    nodes = [h.make_node("Exp", ["x"], ["e"]), h.make_node("CumSum", ["e", "axis"], ["c"], reverse=1),
             h.make_node("Log", ["c"], ["y"])]
    r = import_onnx(graphs.model(nodes, [("x", T.FLOAT, ["B", 10])], ["y"],
                                 [graphs.const("axis", np.array(-1, np.int64))], opset=14))
    assert len(r.functions) == 1
    check_all(r, {"B": 3})


def test_flatten_layernorm_reshape_back_is_one_function_with_views():
    # x: [N, C, H, W] → Flatten(axis=1) → LayerNorm over C*H*W → Reshape back to [N, C, H, W]
    nodes = [h.make_node("Flatten", ["x"], ["f"], axis=1),
             h.make_node("LayerNormalization", ["f", "g", "b"], ["n"], axis=-1, epsilon=1e-5),
             h.make_node("Reshape", ["n", "shape"], ["y"])]
    inits = [graphs.weight("g", (60,)), graphs.weight("b", (60,)),
             graphs.const("shape", np.array([2, 3, 4, 5], np.int64))]
    r = import_onnx(graphs.model(nodes, [("x", T.FLOAT, [2, 3, 4, 5])], ["y"], inits, opset=17))
    assert len(r.functions) == 1
    fn = r.functions[0].func
    # the Flatten is a parameter view; the Reshape back splits an axis, an index map into the result
    assert fn.params[0].view is not None and "Reshape" in r.functions[0].op_types
    check_all(r)


def test_reshape_in_the_middle_cuts_the_chain():
    # Exp → Reshape (merge) → Softmax: Exp's function returns the merged view, Softmax reads it as a parameter
    nodes = [h.make_node("Exp", ["x"], ["e"]), h.make_node("Reshape", ["e", "shape"], ["r"]),
             h.make_node("Softmax", ["r"], ["y"], axis=-1)]
    r = import_onnx(graphs.model(nodes, [("x", T.FLOAT, [3, 4, 7])], ["y"],
                                 [graphs.const("shape", np.array([3, 28], np.int64))], opset=13))
    assert [f.op_types for f in r.functions] == [["Exp", "Reshape"], ["Softmax"]]
    check_all(r)


def test_squeeze_unsqueeze_around_softmax_and_symbolic_flatten():
    nodes = [h.make_node("Unsqueeze", ["x", "ax"], ["u"]), h.make_node("Softmax", ["u"], ["s"], axis=-1),
             h.make_node("Squeeze", ["s", "ax"], ["y"])]
    r = import_onnx(graphs.model(nodes, [("x", T.FLOAT, ["B", 7])], ["y"],
                                 [graphs.const("ax", np.array([1], np.int64))], opset=13))
    assert len(r.functions) == 1 and "Unsqueeze" in r.functions[0].op_types
    check_all(r, {"B": 5})
    # a merge of a static tail under a symbolic batch: [B, 3, 5] → [B, 15], then RMS-style normalisation
    nodes = [h.make_node("Reshape", ["x", "shape"], ["f"]), h.make_node("Mul", ["f", "f"], ["sq"]),
             h.make_node("ReduceMean", ["sq", "ax"], ["ms"]), h.make_node("Sqrt", ["ms"], ["rt"]),
             h.make_node("Div", ["f", "rt"], ["y"])]
    r = import_onnx(graphs.model(nodes, [("x", T.FLOAT, ["B", 3, 5])], ["y"],
                                 [graphs.const("shape", np.array([0, 15], np.int64)),
                                  graphs.const("ax", np.array([1], np.int64))], opset=18))
    assert len(r.functions) == 1 and r.functions[0].func.params[0].view is not None
    check_all(r, {"B": 4})


def test_group_norm_expanded_chain():
    # [N, C, H, W] → [N, G, C/G * H * W] → normalise per group → back to [N, C, H, W] → * scale + bias
    n, c, g, hh, w = 2, 6, 3, 5, 1
    nodes = [h.make_node("Reshape", ["x", "s3"], ["x3"]),
             h.make_node("ReduceMean", ["x3", "ax"], ["m"]), h.make_node("Sub", ["x3", "m"], ["d"]),
             h.make_node("Mul", ["d", "d"], ["d2"]), h.make_node("ReduceMean", ["d2", "ax"], ["v"]),
             h.make_node("Add", ["v", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["sd"]),
             h.make_node("Div", ["d", "sd"], ["nrm"]), h.make_node("Reshape", ["nrm", "s4"], ["n4"]),
             h.make_node("Mul", ["n4", "scale"], ["sc"]), h.make_node("Add", ["sc", "bias"], ["y"])]
    inits = [graphs.const("s3", np.array([n, g, -1], np.int64)), graphs.const("ax", np.array([2], np.int64)),
             graphs.const("eps", np.array(1e-5, np.float32)), graphs.const("s4", np.array([n, c, hh, w], np.int64)),
             graphs.weight("scale", (c, 1, 1)), graphs.weight("bias", (c, 1, 1))]
    r = import_onnx(graphs.model(nodes, [("x", T.FLOAT, [n, c, hh, w])], ["y"], inits, opset=18))
    assert len(r.functions) == 2
    check_all(r)


def test_float64_reduce_and_softmax():
    nodes = [h.make_node("ReduceLogSumExp", ["x", "ax"], ["l"], keepdims=1), h.make_node("Sub", ["x", "l"], ["y"])]
    r = import_onnx(graphs.model(nodes, [("x", T.DOUBLE, ["M", 9])], ["y"],
                                 [graphs.const("ax", np.array([1], np.int64))], opset=18))
    assert "f64[" in r.functions[0].text
    check_all(r, {"M": 4})
