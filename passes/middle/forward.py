"""`forward-stores` and `dead-stores`: values stay on chip inside their group; @global writes nobody reads go.

forward-stores: every load of a value produced in the same group (the same team computed it: `fuse` proved the
dependence team-local) reads it on chip instead of from @global. Until `promote` decides, a team's scalar
(a row statistic) lives in a register and a per-element value is recomputed where it is read.

dead-stores: a temporary whose every read is served on chip is no longer written to @global (its `alloc`
disappears). Results are always stored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir.passes.base import GraphPass, PassContext
from gir.passes.middle.graph import FuncGraph
from gir.scan import scan_of


@dataclass(frozen=True)
class ForwardStores(GraphPass):
    """Serve reads of values produced in the same group (the same team) on chip instead of from @global."""
    name: ClassVar[str] = "forward-stores"

    def apply(self, ctx: PassContext, graph):
        for fg in graph.graphs():
            forward_func(fg, ctx)
        return graph


def forward_func(g: FuncGraph, ctx: PassContext | None = None) -> None:
    for grp in g.groups:
        forwarded: dict[str, int] = {}
        for d in g.deps_within(grp):
            load = g.nodes[d.dst]
            if not load.forwarded:
                load.forwarded = True
                forwarded[d.tensor] = forwarded.get(d.tensor, 0) + 1
        for tensor, n in forwarded.items():
            b = g.buffers[tensor]
            if b.level == "global":
                b.level = default_level(g, grp, tensor)
            if ctx is not None:
                ctx.remark("forward-stores", "passed", f"'{tensor}' is read on chip ({b.level}) by {n} load(s) of "
                           "its own group", g.producer(tensor).loc)


def default_level(g: FuncGraph, grp, tensor: str) -> str:
    """A team's scalar lives in a register; anything larger is recomputed where it is read."""
    p = g.producer(tensor)
    team_only = all(grp.varmap[p.id][v] in grp.team for v in p.out_vars)
    return "reg" if team_only else "recompute"


@dataclass(frozen=True)
class DeadStores(GraphPass):
    """Remove @global writes of temporaries that every reader gets on chip."""
    name: ClassVar[str] = "dead-stores"

    def apply(self, ctx: PassContext, graph):
        for fg in graph.graphs():
            dead_stores_func(fg, ctx)
        return graph


def dead_stores_func(g: FuncGraph, ctx: PassContext | None = None) -> None:
    for s in g.stmts:
        b = g.buffers[s.target]
        if b.role != "temp" or not b.stored:
            continue
        readers = [n for n in g.nodes if n.kind == "load" and n.tensor == s.target]
        if not readers and scan_of(s.value) is not None:
            continue   # a scan nobody reads keeps its store: the scan recipe stores every statement it runs
        if all(n.forwarded for n in readers):
            b.stored = False
            g.store(s.id).removed = True
            if b.level == "global":  # read by nobody at all: computed for nothing
                b.level = "recompute"
            if ctx is not None:
                ctx.remark("dead-stores", "passed", f"'{s.target}' never goes to global memory", s.loc)
