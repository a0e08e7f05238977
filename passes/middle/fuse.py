"""`fuse`: merge loop nests under a common parallel mapping when every dependence inside the group stays within
one team.

Statements are visited in program order; each tries to join all the groups it reads from at once (with the
groups between them: their kernels merge), then the latest one alone; a statement that reads no group joins
the current group only as a *sibling* (it shares an input with it and keeps its teams).
A candidate group gets canonical axes (axes.py) and team axes:

- the team axes are the output axes common to every statement that is read inside the group or is
  element-wise (`core`); a reduction whose result nobody in the group reads (a leaf) either keeps them, or
  narrows them to the ones it keeps, or - when it keeps none of them - becomes a *cross-team* reduction: every
  team contributes a partial and a combine step finishes it (layer-norm backward's dgamma/dbeta, a loss);
- reductions over any axes, broadcasts over any axes and permuted reads are covered by this rule; a group is
  whatever the dependences allow, checked exactly with isl (`relations.check_group`: dep ⊆ same-team).

A scan (gir/scan.py) joins no group with other statements (no team holds its whole axis), but joins an earlier
group of *sibling* scans -- the same output extents, the scan axis at the same position, a shared input -- when it
reads nothing produced from that group on: the group is one kernel sharing the loads (search/scan.py).

Every decision is a remark: `passed` for each fused group, `missed` (with the reason, at the statement) for
each dependence that stays between kernels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.scan import scan_of
from gir.walk import reductions_preorder
from gir.passes.base import GraphPass, PassContext
from gir.passes.middle import relations as rel
from gir.passes.middle.axes import AxisConflict, canonical_axes
from gir.passes.middle.graph import FuncGraph, Group


MAX_SIBLING_SCANS = 4   # a scan kernel's shared chunk buffers: 4 f64 siblings take 40 KB of a block's 48 KB


@dataclass(frozen=True)
class Fuse(GraphPass):
    """Fuse statements into kernels whose dependences stay within one team (isl-checked).

    max_stmts bounds the statements of one group (0: no bound); max_depth bounds how many element-wise
    statements one recomputed value chains (kernels evaluate such chains as one expression)."""
    name: ClassVar[str] = "fuse"
    max_stmts: int = 0
    max_depth: int = 48

    def apply(self, ctx: PassContext, graph):
        for fg in graph.graphs():
            fuse_func(fg, ctx, self.max_stmts, self.max_depth)
            fg.fused = True
        return graph


class _NoJoin(Exception):
    def __init__(self, reason: str, loc=None):
        super().__init__(reason)
        self.reason, self.loc = reason, loc


def fuse_func(g: FuncGraph, ctx: PassContext | None = None, max_stmts: int = 0, max_depth: int = 48) -> None:
    groups: list[list[int]] = []
    built: list[Group] = []
    depth: dict[int, int] = {}  # statement -> length of the chain of element-wise statements it recomputes
    for s in g.stmts:
        joined = None
        for lo, hi in _targets(g, groups, s.id):
            members = [m for k in range(lo, hi + 1) for m in groups[k]]
            if max_stmts and len(members) >= max_stmts:
                continue
            scans = [m for m in members + [s.id] if scan_of(g.stmts[m].value) is not None]
            if scans:  # a scan is its own kernel (passes/middle/search/scan.py); no team holds its whole axis
                if ctx is not None and _reads_from(g, members, s.id):
                    ctx.remark("fuse", "missed", f"'{s.target}' is not fused with {_names(g, members)}: a scan "
                               f"('{g.stmts[scans[0]].target}') shares a kernel only with sibling scans; write "
                               "element-wise producers into the scan's operand to fuse them", s.loc)
                continue
            d = 1 + max([depth[p] for p in _producers(g, s.id) if p in members and not g.stmts[p].is_reduction],
                        default=0)
            if max_depth and d > max_depth:
                if ctx is not None:
                    ctx.remark("fuse", "missed", f"'{s.target}' is not fused with {_names(g, members)}: it would "
                               f"recompute a chain of {d} element-wise statements (at most {max_depth}: fuse "
                               "option max_depth); its inputs go through global memory", s.loc)
                continue
            try:
                old = built[hi] if lo == hi else None
                joined = (lo, hi, try_join(g, members, s.id, old.team if old else (), old))
                break
            except _NoJoin as exc:
                if ctx is not None and lo == hi and _reads_from(g, members, s.id):
                    ctx.remark("fuse", "missed", f"'{s.target}' is not fused with {_names(g, members)}: "
                               f"{exc.reason}; the values it reads from them go through global memory",
                               exc.loc or s.loc)
        if joined is not None:
            lo, hi, grp = joined
            depth[s.id] = 1 + max([depth[p] for p in _producers(g, s.id) if p in grp.stmts
                                   and not g.stmts[p].is_reduction], default=0)
            members = [m for k in range(lo, hi + 1) for m in groups[k]] + [s.id]
            groups[lo:hi + 1] = [members]
            built[lo:hi + 1] = [grp]
        elif (k := _sibling_scans(g, groups, s.id, max_stmts)) is not None:
            groups[k] = groups[k] + [s.id]
            built[k] = _scan_group(g, groups[k])
            depth[s.id] = 1
        else:
            if ctx is not None and scan_of(g.stmts[s.id].value) is not None:
                _say_unshared_scan(g, groups, s.id, ctx)
            groups.append([s.id])
            built.append(_singleton(g, s.id))
            depth[s.id] = 1
    for k, grp in enumerate(built):
        grp.id = k
    g.groups = built
    if ctx is not None:
        for grp in built:
            if len(grp.stmts) > 1:
                ctx.remark("fuse", "passed", _describe(g, grp), g.stmts[grp.stmts[0]].loc)
    for grp in built:  # the groups are legal by construction; isl confirms it
        problems = rel.check_group(g, grp)
        if problems:
            raise AssertionError(f"fuse built an illegal group {grp.stmts}: {problems}")


def _sibling_scans(g: FuncGraph, groups: list[list[int]], s: int, max_stmts: int) -> int | None:
    """The latest group of scans that scan `s` may join as a sibling (one kernel, shared operand loads,
    passes/middle/search/scan.py): every member a scan with the same output extents and the scan axis at the
    same position, sharing an input with `s`, and `s` reading no group from it on (it moves up to it)."""
    if scan_of(g.stmts[s].value) is None:
        return None
    producers = _producers(g, s)
    for k in range(len(groups) - 1, -1, -1):
        if producers & set(groups[k]):
            return None
        members = groups[k]
        if (all(_scan_shape(g, m) == _scan_shape(g, s) for m in members) and _shares_input(g, members, s)
                and len(members) < MAX_SIBLING_SCANS and not (max_stmts and len(members) >= max_stmts)):
            return k
    return None


def _say_unshared_scan(g: FuncGraph, groups: list[list[int]], s: int, ctx: PassContext) -> None:
    """A missed remark when scan `s` reads an input of an earlier group of scans over the same extents but along
    another axis: each kernel reads the shared input (a row scan and a column scan of x move x twice)."""
    mine = {n.tensor for n in g.loads(s)}
    shape = _scan_shape(g, s)
    for members in groups:
        others = [m for m in members if (_scan_shape(g, m) or (None,))[0] == shape[0] and _scan_shape(g, m) != shape]
        shared = sorted(mine & {n.tensor for m in others for n in g.loads(m)})
        if others and shared:
            axis = scan_of(g.stmts[s].value).axis
            theirs = scan_of(g.stmts[others[0]].value).axis
            if (ctx.target or "").startswith("mlu"):   # the MLU schedule may hold both (scan_cross.py; it says so)
                return
            ctx.remark("fuse", "missed", f"'{g.stmts[s].target}' is not fused with {_names(g, others)}: they scan "
                       f"along other axes ('{axis}' here, '{theirs}' there) and no kernel holds both a row and a "
                       f"column of their operands: {', '.join(repr(t) for t in shared)} is read by each kernel",
                       g.stmts[s].loc)
            return


def _scan_shape(g: FuncGraph, s: int):
    st = g.stmts[s]
    p = scan_of(st.value)
    if p is None:
        return None
    return tuple(str(st.ranges[v]) for v in st.out_vars), st.out_vars.index(p.axis)


def _scan_group(g: FuncGraph, stmts: list[int]) -> Group:
    """Sibling scans: the first one's variables are the axes (the others' map to them by position), its output
    variables the teams."""
    first = g.stmts[stmts[0]]
    varmap = {m: dict(zip(g.stmts[m].out_vars, first.out_vars)) for m in stmts}
    return Group(-1, list(stmts), {v: first.ranges[v] for v in first.vars}, varmap, tuple(first.out_vars))


def _producers(g: FuncGraph, s: int) -> set[int]:
    return {g.nodes[d.src].stmt for d in g.deps_into(s)}


def _targets(g: FuncGraph, groups: list[list[int]], s: int) -> list[tuple[int, int]]:
    """Ranges of groups `s` may join, best first: every group from the first one it reads to the last one it
    reads (merged into one), then the last one it reads alone; a statement that reads no group may join the
    last group as a sibling."""
    producers = {g.nodes[d.src].stmt for d in g.deps_into(s)}
    reads = [k for k, grp in enumerate(groups) if producers & set(grp)]
    if not reads:
        return [(len(groups) - 1, len(groups) - 1)] if groups else []
    out = [(reads[0], reads[-1])] if reads[0] != reads[-1] else []
    return out + [(reads[-1], reads[-1])]


def _singleton(g: FuncGraph, s: int) -> Group:
    from gir.passes.middle.naive import singleton_group
    return singleton_group(g, s)


def _reads_from(g: FuncGraph, members: list[int], s: int) -> bool:
    return any(g.nodes[d.src].stmt in members for d in g.deps_into(s))


def _names(g: FuncGraph, members: list[int]) -> str:
    names = [f"'{g.stmts[m].target}'" for m in members]
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def try_join(g: FuncGraph, members: list[int], s: int, old_team: tuple[str, ...], old: Group | None = None
             ) -> Group:
    """The group `members + [s]`, or _NoJoin with the reason. With `old` (the legal group of `members`), only
    the new statement's dependences are checked again when the teams stay the same."""
    stmts = sorted(members) + [s]
    dependent = _reads_from(g, members, s)
    if not dependent and not _shares_input(g, members, s):
        raise _NoJoin("it reads nothing the group reads or writes")
    try:
        ax = canonical_axes(g, stmts)
    except AxisConflict as exc:
        raise _NoJoin(str(exc), exc.loc) from None
    team, cross = choose_team(g, stmts, ax.varmap)
    if old_team and not team:
        raise _NoJoin("no team axis would be left (the whole group would run as one team)")
    if not dependent and set(team) != set(old_team):
        raise _NoJoin("it is independent of the group and would change its teams")
    order = [a for a in ax.axes if a in team]
    grp = Group(-1, stmts, ax.axes, ax.varmap, tuple(order), cross)
    for c in cross:
        _check_cross(g, grp, c)
    for d in g.deps:
        if g.nodes[d.src].stmt in cross and g.nodes[d.dst].stmt in stmts:
            raise _NoJoin(f"it reads '{g.stmts[g.nodes[d.src].stmt].target}', a reduction across teams that is "
                          "only complete after the group", g.nodes[d.dst].ref.loc)
    same = old is not None and _same_teams(old, grp)
    problems = rel.check_group(g, grp, {s} if same else None)
    if problems:
        raise _NoJoin(problems[0])
    return grp


