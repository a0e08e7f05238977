"""The axes of the tile recipe (passes/schedule_mlu/tiles.py): every index of every statement as one of the
function's axes (union-find over the tensors' dimensions, ordered as the tensors lay them out; `find_axes`), and
the flattening of neighbouring axes that every tensor holds together into one, through reshape views of the
tensors (`flatten`). `NotTile` when the function is outside the recipe.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gir import ir
from gir.walk import map_expr_pre, walk
from gir.passes.schedule_mlu.rowmodel import NotRowModel


class NotTile(NotRowModel):
    """The function is outside the tile recipe (the scheduler falls back)."""


class PlanRefused(NotTile):
    """One plan of the tile recipe (a split of the rows, blocks of sub-tiles) cannot be built for the function;
    the recipe's search goes on to its other plans (tiles_kernel.build). Outside that search, a NotTile."""


# ---------------------------------------------------------------------------------------------------- axes
class _UF:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _walk_refs(e):
    """Refs of `e` in evaluation order (operator-layer indices hold no references)."""
    return (x for x in walk(e) if isinstance(x, ir.Ref))


def _index_vars_as_values(e, names) -> bool:
    """Whether an index variable (in `names`) is used as a value outside a Ref's index."""
    if isinstance(e, ir.Var):
        return e.name in names
    if isinstance(e, ir.BinOp):
        return _index_vars_as_values(e.lhs, names) or _index_vars_as_values(e.rhs, names)
    if isinstance(e, ir.UnOp):
        return _index_vars_as_values(e.operand, names)
    if isinstance(e, ir.Call):
        return any(_index_vars_as_values(a, names) for a in e.args)
    if isinstance(e, ir.Reduce):
        return _index_vars_as_values(e.arg, names)
    return False


@dataclass
class Axes:
    order: list            # axis ids, outermost first
    ext: dict              # axis -> extent
    dims: dict             # tensor name -> tuple of axes (one per dimension)
    svars: list            # per statement: index variable -> axis
    types: dict            # tensor name -> TensorType (sizes specialised)


def find_axes(func: ir.Func, info) -> Axes:
    """The function's axes (NotTile for transposes, diagonals, computed or constant indices, index values)."""
    uf = _UF()
    types = dict(info.types)
    for k, st in enumerate(info.stmts):
        s = st.stmt
        names = set(st.ranges)
        if _index_vars_as_values(s.value, names):
            raise NotTile("an index is used as a value")
        for ref in [s.target, *_walk_refs(s.value)]:
            if len(ref.index) != len(types[ref.name].shape):
                raise NotTile(f"'{ref.name}' indexed with another rank")
            for d, i in enumerate(ref.index):
                if not isinstance(i, ir.Var) or i.name not in names:
                    raise NotTile(f"'{ref.name}' has a computed or constant index")
                uf.union(("v", k, i.name), ("t", ref.name, d))
    dims: dict = {}
    ext: dict = {}
    for name, t in types.items():
        axes = []
        for d, n in enumerate(t.shape):
            a = uf.find(("t", name, d))
            if not isinstance(n, int):
                raise NotTile("symbolic sizes")
            if ext.setdefault(a, n) != n:
                raise NotTile("an axis with two extents")
            axes.append(a)
        if len(set(axes)) != len(axes):
            raise NotTile(f"'{name}' indexes one axis twice (a diagonal)")
        dims[name] = tuple(axes)
    svars = []
    for k, st in enumerate(info.stmts):
        m = {v: uf.find(("v", k, v)) for v in st.ranges}
        if len(set(m.values())) != len(m):
            raise NotTile("a statement indexes one axis with two variables (a diagonal)")
        svars.append(m)
    # order: tensors' dimension order (a precedence graph); ties by first appearance in the largest tensors
    first: dict = {}
    for name in sorted(dims, key=lambda n: -len(dims[n])):
        for a in dims[name]:
            first.setdefault(a, len(first))
    succ: dict = {a: set() for a in first}
    indeg: dict = {a: 0 for a in first}
    for axes in dims.values():
        for a, b in zip(axes, axes[1:]):
            if b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    order = []
    ready = sorted((a for a in first if indeg[a] == 0), key=first.get)
    while ready:
        a = ready.pop(0)
        order.append(a)
        for b in succ[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
        ready.sort(key=first.get)
    if len(order) != len(first):
        raise NotTile("tensors lay out their axes in different orders (a transpose)")
    return Axes(order, ext, dims, svars, types)


def _reduced_axes(info, axes: Axes) -> list[frozenset]:
    out = []
    for k, st in enumerate(info.stmts):
        for vs in st.reduce_vars.values():
            out.append(frozenset(axes.svars[k][v] for v in vs))
    return out


# ---------------------------------------------------------------------------------------------- flattening
def flatten(func: ir.Func, info) -> tuple[ir.Func, bool]:
    """`func` with every run of neighbouring axes that all tensors hold together (adjacent, in order, reduced
    together) merged into one axis through reshape views; (func, False) when nothing merges."""
    axes = find_axes(func, info)
    reds = _reduced_axes(info, axes)
    groups: list[list] = []
    for a in axes.order:
        if groups and _mergeable(groups[-1][-1], a, axes, reds):
            groups[-1].append(a)
        else:
            groups.append([a])
    merged = [g for g in groups if len(g) > 1]
    if not merged:
        return func, False
    head = {g[0]: g for g in merged}
    inner = {a for g in merged for a in g[1:]}

    def new_shape(name):
        shape = []
        for a in axes.dims[name]:
            if a in inner:
                continue
            n = 1
            for b in head.get(a, [a]):
                n *= axes.ext[b]
            shape.append(n)
        return tuple(shape)

    def retype(p: ir.Param) -> ir.Param:
        shape = new_shape(p.name)
        if shape == tuple(p.type.shape):
            return p
        outer = p.view.outer if p.view is not None else p.type
        t = ir.TensorType(p.type.dtype, shape)
        return dataclasses.replace(p, type=t, view=ir.View(outer, tuple(ir.Const(n) for n in shape)))

    def rw(e):   # references lose the merged (inner) axes; the head axis indexes the merged dimension
        if not isinstance(e, ir.Ref):
            return e
        kept = tuple(i for d, i in enumerate(e.index) if axes.dims[e.name][d] not in inner)
        return dataclasses.replace(e, index=kept)

    body = []
    for s in func.body:
        if isinstance(s, ir.Assign):
            s = dataclasses.replace(s, target=map_expr_pre(s.target, rw), value=map_expr_pre(s.value, rw))
        body.append(s)
    return dataclasses.replace(func, params=tuple(retype(p) for p in func.params),
                               results=tuple(retype(p) for p in func.results), body=tuple(body)), True


def _mergeable(a, b, axes: Axes, reds) -> bool:
    for dims in axes.dims.values():
        if (a in dims) != (b in dims):
            return False
        if a in dims and dims.index(b) != dims.index(a) + 1:
            return False
    return all((a in r) == (b in r) for r in reds)
