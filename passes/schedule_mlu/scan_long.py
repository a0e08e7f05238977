"""Long scans over few rows on the MLU (a 1-D scan, or a scan along the last axis of a tensor with fewer lane
blocks than cores): the rows are cut into ranges spread over the cores, and each chunk of a range is scanned as
64 or 128 sub-segments side by side (below: 64).

The unit kernel of scan.py gives each core whole rows and scans a row with one vector op per position across the
rows of a lane block: a 1-D scan of 4M elements is 4M serial ops on one core (1,000x the DMA roofline). Here:

- every row (a point of the axes other than the scan axis s) is cut into P ranges of RS positions (P = cores /
  rows), one work unit per (row, range), at most one per task;
- phase 1 (P > 1) walks the task's range in chunks of C = 64 x Lc elements, transposes each chunk's E to the
  scan orientation [Lc, 64] (the loads leave the compute pipe idle here) and combines it element-wise into an
  [Lc, 64] tile, then folds the tile into the range's total (halving steps: sum, product, max or min alike) and
  stores it in a GDRAM array `<name>_tot[rows..., P]`; the transposed E tiles of its first `keep` chunks in scan
  order stay in NRAM (`keep_`) -- the raw 16-bit tiles when E is one 16-bit tensor read as it is (transposed in
  16 bits, widened after: half the bytes and units). Its compute pipe waits for the loads, so it also computes
  each chunk's sub-segment carries, range-locally, in scan order (`chunk_carries`: the totals folded from the
  transposed E, then the scalar loop below), a row of `koff_` per chunk; phase 1 then stores the range's carry as
  its total (without `koff_`, when the table would exceed EARLY_BYTES, the totals are folded from an `at_` tile
  and phase 2 runs the loop; so for cumprod: a range-local product may leave the f32 range where the running
  product, started from the range's carry, does not: positions 4,096 to 6,912 multiply to 2.3e39 after a carry
  of 3.1e-18);
- `sync @all`: every task's total is stored before any task reads them;
- phase 2 starts from the combination of the totals of the ranges before its own (after it, for a reverse
  scan) and walks its chunks: a chunk x[s0 : s0 + C] is loaded as a [64, Lc] tile (row a = positions
  s0 + a Lc ...: one contiguous move reshaped on chip) and E computed and transposed to [Lc, 64] -- or the kept
  tile taken --, and each of the 64 sub-segments is scanned locally (scan_steps.py, one vector op per
  position across the 64 lanes, the carries starting from the identity). The sub-segment totals (the carries
  left over) give each sub-segment its offset, the chunk carry combined with the totals of the sub-segments
  before it (a scalar loop over 64 lanes; with `koff_`, the range's carry combined with the chunk's row of it:
  one vector op); the offsets are combined into every row of the tile
  (`__bang_cycle_*`), which is transposed back (a 16-bit result rounded first) and stored. The last chunk of the
  last range may be partial: it is loaded and stored as its full rows plus one partial row, and the rest of the
  tile holds the identity.

Operands of the chunks not kept are read twice and every result is written once (up to 1.5x the compulsory
bytes; remarked with the count). Operands must be indexed by the statement's variables in order and depend on
the scan axis (others keep the unit kernel).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.machines import MLU370
from gir.passes.remarks import Remark
from gir.scan import identity
from gir.walk import walk
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.cost import estimate
from gir.passes.schedule_mlu.colreduce import decode_units, unit_trips
from gir.passes.schedule_mlu.scan import FLOATS, FULL, _Kernel, _Plan
from gir.passes.schedule_mlu.scan_size import NRAM_BUDGET
from gir.passes.schedule_mlu.scan_sram import SramKeep
from gir.passes.schedule_mlu.scan_steps import OPS, comb, doubling_pays, doubling_steps, serial_steps

A = 64                      # sub-segments of a chunk (the lanes of the transposed tile): the fewest
SUBSEGS = (64, 128)         # the choices (128: half the scan's row ops per element, twice the carries to combine)
CHUNK = 32768               # elements of a chunk at most
EARLY_BYTES = 64 * 1024     # NRAM for the chunks' carries phase 1 computes (`koff_`), at most
LC = (512, 256, 128, 64)    # positions per sub-segment, largest first (chunks of at most 32768 elements)
PIPELINED = 4               # chunks per range at least (the pipeline overlaps their loads, computes, stores)
SRAM_BUDGET = MLU370.sram_bytes   # SRAM of a cluster the chunks kept between the phases may take


def applies(plan: _Plan, refs: list[ir.Ref]) -> bool:
    """A row-layout scan whose unit kernel leaves cores idle (plan.units < cores: fewer lane blocks than cores),
    at least one full chunk long, whose operands are all read along the scan axis with the statement's
    variables in order."""
    if plan.layout != "rows" or plan.units >= plan.tasks or plan.S < A * LC[-1]:
        return False
    for r in refs:
        names = [i.name if isinstance(i, ir.Var) else None for i in r.index]
        if not names or names[-1] != plan.axis or None in names or any(n not in plan.vars for n in names):
            return False
        order = [plan.vars.index(n) for n in names]
        if order != sorted(set(order)):
            return False
    return True


class _Long(SramKeep, _Kernel):
    """The kernel of one long scan (module docstring). It reuses _Kernel's three-address computes of E (`expr`,
    over its `refs`, `allocs` and tile shapes) but not its unit-kernel geometry: __init__ sets those fields itself."""

    def __init__(self, plan: _Plan, types: dict, name: str, lc: int, a: int = A):
        self.p, self.types, self.name, self.lc, self.a = plan, types, name, lc, a
        self.allocs: dict[str, ir.Alloc] = {}
        self.count = 0
        self.loaded: set[str] = set()
        self.stored: set[str] = set()
        self.refs = {}
        for x in walk(plan.scan.arg):
            if isinstance(x, ir.Ref):
                self.refs[x.name] = (FULL, [i.name for i in x.index])
        self.rvars = [v for v in plan.vars if v != plan.axis]
        self.rows = 1
        for v in self.rvars:
            self.rows *= plan.shape[v]
        S, C = plan.S, self.a * lc
        ranges = max(1, plan.tasks // self.rows)
        self.RS = -(-(-(-S // ranges)) // C) * C
        self.P = -(-S // self.RS)
        self.last = S - (self.P - 1) * self.RS
        self.C = C
        self.op = OPS[plan.scan.op]
        self.ident = B.c(identity(plan.scan.op, plan.cdt in FLOATS, None if plan.cdt in FLOATS else "int32"))
        self.keep = 0           # full chunks of a range phase 1 leaves in NRAM (`keep_`) for phase 2
        self.sram_setup()       # and the full chunks after those that it leaves in SRAM (scan_sram.py)
        self.chunks = -(-self.RS // C)   # chunks of a range at most
        # phase 1 also computes every chunk's sub-segment carries (range-local; `koff_`): its compute pipe waits
        # for the loads there, phase 2's does not (not products: module docstring)
        self.early = self.P > 1 and self.chunks * self.a * 4 <= EARLY_BYTES and plan.scan.op != "cumprod"

    # ------------------------------------------------------------ tiles
    def shape_of(self, kind: str) -> tuple:
        return (self.a, self.lc)

    def region(self, name: str, kind: str, nr: int, nc: int) -> ir.Ref:
        return B.ref(name, B.sl(0, self.a), B.sl(0, self.lc))

    def full(self, name: str) -> ir.Ref:
        return B.ref(name, B.sl(0, self.a), B.sl(0, self.lc))

    def gdram(self, name: str, names: list, s0, n: int) -> ir.Ref:
        return ir.Ref(name, tuple(B.sl(s0, n) if v == self.p.axis else B.v(f"u_{v}") for v in names))

    def moves(self, kind: str, tile: str, name: str, names: list, s0, n: int) -> list:
        """Positions s0 .. s0 + n of a row to / from the first n elements of a [64, Lc] tile: full rows, then a
        partial one. The loads of a chunk SRAM keeps (`self.sram`): phase 1 copies the landed tile to SRAM after
        its load (an on-chip copy of the load stage), phase 2 loads it from there instead of GDRAM."""
        if self.sram is not None and kind == "load":
            assert n == self.C, "SRAM keeps full chunks"
            ks = self.kept_sram(name, self.types[name].dtype, self.a, self.lc, self.a, self.lc)
            return self.through_sram(self.full(tile), ks, self.moves_gdram(kind, tile, name, names, s0, n))
        return self.moves_gdram(kind, tile, name, names, s0, n)

    def moves_gdram(self, kind: str, tile: str, name: str, names: list, s0, n: int) -> list:
        q, r = divmod(n, self.lc)
        out = []
        if q:
            t, g = B.ref(tile, B.sl(0, q), B.sl(0, self.lc)), self.gdram(name, names, s0, q * self.lc)
            out.append(B.move(kind, t, g) if kind == "load" else B.move(kind, g, t))
        if r:
            t, g = B.ref(tile, B.c(q), B.sl(0, r)), self.gdram(name, names, B.add(s0, q * self.lc), r)
            out.append(B.move(kind, t, g) if kind == "load" else B.move(kind, g, t))
        return out

    def operand(self, s0, n: int) -> tuple[list, list, ir.Ref]:
        """(loads, computes, the [64, Lc] tile holding E) of the chunk at s0 with n valid positions; past them (a
        partial chunk) E is the identity, which a scan in either direction and a total may combine. The callers
        only read E's tile: it is copied only where the identity is filled in."""
        p = self.p
        loads, computes = [], []
        for name, (_, names) in self.refs.items():
            dt = self.types[name].dtype
            t = self.alloc(f"{name}_t", p.cdt, (self.a, self.lc))
            land = t if dt == p.cdt else self.alloc(f"{name}_h", dt, (self.a, self.lc))
            loads += self.moves("load", land, name, names, s0, n)
            self.loaded.add(land)
            if land != t:
                computes.append(ir.Assign(self.full(t), ir.Call("f32", (self.full(land),))))
        ev = self.expr(p.scan.arg, computes, self.a, self.lc)
        q, r = divmod(n, self.lc)
        rest = q + (1 if r else 0)
        if not isinstance(ev, ir.Ref) or r or rest < self.a:
            t = self.alloc("ev_", p.cdt, (self.a, self.lc))
            computes.append(ir.Assign(self.full(t), ev))
            ev = self.full(t)
        if r:   # the partial row's tail element by element (a vector op on a row starts at its column 0)
            computes.append(ir.For("c_", B.c(r), B.c(self.lc), (ir.Assign(
                B.ref(ev.name, B.c(q), B.sl(B.v("c_"), 1)), self.ident),)))
        if 0 < rest < self.a:   # (rest >= 1: a run of rows from row 0 would be a whole-tile op)
            computes.append(ir.Assign(B.ref(ev.name, B.sl(rest, self.a - rest), B.sl(0, self.lc)), self.ident))
        return loads, computes, ev

    def tposed(self, name: str, dt: ir.DType | None = None) -> ir.Ref:
        """The whole [Lc, 64] tile `name` (the scan orientation)."""
        return B.ref(self.alloc(name, dt or self.p.cdt, (self.lc, self.a)), B.sl(0, self.lc), B.sl(0, self.a))

    def widened(self, s0, n: int) -> tuple[list, ir.Ref, ir.Ref | None]:
        """(steps, `et_`: E of the chunk at s0 as an [Lc, 64] f32 tile, the raw operand's transposed 16-bit tile
        or None). self.a raw operand (full chunks) is transposed in 16 bits, then widened; anything else is computed as
        [64, Lc] and transposed."""
        et, raw = self.tposed("et_"), self.raw()
        if raw and n == self.C:
            dt = self.types[raw].dtype
            land = self.alloc(f"{raw}_h", dt, (self.a, self.lc))
            self.loaded.add(land)
            th = self.tposed("th_", dt)
            return (self.moves("load", land, raw, self.refs[raw][1], s0, n)
                    + [ir.Assign(th, ir.Call("transpose", (self.full(land),))), ir.Assign(et, ir.Call("f32", (th,)))],
                    et, th)
        loads, computes, ev = self.operand(s0, n)
        return loads + computes + [ir.Assign(et, ir.Call("transpose", (ev,)))], et, None

    # ------------------------------------------------------------ kernel 1: range totals
    def total_chunk(self, s0, n: int, keep: ir.Ref | None = None) -> list:
        """Phase 1 of one chunk: E, transposed to the scan orientation here (the loads leave the compute pipe idle
        in this phase), combined into `at_`; the chunk copied into the `keep` slot (the raw 16-bit tile, else E)."""
        steps, et, th = self.widened(s0, n)
        if not self.early:
            at = self.tposed("at_")
            steps.append(ir.Assign(at, comb(self.op, at, et)))
        if keep is not None:
            steps.append(ir.Assign(keep, th if th is not None else et))
        return steps

    def fold(self) -> list:
        """The [Lc, 64] tile `at_` to its element [0, 0]: halving the rows (vector ops), then the first row's
        elements one by one (scalar code)."""
        steps, h = [], self.lc // 2
        while h >= 1:
            steps.append(ir.Assign(B.ref("at_", B.sl(0, h), B.sl(0, self.a)),
                                   comb(self.op, B.ref("at_", B.sl(0, h), B.sl(0, self.a)),
                                        B.ref("at_", B.sl(h, h), B.sl(0, self.a)))))
            h //= 2
        first = B.ref("at_", B.c(0), B.sl(0, 1))
        steps.append(ir.For("c_", B.c(1), B.c(self.a), (ir.Assign(first, comb(
            self.op, first, B.ref("at_", B.c(0), B.sl(B.v("c_"), 1)))),)))
        return steps

    def totals_range(self, n: int) -> list:
        """Phase 1 of a range of n positions: its total into `<name>_tot`; its first K chunks in scan order stay in
        `keep_` for phase 2. With `early` carries, the chunks are walked in scan order and each chunk's
        sub-segment carries (range-local) go to row j of `koff_` (`chunk_carries`): phase 2 only adds the range's
        carry to them."""
        start = B.mul(B.v("p_"), self.RS)
        full, tail = divmod(n, self.C)
        kept = min(self.keep, full)
        i = B.v("k_")
        rev = self.p.scan.reverse
        base = 1 if tail and rev else 0          # scan-order index of the first full chunk
        rc = B.ref(self.alloc("rc_", self.p.cdt, (2,)), B.sl(0, 1))
        body = [ir.Assign(rc, self.ident)] if self.early else [ir.Assign(self.tposed("at_"), self.ident)]

        def chunk(s0, n_, j, keep=None):
            steps = self.total_chunk(s0, n_, keep)
            return steps + (self.chunk_carries(j, rc) if self.early else [])

        last = chunk(B.add(start, full * self.C), tail, B.c(0 if rev else full)) if tail else []
        loops = []
        if kept:
            loops.append(ir.For("k_", B.c(0), B.c(kept), tuple(chunk(self.chunk_start(start, full, i, 0), self.C,
                                                                      B.add(i, base), self.kept(i)))))
        loops += self.after_nram("to", kept, full - kept, lambda skip: chunk(
            self.chunk_start(start, full, i, skip), self.C, B.add(i, base + skip)))
        body += (last + loops) if rev else (loops + last)
        dst = ir.Ref(self.tot_name, tuple(B.v(f"u_{v}") for v in self.rvars) + (B.sl(B.v("p_"), 1),))
        if self.early:
            return body + [B.move("store", dst, rc)]
        return body + self.fold() + [B.move("store", dst, B.ref("at_", B.c(0), B.sl(0, 1)))]

    def chunk_carries(self, j, rc: ir.Ref) -> list:
        """`et_` (the chunk's E, [Lc, a]) folded to its first row -- the sub-segments' totals --, then row j of
        `koff_`: the range-local carry `rc` combined with the totals of the sub-segments before each one (after it
        when reverse); `rc` becomes the carry after the chunk."""
        steps, h = [], self.lc // 2
        while h >= 1:
            rows = lambda o: B.ref("et_", B.sl(o, h), B.sl(0, self.a))   # noqa: E731
            steps.append(ir.Assign(rows(0), comb(self.op, rows(0), rows(h))))
            h //= 2
        self.alloc("koff_", self.p.cdt, (self.chunks, self.a))
        return steps + self.carries(lambda q: B.ref("koff_", j, B.sl(q, 1)),
                                    lambda q: B.ref("et_", B.c(0), B.sl(q, 1)), rc)

    def chunk_start(self, start, full: int, i, skip: int):
        """The first position of the (skip + i)-th full chunk of a range in scan order (from its end: reverse)."""
        if self.p.scan.reverse:
            return B.add(start, B.mul(ir.BinOp("-", B.c(full - 1 - skip), i), self.C))
        return B.add(start, B.mul(B.add(i, skip), self.C))

    def kept(self, i) -> ir.Ref:
        """The rows of `keep_` holding the i-th kept chunk as [Lc, 64] (16-bit when the raw operand is kept)."""
        self.alloc("keep_", self.keep_dtype(), (self.keep * self.lc, self.a))
        return B.ref("keep_", B.sl(B.mul(i, self.lc), self.lc), B.sl(0, self.a))

    def sram_chunk_bytes(self) -> int:
        """SRAM one kept chunk takes: every operand's landed tile."""
        return sum(self.a * self.lc * L.device_nbytes(self.types[n].dtype) for n in self.refs)

    def keep_dtype(self) -> ir.DType:
        raw = self.raw()
        return self.types[raw].dtype if raw else self.p.cdt

    # ------------------------------------------------------------ kernel 2: the scan
    def scan_chunk(self, s0, n: int, j, kept: ir.Ref | None = None) -> list:
        """Phase 2 of one chunk: E as [Lc, 64] (`widened`; or from `kept`, which phase 1 left in NRAM), scanned,
        offset, and transposed back (a 16-bit result rounded before it is transposed: half the units)."""
        p = self.p
        if kept is None:
            computes, e, _ = self.widened(s0, n)
        else:
            e = self.tposed("et_")
            computes = [ir.Assign(e, ir.Call("f32", (kept,)) if self.raw() else kept)]
        et = e.name
        acc = B.ref(self.alloc("acc_", p.cdt, (self.a,)), B.sl(0, self.a))
        ot = et if not p.scan.exclusive else self.alloc("ot_", p.cdt, (self.lc, self.a))
        computes.append(ir.Assign(acc, self.ident))
        if doubling_pays(self.lc, self.a * L.device_nbytes(p.cdt) // L.VECTOR_ALIGN, True, p.scan.exclusive):
            steps, ot = doubling_steps(p.scan, et, self.alloc("hs_", p.cdt, (self.lc, self.a)), ot, self.lc, self.a, acc)
        else:
            steps = serial_steps(p.scan, et, ot, self.lc, self.a, acc)
        if self.early:   # the range's carry (cv_) combined with the chunk's carries phase 1 computed
            off = B.ref(self.alloc("off_", p.cdt, (self.a,)), B.sl(0, self.a))
            computes += steps + [ir.Assign(off, comb(self.op, B.ref("koff_", j, B.sl(0, self.a)),
                                                     B.ref("cv_", B.sl(0, self.a))))]
        else:
            computes += steps + self.offsets()
        o = B.ref(ot, B.sl(0, self.lc), B.sl(0, self.a))
        computes.append(ir.Assign(o, comb(self.op, o, B.ref("off_", B.sl(0, self.a)))))
        if p.ydt != p.cdt:
            oh = self.tposed("oh_", p.ydt)
            src = self.alloc("o_h", p.ydt, (self.a, self.lc))
            computes += [ir.Assign(oh, ir.Call(p.ydt.value, (o,))), ir.Assign(self.full(src), ir.Call("transpose",
                                                                                                        (oh,)))]
        else:
            src = self.alloc("ov_", p.cdt, (self.a, self.lc))
            computes.append(ir.Assign(self.full(src), ir.Call("transpose", (o,))))
        self.stored.add(src)
        return computes + self.moves("store", src, p.out.name, p.vars, s0, n)

    def offsets(self) -> list:
        """off_[a] = the chunk carry combined with the totals (acc_) of the sub-segments before a (after a when
        reverse); the carry becomes the chunk's total."""
        self.alloc("off_", self.p.cdt, (self.a,))
        return self.carries(lambda q: B.ref("off_", B.sl(q, 1)), lambda q: B.ref("acc_", B.sl(q, 1)),
                            B.ref("cc_", B.sl(0, 1)))

    def carries(self, dst, tot, carry: ir.Ref) -> list:
        """dst(q) = `carry` combined with tot(0 .. q-1) (tot(q+1 ..) when reverse), a scalar loop over the
        sub-segments; `carry` becomes the combination of all of them."""
        a = B.v("a_")
        if self.p.scan.reverse:
            first, last, cur = self.a - 1, 0, ir.BinOp("-", B.c(self.a - 2), a)
            prev = B.add(cur, 1)
        else:
            first, last, cur = 0, self.a - 1, B.add(a, 1)
            prev = a
        return [ir.Assign(dst(first), carry),
                ir.For("a_", B.c(0), B.c(self.a - 1), (ir.Assign(dst(cur), comb(self.op, dst(prev), tot(prev))),)),
                ir.Assign(carry, comb(self.op, dst(last), tot(last)))]

    def scan_range(self, n: int) -> list:
        p = self.p
        start = B.mul(B.v("p_"), self.RS)
        self.alloc("cc_", p.cdt, (2,))
        body = [ir.Assign(B.ref("cc_", B.sl(0, 1)), self.ident)]
        if self.P > 1:   # the carry into the range: the totals of the ranges before it (after it: reverse)
            tt = self.alloc("tt_", p.cdt, (max(2, self.P),))
            src = ir.Ref(self.tot_name, tuple(B.v(f"u_{v}") for v in self.rvars) + (B.sl(0, self.P),))
            body.insert(0, B.move("load", B.ref(tt, B.sl(0, self.P)), src))
            lo, hi = (B.add(B.v("p_"), 1), B.c(self.P)) if p.scan.reverse else (B.c(0), B.v("p_"))
            body.append(ir.For("q_", lo, hi, (ir.Assign(B.ref("cc_", B.sl(0, 1)),
                                                        comb(self.op, B.ref("cc_", B.sl(0, 1)),
                                                             B.ref(tt, B.sl(B.v("q_"), 1)))),)))
        if self.early:   # the range's carry in every lane, once
            cv = self.alloc("cv_", p.cdt, (self.a,))
            body.append(ir.For("a_", B.c(0), B.c(self.a), (ir.Assign(B.ref(cv, B.sl(B.v("a_"), 1)),
                                                                      B.ref("cc_", B.sl(0, 1))),)))
        full, tail = divmod(n, self.C)
        kept = min(self.keep, full) if self.P > 1 else 0
        i = B.v("k_")
        base = 1 if tail and p.scan.reverse else 0          # scan-order index of the first full chunk
        chunks = []
        if kept:
            chunks.append(ir.For("k_", B.c(0), B.c(kept), tuple(self.scan_chunk(
                self.chunk_start(start, full, i, 0), self.C, B.add(i, base), self.kept(i)))))
        chunks += self.after_nram("from", kept, full - kept, lambda skip: self.scan_chunk(   # (skeep: P > 1 only)
            self.chunk_start(start, full, i, skip), self.C, B.add(i, base + skip)))
        last = self.scan_chunk(B.add(start, full * self.C), tail, B.c(0 if p.scan.reverse else full)) \
            if tail else []
        return body + (last + chunks if p.scan.reverse else chunks + last)

    # ------------------------------------------------------------ the kernel
    def unit_loop(self, per_range) -> ir.For:
        """The task's work unit (one per task at most: rows x P <= tasks) decoded by one-trip loops, its range's
        steps from `per_range(positions)` (the last range may be shorter)."""
        if self.P == 1 or self.last == self.RS:
            body = per_range(self.last if self.P == 1 else self.RS)
        else:
            body = [ir.If(ir.BinOp("==", B.v("p_"), B.c(self.P - 1)), tuple(per_range(self.last)),
                          tuple(per_range(self.RS)))]
        units = self.rows * self.P
        radix = [(f"u_{v}", self.p.shape[v]) for v in self.rvars] + [("p_", self.P)]
        body = decode_units(radix, units, self.p.tasks, body, self.task())
        return ir.For("it_", B.c(0), unit_trips(units, self.p.tasks, self.task()), tuple(body))

    def items(self, name: str) -> list:
        """[the GDRAM totals, the kernel]: phase 1 (range totals), `sync @all`, phase 2 (the scan); phase 2 alone
        when every row is one range."""
        self.tot_name = f"{name}_tot"
        out, steps = [], []
        if self.P > 1:
            out.append(B.alloc(self.tot_name, self.p.cdt, tuple(self.p.shape[v] for v in self.rvars) + (self.P,),
                               "gdram"))
            steps += [self.unit_loop(self.totals_range), ir.Sync(ir.ParLevel.all)]
        steps.append(self.unit_loop(self.scan_range))
        par = self.scope(tuple(self.allocs.values()), tuple(steps))
        return out + [ir.Kernel(f"{name}_mlu", (par,), (("task_dim", str(self.p.tasks)), ("layout", "dense")))]


def long_scan_items(plan: _Plan, spec: ir.Func, types: dict, remarks=None, loc=None) -> list | None:
    """The items of a long scan: of the sub-segment lengths that leave PIPELINED chunks per range and fit NRAM
    (each keeping as many chunks in NRAM as the rest leaves room for), the one the cost model estimates fastest
    (None when none fits)."""
    name = spec.name
    rows = plan.n_other * plan.nlanes
    per_range = plan.S / max(1, plan.tasks // rows)
    best = None
    for a, lc in ((a, lc) for a in SUBSEGS for lc in LC if a * lc <= CHUNK):
        if (a, lc) != (A, LC[-1]) and a * lc * PIPELINED > per_range:   # a range of one chunk loads, computes,
            continue                                                    # stores in turn
        k = _Long(plan, types, name, lc, a)
        items = k.items(name)
        room = NRAM_BUDGET - k.nram_bytes()
        if room < 0:
            continue
        if k.P > 1:   # phase 1 keeps as many chunks in NRAM as fit, then in SRAM: phase 2 does not read them again
            k.keep = min(room // (a * lc * L.device_nbytes(k.keep_dtype())), k.RS // k.C)
            k.skeep = k.sram_tiles(SRAM_BUDGET, k.sram_chunk_bytes(), k.RS // k.C - k.keep)
            if k.keep or k.skeep:
                k.allocs, k.sram_allocs, k.loaded, k.stored, k.count = {}, {}, set(), set(), 0
                items = k.items(name)
        seconds = estimate(dataclasses.replace(spec, body=tuple(items))).seconds
        if best is None or seconds < best[0]:
            best = (seconds, k, items)
    if best is None:
        return None
    _, k, items = best
    if remarks is not None and k.P > 1:
        again = max(0, k.RS - (k.keep + k.skeep) * k.C)
        remarks.append(Remark(
            "schedule-mlu", "missed",
            f"the scan '{plan.out.name}' has {k.rows} row(s) for {plan.tasks} cores: each row is cut into {k.P} "
            "ranges (range totals, a barrier across the cores, then the scan carrying them); "
            + (f"{again} of each range's {k.RS} positions are read twice (the others stay on chip: "
               f"{k.keep * k.C} in NRAM, {k.skeep * k.C} in SRAM)" if again
               else "every range stays on chip (NRAM, SRAM) between the two"), loc))
    return items
