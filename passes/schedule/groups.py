"""Partition an operator-layer function into fusable statement groups.

A *row group* has row dims R and column dims C: every statement is a row statement (indexed by R,
possibly reducing over C) or a full statement (indexed by R + C, no reduction). Inside a group the
index variables of each statement are renamed to canonical names `_r0.., _c0..`, and full-rank
intermediates are inlined into their consumers so they never leave the chip.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir import ir
from gir.shapes import FuncInfo, StmtInfo, reductions_preorder, _walk


@dataclass
class Group:
    stmts: list[StmtInfo]
    R: list[ir.Dim]
    C: list[ir.Dim]
    # statement index in group → {original var: canonical name}
    renames: list[dict[str, str]] = field(default_factory=list)
    kind: str = "rows"  # rows | colreduce | transpose

    @property
    def targets(self) -> list[str]:
        return [s.stmt.target.name for s in self.stmts]

    def is_full(self, k: int) -> bool:
        return len(self.stmts[k].out_vars) == len(self.R) + len(self.C)

    def has_reduction(self) -> bool:
        return any(self.stmts[k].reduce_vars for k in range(len(self.stmts)))


def rvar(k: int) -> str:
    return f"_r{k}"


def cvar(k: int) -> str:
    return f"_c{k}"


def _ordered_reduce_vars(st: StmtInfo, n: int) -> tuple[str, ...]:
    """Variables bound by reduce node n, ordered by first appearance as a tensor index."""
    bound = st.reduce_vars.get(n, ())
    red = reductions_preorder(st.stmt.value)[n]
    order: list[str] = []
    for x in _walk(red.arg):
        if isinstance(x, ir.Ref):
            for idx in x.index:
                for y in _walk(idx):
                    if isinstance(y, ir.Var) and y.name in bound and y.name not in order:
                        order.append(y.name)
    order += [v for v in bound if v not in order]
    return tuple(order)


def _fit(st: StmtInfo, R, C) -> dict[str, str] | None:
    """Canonical renaming of st's variables for a group (R, C), or None if it does not fit."""
    ext = [st.ranges[v] for v in st.out_vars]
    nred = len(reductions_preorder(st.stmt.value))
    if nred:
        if ext != list(R):
            return None
        ren = {v: rvar(k) for k, v in enumerate(st.out_vars)}
        for n in range(nred):
            vs = _ordered_reduce_vars(st, n)
            if [st.ranges[v] for v in vs] != list(C):
                return None
            for k, v in enumerate(vs):
                if ren.get(v, cvar(k)) != cvar(k):
                    return None
                ren[v] = cvar(k)
        return ren
    if ext == list(R):
        return {v: rvar(k) for k, v in enumerate(st.out_vars)}
    if ext == list(R) + list(C):
        ren = {v: rvar(k) for k, v in enumerate(st.out_vars[:len(R)])}
        ren.update({v: cvar(k) for k, v in enumerate(st.out_vars[len(R):])})
        return ren
    return None


def _refs_ok(st: StmtInfo, ren: dict[str, str], group: Group, full_names: set[str], row_names: set[str]) -> bool:
    """In-group intermediates must be read with exactly the canonical variables."""
    for x in _walk(st.stmt.value):
        if isinstance(x, ir.Ref) and (x.name in full_names or x.name in row_names):
            want = [cvar(k) for k in range(len(group.C))] if x.name in full_names else []
            want = [rvar(k) for k in range(len(group.R))] + want
            got = [ren.get(i.name) if isinstance(i, ir.Var) else None for i in x.index]
            if got != want:
                return False
    return True


def _start(st: StmtInfo) -> Group | None:
    nred = len(reductions_preorder(st.stmt.value))
    if nred:
        R = [st.ranges[v] for v in st.out_vars]
        C = [st.ranges[v] for v in _ordered_reduce_vars(st, 0)]
    elif st.out_vars:
        R = [st.ranges[v] for v in st.out_vars[:-1]]
        C = [st.ranges[st.out_vars[-1]]]
    else:
        return None
    g = Group([], R, C)
    ren = _fit(st, R, C)
    if ren is None:
        return None
    g.stmts.append(st)
    g.renames.append(ren)
    return g


def partition(info: FuncInfo) -> list[Group]:
    """Greedy in-order grouping; a statement that fits nothing becomes a one-statement 'generic' group."""
    groups: list[Group] = []
    cur: Group | None = None
    for st in info.stmts:
        if cur is not None:
            ren = _fit(st, cur.R, cur.C)
            full = {cur.stmts[k].stmt.target.name for k in range(len(cur.stmts)) if cur.is_full(k)}
            rows = {cur.stmts[k].stmt.target.name for k in range(len(cur.stmts)) if not cur.is_full(k)}
            if ren is not None and _refs_ok(st, ren, cur, full, rows):
                # a full statement with only-R output but a group without C reductions is fine
                cur.stmts.append(st)
                cur.renames.append(ren)
                continue
        cur = _start(st)
        if cur is None:
            groups.append(Group([st], [], [], [{}], kind="generic"))
            continue
        groups.append(cur)
    for g in groups:
        _classify(g)
    return groups


def _classify(g: Group) -> None:
    if g.kind == "generic":
        return
    st = g.stmts[0]
    if len(g.stmts) == 1 and not st.reduce_vars and isinstance(st.stmt.value, ir.Ref):
        src = st.stmt.value
        if all(isinstance(i, ir.Var) for i in src.index) and len(src.index) >= 2 and st.out_vars:
            if src.index[-1].name != st.out_vars[-1] and src.index[-1].name in st.out_vars:
                g.kind = "transpose"
                return
    if len(g.stmts) == 1 and st.reduce_vars and g.R:
        # reduction over a non-contiguous dim (column sum): thread-serial is coalesced
        inner = _ordered_reduce_vars(st, 0)[-1]
        for x in _walk(st.stmt.value):
            if isinstance(x, ir.Ref) and x.index and any(
                    isinstance(y, ir.Var) and y.name == inner for i in x.index for y in _walk(i)):
                if not _unit_stride(x.index[-1], inner):
                    g.kind = "colreduce"
                return


def _unit_stride(e: ir.Expr, var: str) -> bool:
    """Whether index `e` is `var + c` (a constant offset), possibly clamped by min/max with a bound free of
    `var` (the clamps of guarded accesses): consecutive `var` are consecutive elements, a row access."""
    from gir.affine import free_vars, to_affine
    while (isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2
           and var not in free_vars(e.args[1])):
        e = e.args[0]
    a = to_affine(e)
    return a is not None and a.coeffs == {var: 1}
