"""Explicit-GIR text of the scan kernels chained across blocks (passes/middle/search/scan.py `scan-chained`,
`scan-columns-chained`): a segment of the scan axis per block, the segments combined by the explicit layer's
`chain` (docs/explicit-layer.md), whose status words a kernel of their own zeroes first. The row kernels' chunk
scan is scan_text.py's (`row_pass` with `chunks`)."""
from __future__ import annotations

from gir.passes.middle.search.scan_text import REGS, VEC, KernelText, ScanStmt

CHAIN_OP = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}


def status_name(kernel: str, sc: ScanStmt) -> str:
    """The @global status words of statement sc's chains in the chained kernel `kernel` (unique per kernel)."""
    return f"_{kernel}_cs{sc.k}"


def status_words(sc: ScanStmt) -> int:
    """Words of a chain's status: one (flag and a 32-bit value), or three for a 64-bit running value (flag,
    aggregate, prefix; docs/explicit-layer.md)."""
    return 3 if sc.acc.nbytes == 8 else 1


def status_ref(name: str, sc: ScanStmt, at: str) -> str:
    """The status of statement sc's chain at the index text `at`."""
    return f"{status_name(name, sc)}[{at}{', 0:3' if status_words(sc) == 3 else ''}]"


class ChainedText(KernelText):
    """Text of one chained scan kernel (and of the kernel zeroing its status words) over `scans`."""

    def columns_chained(self, name: str, seg: int) -> str:
        """scan-columns cut along the scan axis into segments of `seg` positions (cdiv(S, seg) of them), one block
        per segment and lane block: each thread scans its column's segment into `_cseg` (shared, one column per
        thread), chains its total with the same column of the earlier segments (a chain per thread, status word
        [.., segment, column]) and stores prefix (+) value. One direction (the caller groups them so); at most
        one position besides the lanes and the scan axis."""
        T, c = self.T, self.n - 1
        positions = [i for i in range(self.n) if i not in (self.pos, c)]
        reverse = self.scans[0].p.reverse
        self.open(f"kernel {name}")
        self.open(f"parallel _gc in 0..cdiv({self.extent(c)}, {T}) @block")
        env = self.grid(positions)
        self.open(f"parallel _gs in 0..cdiv({self.S}, {seg}) @block")
        for sc in self.scans:
            self.line(f"alloc _cseg{sc.k}: {sc.acc.value}[{seg * T}] @shared")
        self.open(f"parallel _t in 0..{T} @thread")
        self.line(REGS)
        self.scratch((("_acc", 1), ("_pre", 1)))
        env[c] = f"{T} * _gc + _t"
        for sc in self.scans:
            self.line(f"_acc{sc.k}[0:1] = {sc.ident}")
        self.preload(self.scans, env)
        q = f"{seg} * _gs + _q"
        a = f"{self.S} - 1 - ({q})" if reverse else q
        at = f"{T} * _q + _t"
        self.open(f"for _q in 0..{seg}")
        self.held = {}
        for sc in self.scans:
            self.value(sc, env, a)
        self.accumulate(q, lambda sc: f"_cseg{sc.k}[{at}:{at} + 1]")
        self.close()
        word = ", ".join([f"_g{k}" for k in range(len(positions))] + ["_gs", env[c]])
        self.open(f"if {env[c]} < {self.extent(c)}")   # the same threads skip it in every block of their chain
        for sc in self.scans:
            self.line(f"chain {CHAIN_OP[sc.p.op]} _pre{sc.k}[0:1] <- _acc{sc.k}[0:1] over _gs via "
                      f"{status_ref(name, sc, word)}")
        self.close()
        self.open(f"for _q in 0..{seg}")
        for sc in self.scans:
            k = sc.k
            self.line(f"copy _v{k}[0:1] <- _cseg{k}[{at}:{at} + 1]")
            self.line(f"_v{k}[0:1] = {sc.combine(f'_pre{k}[0:1]', f'_v{k}[0:1]')}")
            self.store(sc, env, a, f"_v{k}[0:1]")
        self.close(1 + 1 + 1 + len(positions) + 1 + 1)
        return self.finish()

    def chained(self, name: str, chunks: int) -> str:
        """Rows cut into segments of `chunks` chunks (cdiv(S, chunks x T x VEC) of them), one block each (the
        segment axis `_gs` innermost on the grid): a block scans its segment into `_seg`, gets the combination of
        the segments before it through `chain` (one status word per block in status_name(), zeroed by
        init_text()) and stores prefix (+) value. Every statement walks in one direction (the caller checks); at
        most MAX_GRID - 1 other positions."""
        T, V = self.T, VEC
        positions = [i for i in range(self.n) if i != self.pos]
        reverse = self.scans[0].p.reverse
        self.open(f"kernel {name}")
        env = self.grid(positions)
        L = chunks * T * V
        self.open(f"parallel _gs in 0..cdiv({self.S}, {L}) @block")
        for sc in self.scans:
            self.line(f"alloc _sh{sc.k}: {sc.acc.value}[{T * V}] @shared")
            self.line(f"alloc _tot{sc.k}: {sc.acc.value}[{T}] @shared")
            self.line(f"alloc _seg{sc.k}: {sc.acc.value}[{L}] @shared")
        self.open(f"parallel _t in 0..{T} @thread")
        self.line(REGS)
        self.scratch((("_loc", V), ("_a", 1), ("_b", 1), ("_carry", 1), ("_pre", 1)))
        self.row_pass(self.scans, env, reverse, {}, chunks=chunks)
        at = ", ".join([f"_g{k}" for k in range(len(positions))] + ["_gs"])
        for sc in self.scans:
            self.line(f"chain {CHAIN_OP[sc.p.op]} _pre{sc.k}[0:1] <- _carry{sc.k}[0:1] over _gs via "
                      f"{status_ref(name, sc, at)}")
        self.line("sync @block")
        self.open(f"for _c in 0..{chunks}")
        self.open(f"for _e in 0..{V}")
        q = f"{L} * _gs + {T * V} * _c + {T} * _e + _t"
        a = f"{self.S} - 1 - ({q})" if reverse else q
        for sc in self.scans:
            k, at = sc.k, f"{T * V} * _c + {T} * _e + _t"
            self.line(f"copy _v{k}[0:1] <- _seg{k}[{at}:{at} + 1]")
            self.line(f"_v{k}[0:1] = {sc.combine(f'_pre{k}[0:1]', f'_v{k}[0:1]')}")
            self.store(sc, env, a, f"_v{k}[0:1]")
        self.close(2 + 1 + 1 + len(positions) + 1)
        return self.finish()

    def status_allocs(self, name: str, columns: bool = False) -> list[str]:
        """The status words of every statement's chains: one per block (rows: [other positions..., S]; a
        block's predecessors are the words just before it), or one per column and segment (columns: [other
        position, S, columns]). Allocation sizes are size names or numbers, not expressions, so the segment
        dimension has S entries, of which the cdiv(S, L) segments use the first."""
        c = self.n - 1
        dims = [str(self.extent(i)) for i in range(self.n) if i != self.pos and not (columns and i == c)]
        dims += [self.S] + ([str(self.extent(c))] if columns else [])
        return [f"alloc {status_name(name, sc)}: i64[{', '.join(dims + (['3'] if status_words(sc) == 3 else []))}] "
                "@global" for sc in self.scans]

    def init_text(self, name: str, kernel: str, seg: int, columns: bool = False) -> str:
        """The kernel zeroing the status words of the first cdiv(S, seg) segments before the scan kernel runs."""
        T, c = 256, self.n - 1
        positions = [i for i in range(self.n) if i != self.pos and not (columns and i == c)]
        self.lines, self.depth = [], 0
        self.open(f"kernel {kernel}")
        for k, i in enumerate(positions):
            self.open(f"parallel _g{k} in 0..{self.extent(i)} @block")
        if columns:   # the segments innermost (blockIdx.x: up to 2^31 - 1; y and z stop at 65,535)
            self.open(f"parallel _gc in 0..cdiv({self.extent(c)}, {T}) @block")
            self.open(f"parallel _gz in 0..cdiv({self.S}, {seg}) @block")
            last = ["_gz", f"{T} * _gc + _t:{T} * _gc + _t + 1"]
        else:
            self.open(f"parallel _gz in 0..cdiv(cdiv({self.S}, {seg}), {T}) @block")
            last = [f"{T} * _gz + _t:{T} * _gz + _t + 1"]
        self.open(f"parallel _t in 0..{T} @thread")
        self.line("alloc _z: i64[1] @reg")
        self.line("_z[0:1] = 0")
        at = ", ".join([f"_g{k}" for k in range(len(positions))] + last)
        for sc in self.scans:   # the flags (a 64-bit value's other words are written before they are read)
            self.line(f"store {status_name(name, sc)}[{at}{', 0' if status_words(sc) == 3 else ''}] <- _z[0:1] "
                      "with mask")
        self.close(3 + columns + len(positions))
        return "\n".join(self.lines)
