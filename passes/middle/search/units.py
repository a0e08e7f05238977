"""Units of scheduling: a group as the graph has it, or - for a group with cross-team reductions - its core plus
each cross-team statement peeled into a kernel of its own (the search compares both variants)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from gir import ir
from gir.passes.builtin.exprs import map_expr
from gir.passes.middle.graph import FuncGraph, Group, Stmt
from gir.passes.middle.search.options import hint


@dataclass
class Unit:
    stmts: list[Stmt]
    group: Group
    extra_stores: set[str] = field(default_factory=set)
    peeled: bool = False        # a kernel of its own: reads everything from @global
    variant: str = "whole"      # whole | peeled | op-by-op: how the search split the group

    def produced(self) -> set[str]:
        return {s.target for s in self.stmts}

    def stores(self, g: FuncGraph) -> set[str]:
        return {s.target for s in self.stmts if g.buffers[s.target].stored or s.target in self.extra_stores}


    def reads_on_chip(self, g: FuncGraph, tensor: str) -> bool:
        return not self.peeled and tensor in self.produced() and g.buffers[tensor].level != "global"

    def all_forwarded(self, g: FuncGraph) -> bool:
        """Every read of a value produced in the unit is served on chip (what tuned recipes implement)."""
        if self.peeled:
            return True
        mine = self.produced()
        ids = {s.id for s in self.stmts}
        return all(n.forwarded for n in g.nodes if n.kind == "load" and n.stmt in ids and n.tensor in mine)

    def compulsory(self, g: FuncGraph, hints: dict[str, int]) -> float:
        """Bytes of every tensor read from @global once, plus every stored result once."""
        read = set()
        for s in self.stmts:
            for x in _refs(s.value):
                if not self.reads_on_chip(g, x.name):
                    read.add(x.name)
        total = 0.0
        for t in read | self.stores(g):
            n = 1
            for d in g.types[t].shape:
                n *= hint(d, hints)
            total += n * g.types[t].dtype.nbytes
        return total


def units_of(g: FuncGraph, grp: Group) -> list[list[Unit]]:
    """The variants of a group: as it is; with cross-team statements, core + peeled statements; and op by op
    (each statement its own kernel, the group's values through @global), the fallback when no tuned recipe
    maps the fused group."""
    whole = [Unit([g.stmts[s] for s in grp.stmts], grp)]
    variants = [whole]
    if grp.cross:
        variants.append(_peeled(g, grp))
    if len(grp.stmts) > 1:
        variants.append(_op_by_op(g, grp))
    return variants


def _op_by_op(g: FuncGraph, grp: Group) -> list[Unit]:
    mine = {g.stmts[s].target for s in grp.stmts}
    read = {n.tensor for s in grp.stmts for n in g.loads(s)} & mine
    units = []
    for s in grp.stmts:
        st = g.stmts[s]
        single = Group(grp.id, [s], {v: st.ranges[v] for v in st.vars}, {s: {v: v for v in st.vars}},
                       tuple(st.out_vars))
        units.append(Unit([st], single, {st.target} & read, True, "op-by-op"))
    return units


def _peeled(g: FuncGraph, grp: Group) -> list[Unit]:
    core_ids = [s for s in grp.stmts if s not in grp.cross]
    core = Group(grp.id, core_ids, dict(grp.axes), {s: grp.varmap[s] for s in core_ids}, grp.team, set())
    extra: set[str] = set()
    peeled: list[Unit] = []
    for c in sorted(grp.cross):
        st = inline_recomputed(g, grp, g.stmts[c], extra)
        single = Group(grp.id, [c], {v: st.ranges[v] for v in st.vars}, {c: {v: v for v in st.vars}},
                       tuple(st.out_vars))
        peeled.append(Unit([st], single, set(), True, "peeled"))
    return [Unit([g.stmts[s] for s in core_ids], core, extra, False, "peeled")] + peeled


def inline_recomputed(g: FuncGraph, grp: Group, st: Stmt, need_store: set[str]) -> Stmt:
    """`st` reading only @global tensors: element-wise values of the group that are not stored are inlined
    (their expressions at the read indices); reduced values are stored by the core (`need_store`)."""
    members = {g.stmts[s].target: g.stmts[s] for s in grp.stmts}

    def fn(x):
        if not isinstance(x, ir.Ref) or x.name not in members or g.buffers[x.name].stored:
            return x
        p = members[x.name]
        if p.is_reduction:
            need_store.add(x.name)
            return x
        env = {v: i for v, i in zip(p.out_vars, x.index)}
        return map_expr(p.value, lambda y: env.get(y.name, y) if isinstance(y, ir.Var) else y)

    value = st.value
    for _ in range(len(grp.stmts)):  # values inlined may read other values of the group
        new = map_expr(value, fn)
        if new == value:
            break
        value = new
    return replace(st, value=value)


def _refs(e):
    from gir.passes.builtin.exprs import refs
    return refs(e)
