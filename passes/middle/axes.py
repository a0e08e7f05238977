"""Canonical axes of a statement group: which variables of different statements are the same loop.

Variables are unified with the tensor dimensions they index directly (union-find over (statement, variable)
and (tensor, dimension)): first through the group's own intermediates (a producer's output variable k is
dimension k of its tensor, and a consumer reading that dimension with a plain variable is on the same axis),
then through every other tensor the statements share (two statements reading x[i, j] and x[i, k] put j and k
on one axis), never merging two different variables of one statement. Each class is an axis of the group.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir


class AxisConflict(Exception):
    """The statements cannot share axes (an intermediate read at a non-canonical index, or a variable that
    would be two axes at once). The message says which reference and why."""

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.loc = loc


@dataclass
class Axes:
    axes: dict[str, ir.Dim]                 # canonical axis name -> extent, in order of first appearance
    varmap: dict[int, dict[str, str]]       # statement -> variable -> axis


class _UF:
    def __init__(self):
        self.parent: dict = {}
        self.members: dict = {}  # root -> {stmt: var}

    def add(self, x) -> None:
        if x not in self.parent:
            self.parent[x] = x
            self.members[x] = {x[1]: x[2]} if x[0] == "v" else {}

    def find(self, x):
        self.add(x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def can_union(self, a, b) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        ma, mb = self.members[ra], self.members[rb]
        return all(mb.get(s, v) == v for s, v in ma.items())

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            self.members[ra].update(self.members.pop(rb))


def canonical_axes(graph, stmts: list[int]) -> Axes:
    """Axes of the group `stmts` (in program order); raises AxisConflict when they cannot share axes."""
    uf = _UF()
    members = set(stmts)
    produced = {graph.stmts[s].target: s for s in stmts}
    for s in stmts:
        st = graph.stmts[s]
        for v in st.vars:
            uf.add(("v", s, v))
        for k, v in enumerate(st.out_vars):
            if not uf.can_union(("v", s, v), ("d", st.target, k)):
                raise AxisConflict(f"'{st.target}' would have two dimensions on one axis", st.loc)
            uf.union(("v", s, v), ("d", st.target, k))
    # 1. the group's own intermediates: read with plain variables, one variable per dimension
    for s in stmts:
        for n in graph.loads(s):
            if n.tensor not in produced or produced[n.tensor] >= s:
                continue
            for d, idx in enumerate(n.ref.index):
                if not isinstance(idx, ir.Var) or idx.name not in graph.stmts[s].ranges:
                    raise AxisConflict(f"'{n.tensor}' is read at a computed index here; a fused group reads its "
                                       "own intermediates at plain indices", n.ref.loc)
                a, b = ("v", s, idx.name), ("d", n.tensor, d)
                if not uf.can_union(a, b):
                    raise AxisConflict(f"'{n.tensor}' is read with its dimensions permuted against the other "
                                       "statements of the group", n.ref.loc)
                uf.union(a, b)
    # 2. every other tensor the statements share (inputs, and tensors of earlier groups)
    for s in stmts:
        for n in graph.loads(s):
            if n.tensor in produced and produced[n.tensor] < s:
                continue
            for d, idx in enumerate(n.ref.index):
                if isinstance(idx, ir.Var) and idx.name in graph.stmts[s].ranges:
                    a, b = ("v", s, idx.name), ("d", n.tensor, d)
                    if uf.can_union(a, b):
                        uf.union(a, b)
    # classes -> axis names (the first variable's name, made unique) in order of first appearance
    names: dict = {}
    axes: dict[str, ir.Dim] = {}
    varmap: dict[int, dict[str, str]] = {}
    for s in stmts:
        st = graph.stmts[s]
        varmap[s] = {}
        for v in st.vars:
            root = uf.find(("v", s, v))
            if root not in names:
                name, k = v, 1
                while name in axes:
                    k += 1
                    name = f"{v}{k}"
                names[root] = name
                axes[name] = st.ranges[v]
            elif axes[names[root]] != st.ranges[v]:
                raise AxisConflict(f"variable '{v}' ranges over {st.ranges[v]} but its axis over "
                                   f"{axes[names[root]]}", st.loc)
            varmap[s][v] = names[root]
    del members
    return Axes(axes, varmap)
