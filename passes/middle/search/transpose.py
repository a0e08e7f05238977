"""Recipe `transpose`: a pure permutation that changes the innermost axis goes through a 32x33 shared tile
(passes/schedule/transpose.py): reads coalesced along the input's innermost axis, writes along the output's."""
from __future__ import annotations

from gir.shapes import FuncInfo
from passes.middle.search.candidate import Candidate, Emitted
from passes.middle.search.decision import Decision
from passes.middle.search.options import hint
from passes.middle.search.rows import stmt_infos
from passes.schedule.groups import partition
from passes.schedule.transpose import ROWS, TILE, TransposeKernel


def candidates(g, stmts: list, m, hints: dict[str, int]) -> list[Candidate]:
    if len(stmts) != 1:
        return []
    infos = stmt_infos(g, stmts)
    parts = partition(FuncInfo(g.func, g.types, infos, ()))
    if len(parts) != 1 or parts[0].kind != "transpose":
        return []
    tk = TransposeKernel(parts[0], FuncInfo(g.func, g.types, infos, ()))
    st = infos[0]
    n = 1
    for v in st.out_vars:
        n *= hint(st.ranges[v], hints)
    nbytes = n * (tk.dtype.nbytes + tk.odtype.nbytes)
    blocks = max(1, n // (TILE * TILE))
    util = min(1.0, blocks * TILE * ROWS / (m.sms * 1024))
    seconds = nbytes / m.dram_bw / max(util * 0.85, 1e-3) + m.launch_s
    dec = Decision("transpose", blocks=tuple(st.out_vars), lanes=tk.xin, team="block", threads=TILE * ROWS,
                   tile=((tk.yin, TILE), (tk.xin, TILE)), levels=(("_tile", "shared"),))

    def emit(name: str) -> Emitted:
        return Emitted([tk.emit(name, m.warp)], [], [name])

    return [Candidate(dec, "transpose", seconds, nbytes, 0.0, nbytes, emit, None, {"tile": "32x33 shared"})]
