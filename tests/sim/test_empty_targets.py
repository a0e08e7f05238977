"""Zero-size dimensions (gir/empty.py): the evaluator gives empty results and, for reductions over an empty range,
the identities of ONNX's reductions over an empty set (checked against onnx.reference when installed); gir.compile
and gir run on sim and mlu-sim give the same; an arg-reduction over an empty range and emitting kernels for an
empty binding are located errors."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import gir
from gir.errors import GirError
from gir.evaluate import evaluate
from gir.parser import parse_text

REDUCE = """
func red(x: f32[M, N], k: i32[M, N], b: bool[M, N]) -> (s: f32[M], p: f32[M], mx: f32[M], mn: f32[M], me: f32[M],
                                                       ki: i32[M], kn: i32[M], an: bool[M], al: bool[M],
                                                       y: f32[M, N], c: f32[N]) {
  s[i] = sum(x[i, j])
  p[i] = prod(x[i, j])
  mx[i] = max(x[i, j])
  mn[i] = min(x[i, j])
  me[i] = mean(x[i, j]) * 2.0
  ki[i] = max(k[i, j])
  kn[i] = min(k[i, j] + j)
  an[i] = max(b[i, j])
  al[i] = min(b[i, j])
  y[i, j] = x[i, j] / (s[i] + 1.0)
  c[j] = sum(x[i, j] * y[i, j])
}
"""
BINDINGS = [(3, 0), (0, 5), (0, 0), (1, 0)]


def inputs(m, n):
    rng = np.random.default_rng(zlib.crc32(f"empty:{m}:{n}".encode()))
    return {"x": rng.standard_normal((m, n)).astype(np.float32), "k": rng.integers(-5, 5, (m, n)).astype(np.int32),
            "b": rng.random((m, n)) < 0.5}


def same(got, want, where):
    for name, w in want.items():
        g = np.asarray(got[name])
        assert g.shape == w.shape and g.dtype == w.dtype, f"{where} {name}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        assert np.array_equal(g, w, equal_nan=True), f"{where} {name}: {g} != {w}"


@pytest.mark.parametrize("m, n", BINDINGS)
def test_evaluator_identities(m, n):
    out = evaluate(parse_text(REDUCE, "<red>").funcs[0], inputs(m, n))
    assert out["y"].shape == (m, n) and out["c"].shape == (n,)
    if m and not n:
        i32 = np.iinfo(np.int32)
        want = {"s": 0.0, "p": 1.0, "mx": -np.inf, "mn": np.inf, "me": np.nan, "ki": i32.min, "kn": i32.max,
                "an": False, "al": True}
        for name, v in want.items():
            assert np.array_equal(out[name], np.full(m, v, out[name].dtype), equal_nan=True), name
    if n and not m:
        assert np.array_equal(out["c"], np.zeros(n, np.float32))


def test_identities_match_onnx_reference():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    x = np.zeros((3, 0), np.float32)
    got = evaluate(parse_text(REDUCE, "<red>").funcs[0], inputs(3, 0))
    for op, name, scale in (("ReduceSum", "s", 1), ("ReduceProd", "p", 1), ("ReduceMax", "mx", 1),
                            ("ReduceMin", "mn", 1), ("ReduceMean", "me", 2)):
        axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
        node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 0])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[axes])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        (ref,) = ReferenceEvaluator(model).run(None, {"x": x})
        assert np.array_equal(got[name], ref * scale, equal_nan=True), (op, got[name], ref)
    assert onnx is not None


@pytest.mark.parametrize("m, n", BINDINGS)
@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_compiled_targets(target, m, n):
    func = parse_text(REDUCE, "<red>").funcs[0]
    inp = inputs(m, n)
    kernel = gir.compile(REDUCE, target=target, cache=False)
    outs = kernel(**{k: v.copy() for k, v in inp.items()})
    same(dict(zip(kernel.results, outs)), evaluate(func, inp), f"{target} {m}x{n}")


@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_literal_zero_dims_and_out(target):
    src = "func f(x: f32[M, 0], w: f32[0]) -> (y: f32[M], z: f32[M, 0]) {\n  y[i] = max(x[i, j]) + sum(w[j])\n" \
          "  z[i, j] = x[i, j] * 2.0\n}\n"
    kernel = gir.compile(src, target=target, cache=False)
    y, z = kernel(np.zeros((4, 0), np.float32), np.zeros(0, np.float32))
    assert np.array_equal(y, np.full(4, -np.inf, np.float32)) and z.shape == (4, 0)
    out = (np.ones(4, np.float32), np.ones((4, 0), np.float32))
    kernel(np.zeros((4, 0), np.float32), np.zeros(0, np.float32), out=out)
    assert np.array_equal(out[0], y)


def test_empty_argmax_is_located():
    src = "func f(x: f32[M, N]) -> (y: i32[M]) {\n  y[i] = argmax(x[i, j])\n}\n"
    for run in (lambda: evaluate(parse_text(src, "<f>").funcs[0], {"x": np.zeros((2, 0), np.float32)}),
                lambda: gir.compile(src, target="sim", sizes={"M": 2, "N": 0}, cache=False)):
        with pytest.raises(GirError) as e:
            run()
        d = e.value.diagnostics[0]
        assert "argmax() over an empty range" in d.message and (d.loc.line, d.loc.col) == (2, 10), d


def test_read_of_empty_tensor_outside_a_reduction_is_located():
    src = "func f(x: f32[M, N], w: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i, 0] + w[i]\n}\n"
    with pytest.raises(GirError) as e:
        gir.compile(src, target="sim", sizes={"M": 2, "N": 0}, cache=False)
    d = e.value.diagnostics[0]
    assert "'x' has no elements" in d.message and (d.loc.line, d.loc.col) == (2, 10), d
