"""Checking an imported function against `onnx.reference` on the subgraph it came from.

`subgraph_model` cuts the function's nodes out of the model as a ModelProto of their own (inputs: the
function's non-initializer inputs; outputs: its results). `crosscheck` runs both on the same seeded random
inputs and returns the norm-wise relative error of every output and its tolerance: that of its element type,
or of 16-bit floats when any tensor of the subgraph is 16-bit (the reference then computes in 16 bits).
"""
from __future__ import annotations

import numpy as np

import onnx
from gir import ir, verdict
from gir.evaluate import evaluate, random_inputs
from gir.onnx.importer import ImportedFunction, ImportResult

def subgraph_model(result: ImportResult, fn: ImportedFunction, initializers_as_inputs: bool = False
                   ) -> onnx.ModelProto:
    """The function's nodes as a model of their own. `initializers_as_inputs`: the function's initializer
    parameters (weights) are graph inputs too, so the model's inputs are exactly the function's parameters,
    in the same order (what `gir bench MODEL.onnx` feeds to onnxruntime and torch)."""
    graph = result.graph
    nodes = [graph.nodes[k] for k in fn.node_indices]
    produced = {o for n in nodes for o in n.output}
    needed = {i for n in nodes for i in n.input if i and i not in produced}
    fed = set(fn.inputs.values()) - (set() if initializers_as_inputs else {fn.inputs[g] for g in fn.constants})
    initializers = [onnx.numpy_helper.from_array(graph.constants[name], name)
                    for name in sorted(needed) if name in graph.constants and name not in fed]
    missing = needed - fed - set(graph.constants)
    if missing:
        raise ValueError(f"the subgraph of {fn.name} reads {sorted(missing)}, which are neither its inputs nor "
                         "constants")
    infos = graph.model.graph
    by_name = {vi.name: vi for vi in list(infos.input) + list(infos.value_info) + list(infos.output)}
    inputs = [by_name.get(name) or _value_info(graph, name) for name in fn.inputs.values() if name in fed]
    outputs = [by_name[name] for name in fn.outputs.values()]
    g = onnx.helper.make_graph(nodes, f"{fn.name}_subgraph", inputs, outputs, initializers)
    model = onnx.helper.make_model(g, opset_imports=list(graph.model.opset_import))
    model.ir_version = graph.model.ir_version
    return model


def _value_info(graph, name: str) -> onnx.ValueInfoProto:
    info = graph.tensors[name]
    return onnx.helper.make_tensor_value_info(name, info.elem_type, list(info.shape))


def compare(got: np.ndarray, want: np.ndarray, dtype: ir.DType) -> float:
    """The error `gir run` judges (gir.verdict): norm-wise relative error, inf when shapes or NaN/inf patterns
    differ; integers and booleans exact (0 when equal)."""
    return float(verdict.compare(got, want, dtype).error)


def tolerance(dtype: ir.DType) -> float:
    return verdict.TOLERANCE.get(dtype, 0.0)


def narrow_tolerance(result: ImportResult, fn: ImportedFunction) -> float:
    """The tolerance of 16-bit floats when a tensor of the subgraph is 16-bit (the reference then computes in
    16 bits from there on), else 0."""
    narrow = [p.type.dtype for p in fn.func.params + fn.func.results if p.type.dtype in (ir.DType.f16, ir.DType.bf16)]
    for k in fn.node_indices:
        for name in result.graph.nodes[k].output:
            info = result.graph.tensors.get(name)
            if info is not None and info.elem_type in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
                narrow.append(ir.DType.f16)
    return max([tolerance(d) for d in narrow], default=0.0)


def crosscheck(result: ImportResult, fn: ImportedFunction, sizes: dict[str, int] | None = None,
               seed: int = 0) -> dict[str, tuple[float, float]]:
    """{ONNX output: (error, tolerance)} of `fn` against onnx.reference on seeded random inputs."""
    from onnx.reference import ReferenceEvaluator

    sizes = dict(sizes or {})
    for k, name in enumerate(fn.func.size_symbols()):
        sizes.setdefault(name, 3 + 2 * k)
    inputs = random_inputs(fn.func, sizes, np.random.default_rng(seed), given=fn.constants)
    got = evaluate(fn.func, inputs)
    feeds = {fn.inputs[g]: v for g, v in inputs.items() if g not in fn.constants}
    model = subgraph_model(result, fn)
    names = [fn.outputs[p.name] for p in fn.func.results]
    want = ReferenceEvaluator(model).run(names, feeds)
    floor = narrow_tolerance(result, fn)
    out = {}
    for p, w in zip(fn.func.results, want):
        tol = max(tolerance(p.type.dtype), floor) if p.type.dtype.is_float else 0.0
        out[fn.outputs[p.name]] = (compare(got[p.name], w, p.type.dtype), tol)
    return out
