"""Recipe `reference`: the printer's mapping (one thread per team, statements as serial loops) as a candidate.

Always applicable and always correct, so every group has at least one candidate. For a one-statement group it
is the classic one-thread-per-output-element kernel (a thread-serial reduction, coalesced when the innermost
output axis is the contiguous one); for a fused group it is a scalar kernel, which the search reports as a
missed optimisation when it has to choose it.
"""
from __future__ import annotations

from gir import ir
from gir.passes.middle.printer import KernelPrinter, pick_threads, standalone_kernel
from gir.passes.middle.search.candidate import Candidate, Emitted
from gir.passes.middle.search.decision import Decision
from gir.passes.middle.search.options import hint


def candidates(g, unit, m, hints: dict[str, int]) -> list[Candidate]:
    grp = unit.group
    teams = 1
    for a in grp.team:
        teams *= hint(grp.axes[a], hints)
    inner_axis = grp.team[-1] if grp.team else None
    dram = 0.0
    comp = unit.compulsory(g, hints)
    work = 0
    for s in unit.stmts:
        per = 1
        for v in s.vars:
            if grp.varmap[s.id].get(v) not in grp.team:
                per *= hint(s.ranges[v], hints)
        work += per
        tvar = {grp.varmap[s.id].get(v): v for v in s.vars}.get(inner_axis)
        for ref, scope in _loads(s):
            if unit.reads_on_chip(g, ref.name):
                continue
            n = 1
            for v in scope:
                n *= hint(s.ranges[v], hints)
            elem = g.types[ref.name].dtype.nbytes
            last = ref.index[-1] if ref.index else None
            if tvar is None or last is None or (isinstance(last, ir.Var) and last.name == tvar):
                dram += n * elem
            elif tvar in _vars(last) or any(tvar in _vars(i) for i in ref.index):
                dram += n * max(elem, m.sector_bytes // 4)  # strided across the warp: a sector per few lanes
            else:
                dram += n * elem / m.warp  # the same element for the whole warp
        dram += _store_bytes(g, s, hints)
    util = min(1.0, teams / (m.sms * 1024))
    tpb = pick_threads(hint(grp.axes[inner_axis], hints), m.warp) if inner_axis else 1
    seconds = max(dram / m.dram_bw / max(util * 0.5, 1e-3), m.dispatch_s(teams / tpb)) \
        + work * 20 / m.clock_hz / max(util, 1e-3) / (m.sms * 128) + m.launch_s * (1 + len(grp.cross))
    dec = Decision("reference", blocks=tuple(grp.team[:-1]), lanes=inner_axis, team="thread", threads=1,
                   loops=tuple(a for a in grp.axes if a not in grp.team),
                   reduction="serial" if any(s.is_reduction for s in unit.stmts) else "none")

    def emit(name: str) -> Emitted:
        if unit.peeled:
            return Emitted([standalone_kernel(g, unit.stmts[0], name)], [], [name])
        kp = KernelPrinter(g, grp, unit.extra_stores)
        texts = kp.kernels(name)
        names = [name] + [t.split()[1] for t in texts[1:]]
        return Emitted(texts, kp.global_allocs, names)

    strategy = "thread-serial" if len(unit.stmts) == 1 else "reference"
    return [Candidate(dec, strategy, seconds, dram, 0.0, comp, emit, None,
                      {"teams": teams, "dram_bytes": dram, "compulsory": comp})]


def _loads(s):
    from gir.passes.middle.naive import load_scopes
    return load_scopes(s)


def _vars(e) -> set[str]:
    from gir.passes.builtin.exprs import var_names
    return var_names(e)


def _store_bytes(g, s, hints) -> float:
    n = 1
    for v in s.out_vars:
        n *= hint(s.ranges[v], hints)
    return n * g.types[s.target].dtype.nbytes
