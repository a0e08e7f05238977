"""`import_onnx`: classify nodes, partition, lower each group to a GIR function, verify it.

1. Every node is classified: folded (Constant), compute-bound (MatMul, Conv, ...), without a lowering, or
   lowered alone as a probe (which finds unsupported attributes, element types and shapes).
2. The importable nodes are partitioned into maximal convex connected groups.
3. Each group is lowered into one function. A lowering can fail only in context (a view that a statement
   reads without a range for its axes); the node to blame is left out and the partition is redone.
4. Each function is printed, parsed back and verified (`gir.verifier.verify_module`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import onnx
from gir import ir
from gir.errors import GirError
from gir.onnx.build import FunctionBuilder, Unsupported
from gir.onnx.model import Graph, load_graph
from gir.onnx.names import sanitize
from gir.onnx.ops import COMPUTE_BOUND, TABLE
from gir.onnx.partition import partition, results_of
from gir.parser import parse_text
from gir.printer import print_module
from gir.verifier import verify_module


@dataclass
class ImportedFunction:
    name: str
    text: str                                   # GIR source of this function (with a header comment)
    func: ir.Func
    nodes: list[str]                            # ONNX node names, in order
    op_types: list[str]
    inputs: dict[str, str]                      # GIR parameter → ONNX tensor
    outputs: dict[str, str]                     # GIR result → ONNX tensor
    constants: dict[str, np.ndarray] = field(default_factory=dict)  # GIR parameter → initializer value
    sizes: dict[str, str] = field(default_factory=dict)             # GIR size name → ONNX dim_param
    node_indices: list[int] = field(default_factory=list, repr=False)

    def to_json(self) -> dict:
        return {"name": self.name, "nodes": self.nodes, "op_types": self.op_types, "inputs": self.inputs,
                "outputs": self.outputs, "initializer_inputs": sorted(self.constants), "sizes": self.sizes}


@dataclass
class LeftOut:
    node: str
    op_type: str
    kind: str      # compute-bound, op, dtype, shape, attribute, language, unused, internal
    reason: str

    def to_json(self) -> dict:
        return {"node": self.node, "op_type": self.op_type, "kind": self.kind, "reason": self.reason}


@dataclass
class ImportResult:
    source: str
    functions: list[ImportedFunction]
    left_out: list[LeftOut]
    graph: Graph = field(repr=False)

    @property
    def text(self) -> str:
        """Every function, as one GIR file."""
        return "\n".join(f.text for f in self.functions)

    def function(self, name: str) -> ImportedFunction:
        return next(f for f in self.functions if f.name == name)

    def imported_ops(self) -> list[str]:
        return [op for f in self.functions for op in f.op_types]

    def left_out_ops(self) -> list[str]:
        return [x.op_type for x in self.left_out]

    def to_json(self) -> dict:
        return {"source": self.source, "functions": [f.to_json() for f in self.functions],
                "left_out": [x.to_json() for x in self.left_out]}

    def write(self, out_dir: str | os.PathLike) -> list[Path]:
        """DIR/NAME.gir for each function, DIR/report.md and DIR/report.json."""
        from gir.onnx.report import write_report

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for f in self.functions:
            path = out / f"{f.name}.gir"
            path.write_text(f.text, encoding="utf-8")
            written.append(path)
        return written + write_report(self, out)


def import_onnx(source: str | os.PathLike | onnx.ModelProto, out_dir: str | os.PathLike | None = None) -> ImportResult:
    """Import the memory-bound subgraphs of an ONNX model as GIR functions (written to `out_dir` if given)."""
    graph = load_graph(source)
    sizes: dict[str, str] = {}  # ONNX dim_param → GIR size name, shared by every function
    left: dict[int, LeftOut] = {}
    inside: set[int] = set()
    for k, node in enumerate(graph.nodes):
        reason = _classify(graph, k, sizes)
        if reason is None:
            inside.add(k)
        elif reason.kind != "folded":
            left[k] = reason
    functions = _lower_groups(graph, inside, left, sizes)
    label = source if not isinstance(source, onnx.ModelProto) else (source.graph.name or "<model>")
    result = ImportResult(str(label), functions, [left[k] for k in sorted(left)], graph)
    if out_dir is not None:
        result.write(out_dir)
    return result


def _classify(graph: Graph, k: int, sizes: dict[str, str]) -> LeftOut | None:
    node = graph.nodes[k]
    name, op = graph.node_name(k), node.op_type

    def out(kind: str, reason: str) -> LeftOut:
        return LeftOut(name, op, kind, reason)
    if node.domain not in ("", "ai.onnx"):
        return out("op", f"operator domain '{node.domain}' is not imported")
    if k in graph.folded:
        return out("folded", "")
    if op == "Constant":
        return out("op", "a Constant that is not a dense numeric tensor")
    if op in COMPUTE_BOUND:
        return out("compute-bound", f"{op} is compute-bound (a matmul, convolution or recurrence): left to a "
                                    "library kernel")
    if op not in TABLE:
        return out("op", f"no lowering for ONNX {op} yet")
    try:
        _lower(graph, [k], [o for o in node.output if o], sizes)
    except Unsupported as exc:
        return out(exc.kind, exc.reason)
    return None


def _lower(graph: Graph, group: list[int], results: list[str], sizes: dict[str, str]) -> FunctionBuilder:
    b = FunctionBuilder(graph, results, sizes)
    for k in group:
        b.node_index = k
        try:
            TABLE[graph.nodes[k].op_type].fn(b, graph.nodes[k])
        except Unsupported as exc:
            if exc.node is None:
                exc.node = k
            raise
    return b


def _lower_groups(graph: Graph, inside: set[int], left: dict[int, LeftOut], sizes: dict[str, str]
                  ) -> list[ImportedFunction]:
    while True:
        done: list[tuple[list[int], FunctionBuilder]] = []
        for group in partition(graph, inside):
            results = results_of(graph, group)
            if not results:
                for k in group:
                    left[k] = LeftOut(graph.node_name(k), graph.nodes[k].op_type, "unused",
                                      "no output of its subgraph is used")
                    inside.discard(k)
                continue
            try:
                done.append((group, _lower(graph, group, results, sizes)))
            except Unsupported as exc:
                k = exc.node
                left[k] = LeftOut(graph.node_name(k), graph.nodes[k].op_type, exc.kind, exc.reason)
                inside.discard(k)
                break
        else:
            break
    functions = []
    taken: set[str] = set()
    for n, (group, b) in enumerate(done):
        fn = _finish(graph, group, b, _function_name(graph, group, taken), sizes)
        if isinstance(fn, ImportedFunction):
            functions.append(fn)
        else:
            for k in group:
                left[k] = LeftOut(graph.node_name(k), graph.nodes[k].op_type, "internal", fn)
    return functions


def _function_name(graph: Graph, group: list[int], taken: set[str]) -> str:
    ops: list[str] = []
    for k in group:
        op = graph.nodes[k].op_type.lower()
        if op not in ops:
            ops.append(op)
    base = sanitize("_".join(ops[:3]) or "f", "f")
    name, n = base, 1
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name


def _finish(graph: Graph, group: list[int], b: FunctionBuilder, name: str, sizes: dict[str, str]
            ) -> ImportedFunction | str:
    """The verified function, or the reason it failed verification (a bug of a lowering)."""
    func = b.function(name)
    nodes = [graph.node_name(k) for k in group]
    header = f"# imported from ONNX nodes: {', '.join(nodes)}\n"
    if len(header) > 400:
        header = f"# imported from {len(nodes)} ONNX nodes: {nodes[0]} ... {nodes[-1]}\n"
    text = header + print_module(ir.Module((func,))) + "\n"
    try:
        module = parse_text(text, f"{name}.gir")
        verify_module(module)
    except GirError as exc:
        return f"internal error: the generated GIR does not verify: {exc.format()}"
    used = set(func.size_symbols())
    return ImportedFunction(name, text, module.funcs[0], nodes, [graph.nodes[k].op_type for k in group],
                            dict(b.inputs), dict(b.outputs), dict(b.constant_inputs),
                            {g: d for d, g in sizes.items() if g in used}, list(group))
