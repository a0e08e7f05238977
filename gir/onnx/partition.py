"""Partitioning: maximal connected memory-bound subgraphs that can run as one function.

Nodes that the importer lowers are joined along data edges (a tensor one of them produces and another reads
as data). A component that a path leaves and re-enters (x → Softmax → MatMul → Add ← Softmax) cannot run as
one function; it is split by the number of times such paths have left it before each node. A reshape that
merges axes of a tensor computed in the group ends it (`cuts`): the group returns the reshaped tensor through a
result view and its readers start another group, reading it as a parameter.
"""
from __future__ import annotations

from gir.onnx.model import Graph
from gir.onnx.ops import data_inputs
from gir.onnx.ops.views import boundary_reshape


def producers(graph: Graph, k: int, inside: set[int]) -> list[int]:
    """Nodes whose outputs node k depends on (data inputs for importable nodes, all inputs otherwise).
    Folded nodes (Constant, constant computations) are nobody's producer."""
    node = graph.nodes[k]
    names = data_inputs(node) if k in inside else [n for n in node.input if n]
    out = []
    for name in names:
        p = graph.producer.get(name)
        if p is not None and p not in graph.folded:
            out.append(p)
    return out


def cuts(graph: Graph, inside: set[int]) -> set[int]:
    """The nodes whose outputs leave their group: reshapes that merge axes of a tensor computed inside (a
    view is only at a function's boundary)."""
    return {k for k in inside if boundary_reshape(graph, graph.nodes[k])
            and graph.producer.get(graph.nodes[k].input[0]) in inside}


def _components(graph: Graph, members: set[int], inside: set[int], cut: set[int]) -> list[list[int]]:
    parent = {k: k for k in members}

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k
    for k in members:
        for p in producers(graph, k, inside):
            if p in members and p not in cut:
                parent[find(p)] = find(k)
    groups: dict[int, list[int]] = {}
    for k in sorted(members):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


def _convex_split(graph: Graph, comp: list[int], inside: set[int], cut: set[int]) -> list[list[int]]:
    """Split a component so that no path between two nodes of one part leaves the part."""
    members = set(comp)
    level: dict[int, int] = {}
    for k in range(min(comp), len(graph.nodes)):
        preds = [p for p in producers(graph, k, inside) if p in level]
        if k in members:
            level[k] = max([0] + [level[p] if p in members and p not in cut else level[p] + 1 for p in preds])
        elif preds:
            level[k] = max(level[p] for p in preds)
    if len({level[k] for k in comp}) == 1:
        return [comp]
    parts: dict[int, set[int]] = {}
    for k in comp:
        parts.setdefault(level[k], set()).add(k)
    return [g for part in parts.values() for g in _components(graph, part, inside, cut)]


def partition(graph: Graph, inside: set[int]) -> list[list[int]]:
    """Groups of the nodes in `inside` (each in topological order), ordered by their first node."""
    cut = cuts(graph, inside)
    groups = [g for comp in _components(graph, inside, inside, cut) for g in _convex_split(graph, comp, inside, cut)]
    return sorted(groups, key=lambda g: g[0])


def results_of(graph: Graph, group: list[int]) -> list[str]:
    """The tensors a group must return: read by a node outside it, or outputs of the graph."""
    members = set(group)
    outputs = set(graph.outputs)
    out = []
    for k in group:
        for name in graph.nodes[k].output:
            if name and (name in outputs or any(c not in members for c in graph.consumers.get(name, ()))):
                out.append(name)
    return out
