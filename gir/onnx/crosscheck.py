"""Checking an imported function against `onnx.reference` on the subgraph it came from.

`subgraph_model` cuts the function's nodes out of the model as a ModelProto of their own (inputs: the
function's non-initializer inputs; outputs: its results). `crosscheck` runs both on the same seeded random
inputs and returns the norm-wise relative error of every output and its tolerance: that of its element type,
or of 16-bit floats when any tensor of the subgraph is 16-bit (the reference then computes in 16 bits).
"""
from __future__ import annotations

import numpy as np

import onnx
from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.onnx.importer import ImportedFunction, ImportResult

TOLERANCE = {ir.DType.f32: 1e-5, ir.DType.f16: 1e-2, ir.DType.bf16: 1e-2}


def subgraph_model(result: ImportResult, fn: ImportedFunction) -> onnx.ModelProto:
    graph = result.graph
    nodes = [graph.nodes[k] for k in fn.node_indices]
    produced = {o for n in nodes for o in n.output}
    needed = {i for n in nodes for i in n.input if i and i not in produced}
    const_inputs = {o for o in fn.inputs.values()} - {fn.inputs[g] for g in fn.constants}
    initializers = [onnx.numpy_helper.from_array(graph.constants[name], name)
                    for name in sorted(needed) if name in graph.constants and name not in const_inputs]
    missing = needed - const_inputs - set(graph.constants)
    if missing:
        raise ValueError(f"the subgraph of {fn.name} reads {sorted(missing)}, which are neither its inputs nor "
                         "constants")
    infos = graph.model.graph
    by_name = {vi.name: vi for vi in list(infos.input) + list(infos.value_info) + list(infos.output)}
    inputs = [by_name[name] for name in fn.inputs.values() if name in const_inputs]
    outputs = [by_name[name] for name in fn.outputs.values()]
    g = onnx.helper.make_graph(nodes, f"{fn.name}_subgraph", inputs, outputs, initializers)
    model = onnx.helper.make_model(g, opset_imports=list(graph.model.opset_import))
    model.ir_version = graph.model.ir_version
    return model


def compare(got: np.ndarray, want: np.ndarray) -> float:
    """Norm-wise relative error (non-finite values must agree exactly); for integers and booleans, the
    fraction of elements that differ."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if want.dtype.kind in "biu":
        return float(np.mean(got != want)) if want.size else 0.0
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w)
    if not np.array_equal(np.isfinite(g), finite) or not np.array_equal(g[~finite], w[~finite], equal_nan=True):
        return float("inf")
    scale = np.linalg.norm(w[finite])
    diff = np.linalg.norm(g[finite] - w[finite])
    return float(diff / scale) if scale > 0 else float(diff)


def tolerance(dtype: ir.DType) -> float:
    return TOLERANCE.get(dtype, 0.0)


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
    # a 16-bit tensor anywhere in the subgraph makes the reference compute in 16 bits from there on
    narrow = [p.type.dtype for p in fn.func.params + fn.func.results if p.type.dtype in (ir.DType.f16, ir.DType.bf16)]
    for k in fn.node_indices:
        for name in result.graph.nodes[k].output:
            info = result.graph.tensors.get(name)
            if info is not None and info.elem_type in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
                narrow.append(ir.DType.f16)
    out = {}
    for p, w in zip(fn.func.results, want):
        tol = max([tolerance(p.type.dtype)] + [tolerance(d) for d in narrow]) if p.type.dtype.is_float else 0.0
        out[fn.outputs[p.name]] = (compare(got[p.name], w), tol)
    return out