def _same_teams(old: Group, new: Group) -> bool:
    """Whether every member of `old` keeps its team variables and cross status in `new`."""
    if old.cross != new.cross - (set(new.stmts) - set(old.stmts)):
        return False
    return all(old.team_vars(m) == new.team_vars(m) for m in old.stmts)


def _shares_input(g: FuncGraph, members: list[int], s: int) -> bool:
    mine = {n.tensor for n in g.loads(s)}
    theirs = {n.tensor for m in members for n in g.loads(m)}
    return bool(mine & theirs)


def choose_team(g: FuncGraph, stmts: list[int], varmap) -> tuple[set[str], set[int]]:
    """Team axes and cross-team statements of a candidate group (see the module docstring)."""
    members = set(stmts)
    consumed = {s: any(c in members for c in g.consumers(s)) for s in stmts}
    out_axes = {s: {varmap[s][v] for v in g.stmts[s].out_vars} for s in stmts}
    core = [s for s in stmts if consumed[s] or not g.stmts[s].is_reduction]
    basis = core or stmts
    team = set.intersection(*(out_axes[s] for s in basis))
    leaves = [s for s in stmts if s not in core]
    changed = True
    while changed:
        changed = False
        for r in leaves:
            if team <= out_axes[r]:
                continue
            inter = team & out_axes[r]
            if inter:
                team, changed = inter, True
    cross = {r for r in leaves if not team <= out_axes[r]}
    for r in cross:
        if not team <= set(varmap[r].values()):
            raise _NoJoin(f"'{g.stmts[r].target}' does not range over the group's team axes")
    return team, cross


