"""isl views of the IDFG: instance domains, access maps, dependence relations and the same-team test.

A statement S<k> with variables (v0, ...) has the instance set { S<k>[v0, ...] : 0 <= v < extent(v) }, the
extents being sizes (isl parameters, all >= 1) or constants. A load or store maps its instances to tensor
elements; the dependence of a load on a store of the same tensor is W . R^-1 (producer instance -> consumer
instances). A group is legal when every dependence inside it relates instances of the same team:
dep ⊆ team_a . team_b^-1, where team_s maps an instance of s to the values of its team variables.
All of it goes through passes.analysis.isl_helpers, the one door to islpy.
"""
from __future__ import annotations

from gir import ir
from gir.errors import GirError
from gir.passes.analysis import isl_helpers as ih


def _bounds(graph, stmt, vars_) -> list[str]:
    s = graph.stmts[stmt]
    cons = []
    for v in vars_:
        ext = s.ranges[v]
        cons.append(f"0 <= {v} < {ext}")
    return cons + [f"{p} >= 1" for p in graph.params]


def space(stmt: int) -> str:
    return f"S{stmt}"


def domain(graph, node):
    """The instance set of a node."""
    return ih.make_set(graph.params, space(node.stmt), list(node.vars), _bounds(graph, node.stmt, node.vars))


def access(graph, node):
    """Instances of a load/store -> elements of its tensor."""
    cons = _bounds(graph, node.stmt, node.vars)
    try:
        outs = [ih.expr(i) for i in node.ref.index]
        return ih.make_map(graph.params, space(node.stmt), list(node.vars), node.ref.name, outs, [], cons)
    except ih.NotAffine:
        raise GirError(f"cannot analyse the access {node.ref.name}[...]: its indices are not quasi-affine",
                       node.ref.loc) from None


def dependence(graph, store, load):
    """The RAW relation store instance -> load instances (isl map, possibly empty)."""
    return access(graph, store).apply_range(access(graph, load).reverse())


def team_map(graph, group, stmt: int, vars_: tuple[str, ...]):
    """Instances of `stmt` (over `vars_`) -> their team coordinates, or None when a team variable is not among
    `vars_` (an instance outside the reduction of a cross-team statement has no single team)."""
    tv = group.team_vars(stmt)
    if any(v not in vars_ for v in tv):
        return None
    cache = graph.__dict__.setdefault("_team_maps", {})
    key = (stmt, tuple(vars_), tuple(tv), tuple(str(graph.stmts[stmt].ranges[v]) for v in vars_))
    if key not in cache:
        cache[key] = ih.make_map(graph.params, space(stmt), list(vars_), "Team", tv, [],
                                 _bounds(graph, stmt, vars_))
    return cache[key]


def same_team(graph, group, dep) -> bool:
    """Whether every consumer instance of `dep` reads only producer instances of its own team."""
    src, dst = graph.nodes[dep.src], graph.nodes[dep.dst]
    if not group.team:
        return True  # a single team
    ta = team_map(graph, group, src.stmt, src.vars)
    tb = team_map(graph, group, dst.stmt, dst.vars)
    if ta is None or tb is None:
        return False
    return dep.relation.is_subset(ta.apply_range(tb.reverse()))


def check_group(graph, group, only: set[int] | None = None) -> list[str]:
    """Problems that make the group illegal (empty when it is legal); `only`: check just the dependences into
    these statements (the rest of the group is known to be legal under the same teams)."""
    problems = []
    members = set(group.stmts)
    for s in group.stmts:
        missing = [v for v in graph.stmts[s].vars if v not in group.varmap.get(s, {})]
        if missing:
            problems.append(f"statement S{s} has variables without a canonical axis: {', '.join(missing)}")
            continue
        axes = set(group.varmap[s].values())
        if not set(group.team) <= axes:
            problems.append(f"statement S{s} ({graph.stmts[s].target}) does not range over every team axis "
                            f"({', '.join(group.team)})")
        out_axes = {group.varmap[s][v] for v in graph.stmts[s].out_vars}
        if s in group.cross and set(group.team) <= out_axes:
            problems.append(f"statement S{s} is marked cross-team but does not reduce over a team axis")
        if s not in group.cross and not set(group.team) <= out_axes:
            problems.append(f"statement S{s} ({graph.stmts[s].target}) reduces over a team axis but is not a "
                            "cross-team reduction")
    if problems:
        return problems
    deps = graph.deps_within(group) if only is None else \
        [d for s in only for d in graph.deps_into(s) if graph.nodes[d.src].stmt in members]
    for d in deps:
        src, dst = graph.nodes[d.src], graph.nodes[d.dst]
        if src.stmt in group.cross:
            problems.append(f"'{d.tensor}' is read inside its group before its cross-team reduction is combined")
        elif not same_team(graph, group, d):
            problems.append(f"the dependence of S{dst.stmt} on '{d.tensor}' (S{src.stmt}) crosses teams: "
                            f"{d.relation}")
    return problems


def index_is_plain(ref: ir.Ref) -> bool:
    return all(isinstance(i, ir.Var) for i in ref.index)
