"""The IDFG verifier, run after every graph pass (MLIR's -verify-each): a pass that breaks the graph is named.

Checked: groups partition the statements and come in dependence order; every group is legal (isl: each
dependence inside it stays within a team, see relations.check_group); a load served on chip has its producer
in its group; a load from @global has a producer that still stores; results are stored; levels are known;
a merged load is merged into a live load of the same tensor and group.
"""
from __future__ import annotations

from gir.errors import Diagnostic, GirError
from gir.passes.middle import relations as rel
from gir.passes.middle.graph import LEVELS, FuncGraph, ModuleGraph


def verify_graph(graph: ModuleGraph) -> None:
    diags: list[Diagnostic] = []
    for fg in graph.graphs():
        diags += [Diagnostic(f"IDFG of '{fg.name}': {m}", loc) for m, loc in problems(fg)]
    if diags:
        raise GirError(diagnostics=diags)


def problems(g: FuncGraph) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    seen: dict[int, int] = {}
    for gi, grp in enumerate(g.groups):
        for s in grp.stmts:
            if s in seen:
                out.append((f"statement S{s} is in groups {seen[s]} and {gi}", g.stmts[s].loc))
            seen[s] = gi
    missing = [s.id for s in g.stmts if s.id not in seen]
    if missing:
        out.append((f"statements {missing} belong to no group", None))
        return out
    for d in g.deps:
        a, b = g.nodes[d.src].stmt, g.nodes[d.dst].stmt
        if seen[a] > seen[b]:
            out.append((f"group {seen[b]} reads '{d.tensor}' before group {seen[a]} computes it",
                        g.stmts[b].loc))
    for grp in g.groups:
        out += [(f"group {grp.id}: {m}", g.stmts[grp.stmts[0]].loc) for m in rel.check_group(g, grp)]
    for n in g.nodes:
        if n.kind != "load":
            continue
        prod = g.producer(n.tensor)
        if n.forwarded and (prod is None or seen[prod.id] != seen[n.stmt]):
            out.append((f"{n.name} reads '{n.tensor}' on chip but its producer is not in its group", n.ref.loc))
        if not n.forwarded and prod is not None and g.store(prod.id).removed and n.merged_into is None:
            out.append((f"{n.name} reads '{n.tensor}' from @global, but its store was removed", n.ref.loc))
        if n.merged_into is not None:
            m = g.nodes[n.merged_into]
            if m.kind != "load" or m.tensor != n.tensor or seen[m.stmt] != seen[n.stmt] or not m.live:
                out.append((f"{n.name} is merged into {m.name}, which is not a live load of '{n.tensor}' in "
                            "its group", n.ref.loc))
    for b in g.buffers.values():
        if b.level not in LEVELS:
            out.append((f"buffer '{b.name}' has an unknown level '{b.level}' (known: {', '.join(LEVELS)})", None))
        if b.role == "result" and not b.stored:
            out.append((f"result '{b.name}' must be stored to @global", None))
        if b.role == "input" and b.level != "global":
            out.append((f"input '{b.name}' lives in @global", None))
        prod = g.producer(b.name)
        if prod is not None and g.store(prod.id).removed and b.stored:
            out.append((f"'{b.name}' is marked stored but its store was removed", None))
    return out
