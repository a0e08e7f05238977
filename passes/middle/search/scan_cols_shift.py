"""Shifted row tiles for the `scan-columns` kernels (passes/middle/search/scan.py): scans down the columns of
rows that start off a 32-byte sector (f32 `cumsum(x[i, j], i)` at N = 2039: row i starts at byte 8156 * i).

A thread owns a column and carries its running value down the scan axis, so its lanes cannot follow the rows'
skews, and every warp access of the plain kernel costs 5 sectors for 4 (1.25x). Under the shift's size guard
(scan_shift.py) the kernel walks the scan axis in tiles of K rows instead:
- load: each row of the tile is read with lanes shifted by the row's skew `_s = (row start) mod A` (slot p of
  the block's T + A - 1 slots takes column T * _gc + p - _s; T is a multiple of A), so every warp access starts
  on a sector; the staged operands (those laid out like the outputs, `x[i, j]`) land in shared memory by column
  (`_xs<i>`, K x T);
- scan: each thread walks its own column of the tile, the staged operands copied from shared memory, the ones
  invariant along the scan axis in registers (KernelText.preload), any other loaded as in the plain kernel; its
  running values go to shared memory by column (`_ys<k>`; the chained kernel's segment buffer `_cseg<k>`);
- store: the tile's rows are written with the same shifted lanes.
A row of a block's T columns then costs one sector more than it moves at most (T = 256 f32: 1.03x; the chained
kernel's narrower blocks more, traded against its status words by `_column_chain_plan`).
"""
from __future__ import annotations

from gir import ir
from gir.passes.builtin.exprs import substitute_vars, var_names
from gir.passes.middle.search import scan_shift

TILE = 16            # rows per tile at most


def staged(kt, shift: dict) -> list:
    """(statement, reference) of each operand staged through shared memory, one per position-normalised text:
    unit stride along the lanes, dependent on the scan axis, its rows starting where the outputs' do."""
    out, seen = [], set()
    c = kt.n - 1
    for sc in kt.scans:
        pos_of = {v: i for i, v in enumerate(sc.s.out_vars)}
        for r in sc.refs:
            if sc.p.axis not in var_names(r) or not r.index or r.index[-1] != ir.Var(sc.var_at(c)):
                continue
            shape = kt.g.types[r.name].shape
            if scan_shift._start(r.index, shape, dict(shift["residues"]), shift["A"], pos_of) != shift["start"]:
                continue
            key = str(substitute_vars(r, {v: ir.Var(f"@{i}") for v, i in pos_of.items()}))
            if key not in seen:
                seen.add(key)
                out.append((sc, r))
    return out


def tile_rows(T: int, extra: int, smem: int, refs: list, types) -> int:
    """Rows per tile: the largest power of two up to TILE whose staged operands (and `extra` bytes per tile
    position and column: the plain kernel's running values) fit `smem` bytes; 0 when one row does not."""
    per = sum(types[r.name].dtype.nbytes for _, r in refs) + extra
    K = TILE
    while K and K * T * per > smem:
        K //= 2
    return K


def allocs(kt, refs: list, K: int) -> list[str]:
    """The staging buffers (alloc lines written here, at block level); their names, in the order of `refs`."""
    names = []
    for i, (_, r) in enumerate(refs):
        names.append(f"_xs{i}")
        kt.line(f"alloc _xs{i}: {kt.g.types[r.name].dtype.value}[{K * kt.T}] @shared")
    return names


def _shifted(kt, env: dict[int, str], a: str, shift: dict, body) -> None:
    """Open the tile row's skew and its slots; body(slot text, env with the slot's column) inside."""
    T, c = kt.T, kt.n - 1
    e = dict(env)
    e[kt.pos] = a
    sk = scan_shift.skew(shift, e, False)
    kt.open(f"for _s in {sk}..{sk} + 1")
    kt.open("for _h in 0..2")
    p = f"{T} * _h + _t - _s"
    kt.open(f"if {p} >= 0 and {p} < {T}")
    e[c] = f"{T} * _gc + {p}"
    body(p, e)
    kt.close(3)


def load(kt, env: dict[int, str], row_at, K: int, refs: list, bufs: list[str], shift: dict) -> None:
    """The tile's staged operands, shared memory <- global memory, rows read with shifted lanes."""
    T = kt.T
    kt.open(f"for _k in 0..{K}")
    a = row_at("_k")

    def body(p: str, e: dict[int, str]) -> None:
        for (sc, r), buf in zip(refs, bufs):
            kt.line(f"load {buf}[{T} * _k + {p}:{T} * _k + {p} + 1] <- {kt.ref_text(sc, r, e, a)} "
                    "with mask, other=0")
    _shifted(kt, env, a, shift, body)
    kt.close()
    kt.line("sync @block")


def scan(kt, env: dict[int, str], row_at, pos_at, K: int, refs: list, bufs: list[str], regs: list[str],
         sink) -> None:
    """Each thread's column of the tile: the statements evaluated at its rows (staged operands from shared
    memory), their running values carried in _acc and written to sink(statement) (a shared slot text)."""
    T = kt.T
    kt.open(f"for _k in 0..{K}")
    a = row_at("_k")
    kt.held = {}
    outer = dict(kt.fixed)
    for (sc, r), buf, reg in zip(refs, bufs, regs):
        kt.line(f"copy {reg}[0:1] <- {buf}[{T} * _k + _t:{T} * _k + _t + 1]")
        kt.fixed[kt.ref_text(sc, r, env, a)] = reg
    for sc in kt.scans:
        kt.value(sc, env, a)
    kt.fixed = outer
    kt.accumulate(pos_at("_k"), sink)
    kt.close()


def store(kt, env: dict[int, str], row_at, K: int, source, shift: dict) -> None:
    """The tile's results, global memory <- shared memory, rows written with shifted lanes; source(statement,
    slot text) gives the value's text (a register filled there)."""
    kt.open(f"for _k in 0..{K}")
    a = row_at("_k")

    def body(p: str, e: dict[int, str]) -> None:
        for sc in kt.scans:
            kt.store(sc, e, a, source(sc, p))
    _shifted(kt, env, a, shift, body)
    kt.close()
