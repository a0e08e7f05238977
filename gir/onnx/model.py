"""Loading an ONNX model: shape inference, tensor types, constants, producers and consumers.

`load_graph` turns a path or a ModelProto into a `Graph`: the nodes of the main graph in topological order,
the element type and shape of every tensor (after `onnx.shape_inference.infer_shapes`), the values of
initializers and Constant nodes, and the opset of the default domain. Nothing here knows about GIR.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

import onnx
from onnx import numpy_helper, shape_inference

# a dimension: an int, a symbolic name (dim_param) or None (unknown)
Dim = int | str | None


@dataclass(frozen=True)
class TensorInfo:
    name: str
    elem_type: int                     # onnx.TensorProto.DataType
    shape: tuple[Dim, ...] | None      # None: rank unknown

    @property
    def type_name(self) -> str:
        return onnx.TensorProto.DataType.Name(self.elem_type).lower() if self.elem_type else "unknown"


@dataclass
class Graph:
    model: onnx.ModelProto             # the model after shape inference
    nodes: list[onnx.NodeProto]
    tensors: dict[str, TensorInfo]
    constants: dict[str, np.ndarray]   # initializers and Constant-node outputs
    inputs: list[str]                  # graph inputs that are not initializers
    outputs: list[str]
    opset: int
    folded: set[int] = field(default_factory=set)                    # nodes whose outputs are constants
    producer: dict[str, int] = field(default_factory=dict)           # tensor → index of its node
    consumers: dict[str, list[int]] = field(default_factory=dict)    # tensor → indices of nodes reading it

    def node_name(self, k: int) -> str:
        node = self.nodes[k]
        return node.name or f"{node.op_type}_{k}"


def load_model(source: str | os.PathLike | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(source, onnx.ModelProto):
        return source
    return onnx.load(os.fspath(source))


def load_graph(source: str | os.PathLike | onnx.ModelProto) -> Graph:
    """Read and shape-infer a model. Shapes that inference cannot find stay unknown (None)."""
    model = load_model(source)
    try:
        model = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference is best effort: a model it rejects still has its declared types
        pass
    g = model.graph
    tensors: dict[str, TensorInfo] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tensors[vi.name] = _tensor_info(vi)
    constants: dict[str, np.ndarray] = {}
    for init in g.initializer:
        constants[init.name] = numpy_helper.to_array(init)
        tensors[init.name] = TensorInfo(init.name, init.data_type, tuple(int(d) for d in init.dims))
    for node in g.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = _constant_value(node)
            if value is not None:
                constants[node.output[0]] = value
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    graph = Graph(model, list(g.node), tensors, constants,
                  [i.name for i in g.input if i.name not in constants], [o.name for o in g.output], opset)
    _fold_constants(graph)
    _reinfer(graph)
    for k, node in enumerate(graph.nodes):
        for name in node.output:
            if name:
                graph.producer[name] = k
        for name in node.input:
            if name:
                graph.consumers.setdefault(name, []).append(k)
    return graph


FOLD_LIMIT = 1 << 16  # elements: larger constant computations are left to the model


def _fold_constants(graph: Graph) -> None:
    """Constant folding: Constant nodes, Shape of a static shape, and nodes whose inputs are all constants
    (evaluated with onnx.reference), so that shapes and axes computed in the graph become constants."""
    for k, node in enumerate(graph.nodes):
        if node.domain not in ("", "ai.onnx") or not node.output:
            continue
        if node.op_type == "Constant":
            if node.output[0] in graph.constants:
                graph.folded.add(k)
            continue
        values = _fold(graph, node)
        if values is None:
            continue
        for name, value in zip(node.output, values):
            if name:
                value = np.asarray(value)
                graph.constants[name] = value
                graph.tensors[name] = TensorInfo(name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype),
                                                 tuple(value.shape))
        graph.folded.add(k)


def _reinfer(graph: Graph) -> None:
    """Shape inference again, with the folded values as initializers: a shape computed in the graph (GroupNorm's
    expanded `Concat(Shape(x)[0], G, C / G, ...)`) then gives static output shapes where the first inference
    had only unknown dimensions. Shapes it finds replace those of the first inference."""
    computed = {k for k in graph.folded if graph.nodes[k].op_type != "Constant"}
    if not computed:
        return
    model = onnx.ModelProto()
    model.CopyFrom(graph.model)
    g = model.graph
    initialized = {init.name for init in g.initializer}
    folded_outputs = {o for k in graph.folded for o in graph.nodes[k].output if o}
    keep = [n for k, n in enumerate(graph.nodes) if k not in graph.folded]
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(numpy_helper.from_array(graph.constants[name], name)
                         for name in sorted(folded_outputs - initialized) if name in graph.constants)
    del g.value_info[:]
    try:
        model = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # best effort, as the first inference
        return
    for vi in model.graph.value_info:
        if vi.name in graph.constants:
            continue
        info = _tensor_info(vi)
        old = graph.tensors.get(vi.name)
        if info.shape is not None and (old is None or old.shape is None or _known(info) >= _known(old)):
            graph.tensors[vi.name] = info


def _known(info: TensorInfo) -> int:
    return sum(isinstance(d, int) for d in info.shape or ())


def _fold(graph: Graph, node: onnx.NodeProto) -> list[np.ndarray] | None:
    if node.op_type == "Shape":
        info = graph.tensors.get(node.input[0])
        if info is None or info.shape is None or not all(isinstance(d, int) for d in info.shape):
            return None
        attrs = attributes(node)
        start, end = attrs.get("start", 0), attrs.get("end", None)
        return [np.array(info.shape[start:end], dtype=np.int64)]
    inputs = [i for i in node.input if i]
    if not inputs or not all(i in graph.constants for i in inputs) or node.op_type.startswith("Random") \
            or sum(graph.constants[i].size for i in inputs) > FOLD_LIMIT or node.attribute and any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return None
    try:
        from onnx.reference import ReferenceEvaluator

        values = ReferenceEvaluator(node, opsets={"": graph.opset}).run(
            None, {i: graph.constants[i] for i in inputs})
    except Exception:  # an op the reference cannot run: leave the node in the graph
        return None
    if any(not isinstance(v, np.ndarray) or v.size > FOLD_LIMIT or v.dtype == object for v in values):
        return None
    return values


def _tensor_info(vi: onnx.ValueInfoProto) -> TensorInfo:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return TensorInfo(vi.name, t.elem_type if vi.type.HasField("tensor_type") else 0, None)
    dims: list[Dim] = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return TensorInfo(vi.name, t.elem_type, tuple(dims))


def _constant_value(node: onnx.NodeProto) -> np.ndarray | None:
    for attr in node.attribute:
        if attr.name == "value":
            return numpy_helper.to_array(attr.t)
        if attr.name == "value_float":
            return np.array(attr.f, dtype=np.float32)
        if attr.name == "value_floats":
            return np.array(list(attr.floats), dtype=np.float32)
        if attr.name == "value_int":
            return np.array(attr.i, dtype=np.int64)
        if attr.name == "value_ints":
            return np.array(list(attr.ints), dtype=np.int64)
    return None  # sparse or string constants: not a numeric constant


def attributes(node: onnx.NodeProto) -> dict[str, object]:
    """The node's attributes as Python values."""
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
