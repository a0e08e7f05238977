"""The ONNX-subgraph interpreter behind the torch.compile baseline of `gir bench MODEL.onnx`
(targets/bench/onnx_fn.py): its ONNX semantics are checked with the numpy backend on every backend node test
the importer imports (so on the op set the importer accepts), and with the torch backend where torch is
installed (on the CPU: no GPU needed)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from gir import ir, verdict  # noqa: E402
from gir.onnx import import_onnx  # noqa: E402
from gir.onnx.backend import freeze_parameters, node_cases, run_case  # noqa: E402
from gir.onnx.crosscheck import subgraph_model  # noqa: E402
from gir.targets.bench.onnx_fn import NumpyBackend, UnsupportedOp, onnx_function  # noqa: E402
import onnx_graphs as graphs  # noqa: E402

_DTYPES = {np.dtype(np.float32): ir.DType.f32, np.dtype(np.float16): ir.DType.f16}


def _subgraphs():
    """(name, subgraph model, feeds) for every function of every backend node test the importer imports: the
    models `gir bench MODEL.onnx` times (crosscheck.subgraph_model), fed with the test's data."""
    from onnx.reference import ReferenceEvaluator

    out = []
    for case in node_cases():
        status, _ = run_case(case)
        if status != "match":
            continue
        case = freeze_parameters(case)
        result = import_onnx(case.model)
        env = {**case.inputs, **result.graph.constants}
        for fn in _in_order(result.functions, env):
            model = subgraph_model(result, fn)
            feeds = {vi.name: env[vi.name] for vi in model.graph.input}
            with np.errstate(all="ignore"):
                want = ReferenceEvaluator(model).run(None, feeds)
            env.update(zip([o.name for o in model.graph.output], want))
            out.append((f"{case.name}/{fn.name}", model, feeds))
    return out


def _in_order(functions, env):
    pending = list(functions)
    while pending:
        fn = next(f for f in pending if all(t in env for t in f.inputs.values()))
        pending.remove(fn)
        yield fn
        for t in fn.outputs.values():  # (the caller has stored the real values by now)
            env.setdefault(t, None)


@pytest.fixture(scope="module")
def imported_cases():
    cases = _subgraphs()
    assert len(cases) >= 400
    return cases


def _judge(name, got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, name
    if want.dtype.kind == "f" or want.dtype.name == "bfloat16":
        dtype = _DTYPES.get(want.dtype, ir.DType.f16)
        v = verdict.compare(got.astype(np.float32), want.astype(np.float32), ir.DType.f32)
        assert v.error <= verdict.TOLERANCE[dtype], f"{name}: {v.error:.3g} ({v.reason})"
    else:
        assert np.array_equal(got, want), name


def run_with(backend, model, feeds, to_backend=lambda a: a):
    fn = onnx_function(model, backend)
    return fn(*[to_backend(feeds[n]) for n in fn.input_names])


def reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    with np.errstate(all="ignore"):
        return ReferenceEvaluator(model).run(None, feeds)


def test_every_op_the_importer_lowers_has_a_rule():
    from gir.onnx.ops import TABLE
    from gir.onnx.ops.elementwise import _not_in_language
    from gir.onnx.ops.views import _not_expressible
    from gir.targets.bench.onnx_fn import RULES

    lowered = {op for op, entry in TABLE.items() if entry.fn not in (_not_in_language, _not_expressible)}
    assert len(lowered) > 80 and lowered <= set(RULES), sorted(lowered - set(RULES))


def test_numpy_backend_on_every_imported_node_test(imported_cases):
    for name, model, feeds in imported_cases:
        with np.errstate(all="ignore"):
            got = run_with(NumpyBackend(), model, feeds)
        for out, g, w in zip(model.graph.output, got, reference(model, feeds)):
            _judge(f"{name}: {out.name}", g, w)


def test_torch_backend_on_every_imported_node_test(imported_cases):
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch backend is not checked here")
    from gir.targets.bench.onnx_fn import TorchBackend

    def to_torch(a):
        if a.dtype.name == "bfloat16":
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(a))

    for name, model, feeds in imported_cases:
        got = run_with(TorchBackend("cpu"), model, feeds, to_torch)
        for out, g, w in zip(model.graph.output, got, reference(model, feeds)):
            g = g.float() if g.dtype == torch.bfloat16 else g
            _judge(f"{name}: {out.name}", g.numpy(), w)


def test_models_with_several_nodes_match_the_reference():
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(5)
    for model in (graphs.bert_layer(), graphs.llama_block()):
        model = onnx.shape_inference.infer_shapes(model)
        feeds = {}
        for vi in model.graph.input:
            dims = [d.dim_value or 3 for d in vi.type.tensor_type.shape.dim]
            feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
        names = [o.name for o in model.graph.output]
        want = ReferenceEvaluator(model).run(names, feeds)
        nodes_ok = all(n.op_type != "MatMul" for n in model.graph.node)
        if not nodes_ok:
            with pytest.raises(UnsupportedOp, match="MatMul"):
                onnx_function(model, NumpyBackend())
            continue
        fn = onnx_function(model, NumpyBackend())
        for name, g, w in zip(names, fn(*[feeds[n] for n in fn.input_names]), want):
            _judge(name, g, w)
