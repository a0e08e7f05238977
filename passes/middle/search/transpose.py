"""Recipe `transpose`: a pure permutation that changes the innermost axis goes through a 32x33 shared tile
(passes/schedule/transpose.py): reads coalesced along the input's innermost axis, writes along the output's."""
from __future__ import annotations

from gir.shapes import FuncInfo
from gir.passes.middle.search.candidate import Candidate, Emitted
from gir.passes.middle.search.decision import Decision
from gir.passes.middle.search.options import hint
from gir.passes.middle.search.rows import stmt_infos
from gir import ir
from gir.passes.schedule.groups import Group
from gir.passes.schedule.transpose import ROWS, TILE, TransposeKernel


def permuted_source(st) -> ir.Ref | None:
    """The one tensor an element-wise statement reads, when it is read at a permutation of the output indices
    whose innermost index is not the output's innermost one (a transpose, possibly with arithmetic)."""
    from gir.passes.builtin.exprs import refs, value_vars_of
    rs = refs(st.stmt.value)
    if not rs or st.reduce_vars or any(r != rs[0] for r in rs) or value_vars_of(st.stmt.value):
        return None
    src = rs[0]
    names = [i.name if isinstance(i, ir.Var) else None for i in src.index]
    if len(names) < 2 or None in names or sorted(names) != sorted(st.out_vars):
        return None
    return src if names[-1] != st.out_vars[-1] else None


def candidates(g, stmts: list, m, hints: dict[str, int]) -> list[Candidate]:
    if len(stmts) != 1:
        return []
    infos = stmt_infos(g, stmts)
    src = permuted_source(infos[0])
    if src is None:
        return []
    grp = Group([infos[0]], [], [], [{}], kind="transpose")
    tk = TransposeKernel(grp, FuncInfo(g.func, g.types, infos, ()), src)
    st = infos[0]
    n = 1
    for v in st.out_vars:
        n *= hint(st.ranges[v], hints)
    nbytes = n * (tk.dtype.nbytes + tk.odtype.nbytes)
    blocks = max(1, n // (TILE * TILE))
    util = min(1.0, blocks * TILE * ROWS / (m.sms * 1024))
    seconds = max(nbytes / m.dram_bw / max(util * 0.85, 1e-3), m.dispatch_s(blocks)) + m.launch_s
    dec = Decision("transpose", blocks=tuple(st.out_vars), lanes=tk.xin, team="block", threads=TILE * ROWS,
                   tile=((tk.yin, TILE), (tk.xin, TILE)), levels=(("_tile", "shared"),))

    def emit(name: str) -> Emitted:
        return Emitted([tk.emit(name, m.warp)], [], [name])

    return [Candidate(dec, "transpose", seconds, nbytes, 0.0, nbytes, emit, None, {"tile": "32x33 shared"})]
