"""Multi-block rows: a few very long rows (M = 1..64, N >= 64K) are split across `split` blocks each.

Kernel 1 (the row kernel with `RowConfig.split = S`): block (row, s) reduces the chunks s, s + S, ...
of its row (coalesced grid-stride over the row) and writes one partial per slot to a global
temporary `<kernel>_part<slot>: acc[rows, S] @global`. Kernel 2: one warp per row combines the S
partials, evaluates the row statistics and stores the row results. Only single-phase reduction groups
without full-rank results qualify (row_sum, row_mean, row_max, mse_loss); with several column dims
(mse_loss: C = (M, N)) the outer ones stay loops and the innermost one is split.
"""
from __future__ import annotations

from gir.printer import format_expr
from gir.passes.schedule.emit import C, Lines, V, alloc, combine, dim_expr, identity
from gir.passes.schedule.groups import rvar


def splittable(rk) -> bool:
    return rk.nphases == 1 and not rk.full_stores and len(rk.g.R) <= 1 and bool(rk.slots)


def part_names(kname: str, rk) -> list[str]:
    return [f"{kname}_part{s}" for s in range(len(rk.slots))]


def part_allocs(rk, kname: str, split: int) -> list[str]:
    """Function-level temporaries of the partials: [rows, split] per slot."""
    rows = format_expr(dim_expr(rk.g.R[0])) if rk.g.R else "1"
    out = []
    for name, (_, _, dt) in zip(part_names(kname, rk), rk.slots):
        out.append(f"alloc {name}: {dt.value}[{rows}, {split}] @global")
    return out


def store_partials(rk, L: Lines, NW: int, kname: str) -> None:
    """End of kernel 1: one thread of the block writes the block's partial of every slot."""
    row = rk.rowenv.get(rvar(0), C(0)) if rk.g.R else V("_b0")
    lead = "_l == 0" if NW == 1 else "_w == 0 and _l == 0"
    L.open(f"if {lead}")
    for s, name in enumerate(part_names(kname, rk)):
        L(f"store {name}[{format_expr(row)}, _bs:_bs + 1] <- {rk.px}a{s}[0:1]")
    L.close()


def emit_final(rk, cfg, kname: str, part_kernel: str) -> str:
    """Kernel 2: one warp per row combines the partials and stores the row results."""
    L = Lines()
    S, W = cfg.split, rk.warp
    rows = format_expr(dim_expr(rk.g.R[0])) if rk.g.R else "1"
    L.open(f"kernel {kname}")
    L.open(f"parallel _b0 in 0..{rows} @block")
    L.open("parallel _w in 0..1 @warp")
    L.open(f"parallel _l in 0..{W} @lane")
    px = "_f"
    for i, r in enumerate(rk.rowrefs):
        L(alloc(f"{px}v{i}", rk.types[r.name].dtype, [1], "reg"))
    for s, (_, _, dt) in enumerate(rk.slots):
        L(alloc(f"{px}a{s}", dt, [1], "reg"))
        L(alloc(f"{px}t{s}", dt, [1], "reg"))
    for name, _ in rk.rowdefs:
        L(alloc(f"{px}s_{name}", rk._rowdt(name), [1], "reg"))
    for name in rk.row_stores:
        L(alloc(f"{px}w_{name}", rk.types[name].dtype, [1], "reg"))
    rk.px, rk.cfg, rk.tid = px, cfg, V("_l")
    rk.rowenv = {rvar(0): V("_b0")} if rk.g.R else {}
    rk._slot_done = {}
    from gir.passes.schedule.emit import subst
    for i, r in enumerate(rk.rowrefs):
        L(f"load {px}v{i}[0:1] <- {format_expr(subst(r, rk.rowenv))}")
    names = part_names(part_kernel, rk)
    for s, (op, _, dt) in enumerate(rk.slots):
        L(f"{px}a{s}[0:1] = {identity(op, dt)}")
    L.open(f"for _k in 0..{-(-S // W)}")
    cond = S % W != 0
    if cond:
        L.open(f"if {W} * _k + _l < {S}")
    for s, (op, _, dt) in enumerate(rk.slots):
        L(f"load {px}t{s}[0:1] <- {names[s]}[_b0, {W} * _k + _l:{W} * _k + _l + 1]")
        L(f"{px}a{s}[0:1] = {combine(op, f'{px}a{s}[0:1]', f'{px}t{s}[0:1]')}")
    if cond:
        L.close()
    L.close()
    for s, (op, _, _) in enumerate(rk.slots):
        L(f"allreduce {'sum' if op == 'mean' else op} {px}a{s}[0:1] over _l")
        rk._slot_done[s] = True
    rk._rowstats(L, set())
    rk._store_rows(L, "_l == 0")
    while L.depth:
        L.close()
    return L.text()
