"""`load-cse`: inside a group, loads of the same tensor element for the same team point are one load.

Two loads are the same when their index expressions, written over the group's canonical axes, are equal
(`x[i, j]` in the statement computing the row maximum and `x[i, k]` in the one computing the exponentials,
when j and k are one axis). The later load is merged into the first one: the printer gives them one register
inside a loop body, and the search's recipes load the element once per team point (or cache it) for all of
them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.printer import format_expr
from gir.passes.base import GraphPass, PassContext
from gir.passes.middle.graph import FuncGraph
from gir.passes.schedule.emit import subst


@dataclass(frozen=True)
class LoadCSE(GraphPass):
    """Load each tensor element once per team point: merge equal loads of a group."""
    name: ClassVar[str] = "load-cse"

    def apply(self, ctx: PassContext, graph):
        for fg in graph.graphs():
            load_cse_func(fg, ctx)
        return graph


def canonical_key(g: FuncGraph, grp, node) -> tuple:
    env = {v: ir.Var(a) for v, a in grp.varmap[node.stmt].items()}
    return node.tensor, tuple(format_expr(subst(i, env)) for i in node.ref.index)


def load_cse_func(g: FuncGraph, ctx: PassContext | None = None) -> None:
    for grp in g.groups:
        first: dict[tuple, int] = {}
        merged: dict[str, int] = {}
        for s in grp.stmts:
            for n in g.loads(s):
                if n.forwarded or n.merged_into is not None:
                    continue
                key = canonical_key(g, grp, n)
                if key in first:
                    n.merged_into = first[key]
                    merged[n.tensor] = merged.get(n.tensor, 0) + 1
                else:
                    first[key] = n.id
        if ctx is not None:
            for tensor, k in merged.items():
                ctx.remark("load-cse", "passed", f"{k + 1} loads of '{tensor}' in one group read the same elements: "
                           "loaded once", g.stmts[grp.stmts[0]].loc)