def _check_cross(g: FuncGraph, grp: Group, c: int) -> None:
    """A cross-team statement: one reduction, binding every team variable; outside it only its own output
    variables and tensors outside the group are read."""
    s = g.stmts[c]
    reds = reductions_preorder(s.value)
    if len(reds) != 1:
        raise _NoJoin(f"'{s.target}' would reduce across teams with {len(reds)} reductions (one is supported)",
                      s.loc)
    tv = set(grp.team_vars(c))
    if not tv <= set(s.reduce_vars.get(0, ())):
        raise _NoJoin(f"'{s.target}' reduces across teams but not inside its reduction", s.loc)
    inside = {id(x) for x in _refs(reds[0].arg)}
    for x in _refs(s.value):
        if id(x) not in inside and x.name in {g.stmts[m].target for m in grp.stmts}:
            raise _NoJoin(f"'{s.target}' reads '{x.name}' outside its cross-team reduction", x.loc)


def _refs(e) -> list[ir.Ref]:
    from gir.passes.builtin.exprs import refs
    return refs(e)


def _describe(g: FuncGraph, grp: Group) -> str:
    names = _names(g, grp.stmts)
    team = ", ".join(grp.team) if grp.team else "one team"
    inner = [a for a in grp.axes if a not in grp.team]
    text = f"fused {names} into one kernel: teams over ({team})"
    if inner:
        text += f", within a team over ({', '.join(inner)})"
    if grp.cross:
        text += "; " + ", ".join(f"'{g.stmts[c].target}'" for c in sorted(grp.cross)) + \
            " reduced across teams (a partial per team, then a combine)"
    return text
