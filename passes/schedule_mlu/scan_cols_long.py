"""Column scans over few lanes on the MLU: a scan along a leading or middle axis (scan.py's `cols` layout: a tile
is [R scan rows, W lanes of the last axis], one vector op per scan row) whose unit kernel has fewer work units
(points of the other axes x lane chunks) than cores. 64 columns of 65,536 rows were 2 units for 32 cores (5.5x
the DMA roofline). Here the scan axis is cut as well:

- every unit (points of the other axes, a lane chunk) is cut into P ranges of RS scan rows (whole tiles), one
  work unit per (unit, range), at most one per task;
- phase 1 walks the range's tiles in scan order, computing E and folding its rows into the range's total (one
  row op per scan row, or halving runs of rows in a dense tile), and stores the total in a GDRAM array
  `<name>_tot[other axes..., P, lanes]`; the E tiles of its first `keep` tiles stay in NRAM (`keep_`);
- `sync @all`: every total is stored before any task reads them;
- phase 2 starts from the combination of the totals of the ranges before its own (after it: reverse) and walks
  its tiles as the unit kernel does (scan.py `finish`), taking the kept E tiles from NRAM.
The next tiles' landed operands stay in the cluster's SRAM (scan_sram.py). The operands of the tiles kept nowhere
are read twice; results are written once (remarked with the counts).
"""
from __future__ import annotations

from gir import ir
from gir.passes.machines import MLU370
from gir.passes.remarks import Remark
from gir.scan import identity
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.colreduce import decode_units, unit_trips
from gir.passes.schedule_mlu.scan import FLOATS, FULL, _Kernel, _Plan
from gir.passes.schedule_mlu.scan_size import NRAM_BUDGET
from gir.passes.schedule_mlu.scan_sram import SramKeep
from gir.passes.schedule_mlu.scan_steps import OPS, comb
from gir.passes.schedule_mlu.swpipe import slice_len

MIN_TILES = 2           # tiles per range at least (a range of one tile gains nothing from the pipeline)
SRAM_BUDGET = MLU370.sram_bytes   # SRAM of a cluster the tiles kept between the phases may take


def applies(plan: _Plan) -> bool:
    """A `cols` scan whose unit kernel leaves cores idle and whose axis holds at least two tiles per core."""
    return plan.layout == "cols" and plan.units < plan.tasks and plan.S >= MIN_TILES * plan.R * 2


class _ColsLong(SramKeep, _Kernel):
    """The kernel (module docstring): _Kernel's operands, computes and tile scans over ranges of the scan axis."""

    def __init__(self, plan: _Plan, types: dict, name: str, keep: int = 0, skeep: int = 0):
        super().__init__(plan, types, name)
        self.sram_setup()
        self.skeep = skeep      # the tiles after those kept in SRAM (scan_sram.py)
        p = plan
        ranges = max(1, p.tasks // p.units)
        self.RS = L.round_up(-(-p.S // ranges), p.R)
        self.P = -(-p.S // self.RS)
        self.last = p.S - (self.P - 1) * self.RS
        self.op = OPS[p.scan.op]
        self.ident = B.c(identity(p.scan.op, p.cdt in FLOATS, None if p.cdt in FLOATS else "int32"))
        self.keep = keep        # tiles of a range phase 1 leaves in NRAM (`keep_`) for phase 2
        self.tot_name = f"{name}_tot"

    def elems(self, shape) -> int:
        """Elements an @nram buffer of `shape` takes (a 2-D tile of a `layout=dense` kernel is unpadded, as
        codegen/mlu/emit.py allocates it)."""
        if self.p.dense and len(shape) == 2 and not L.is_rowvec(shape):
            return L.round_up(shape[0] * shape[1], L.PITCH)
        return L.phys_elems(shape)

    def nram_bytes(self) -> int:
        """NRAM of the allocs, loaded and stored tiles counted twice (pipeline slots)."""
        total = 0
        for n, a in self.allocs.items():
            slots = 1 + (n in self.loaded or n in self.stored) + (n in self.loaded and n in self.stored)
            total += L.round_up(self.elems(a.type.shape) * L.device_nbytes(a.type.dtype) * slots, L.VECTOR_ALIGN)
        return total

    # ------------------------------------------------------------ geometry
    def tile_start(self, n: int, k, skip: int = 0):
        """The first scan row of the (skip + k)-th full tile of a range of n rows, in scan order."""
        start, full = B.mul(B.v("p_"), self.RS), n // self.p.R
        if self.p.scan.reverse:
            return B.add(start, B.add(B.mul(ir.BinOp("-", B.c(full - 1 - skip), k), self.p.R), n % self.p.R))
        return B.add(start, B.mul(B.add(k, skip), self.p.R))

    def tail_start(self, n: int):
        """The first scan row of the partial tile of a range of n rows: its last rows in scan order (at its
        start when reverse)."""
        start = B.mul(B.v("p_"), self.RS)
        return start if self.p.scan.reverse else B.add(start, n - n % self.p.R)

    def kept(self, k, nl: int) -> ir.Ref:
        """The rows of `keep_` holding the k-th kept tile: E, or the raw 16-bit operand's landing tile (half the
        bytes: twice the tiles kept; widened again in phase 2 instead of copied)."""
        self.alloc("keep_", self.keep_dtype(), (self.keep * self.p.R, max(2, self.p.W)))
        return B.ref("keep_", B.sl(B.mul(k, self.p.R), self.p.R), B.sl(0, nl))

    def raw(self) -> str | None:
        """The raw 16-bit operand kept in 16 bits: a whole tile (`_Kernel.raw`) whose kept slots stay 128-byte
        aligned (R x W 16-bit elements a multiple of 64: a dense tile's odd R would misalign every other slot)."""
        raw = super().raw()
        return raw if raw and (not self.p.dense or self.p.R * self.p.W % 64 == 0) else None

    def keep_dtype(self) -> ir.DType:
        raw = self.raw()
        return self.types[raw].dtype if raw else self.p.cdt

    def loads(self, s0, ns: int, l0, nl: int, stage: str, widen: bool = True) -> list:
        """_Kernel's loads; a tile SRAM keeps copies each landed operand to SRAM, or from it (scan_sram.py)."""
        out = super().loads(s0, ns, l0, nl, stage, widen)
        if self.sram is None or stage != "tile":
            return out
        moves = []
        for m in out:
            if not (isinstance(m, ir.Move) and m.kind == "load"):
                moves.append(m)
                continue
            shape = self.allocs[m.dst.name].type.shape
            nr, nc = (slice_len(i) for i in m.dst.index)
            ks = self.kept_sram(m.src.name, self.types[m.src.name].dtype, shape[0], shape[1], nr, nc)
            moves += self.through_sram(m.dst, ks, [m])
        return moves

    def sram_tile_bytes(self) -> int:
        """SRAM one kept tile takes: the landed tiles of the operands loaded per tile."""
        for stage in ("unit", "tile"):   # (allocates the landing tiles)
            self.tile(B.c(0), self.p.R, B.c(0), self.p.W, stage)
        return sum(self.elems(self.allocs[n].type.shape) * L.device_nbytes(self.allocs[n].type.dtype)
                   for n in self.loaded)

    # ------------------------------------------------------------ phase 1: range totals
    def fold(self, ev: ir.Ref, ns: int, nl: int) -> list:
        """tot_ OP= every row of ev: halving runs of rows of a dense tile (contiguous), then row by row."""
        tot = B.ref(self.alloc("tot_", self.p.cdt, (max(2, self.p.W),)), B.sl(0, nl))
        steps, n = [], ns
        rows = lambda a, k: ir.Ref(ev.name, (B.sl(a, k), B.sl(0, nl)))   # noqa: E731
        while self.p.dense and n >= 4:
            h = n // 2
            steps.append(ir.Assign(rows(0, h), comb(self.op, rows(0, h), rows(n - h, h))))
            n -= h
        row = ir.Ref(ev.name, (B.v("q_"), B.sl(0, nl)))
        steps.append(ir.For("q_", B.c(0), B.c(n), (ir.Assign(tot, comb(self.op, tot, row)),)))
        return steps

    def totals_range(self, n: int, l0, nl: int) -> list:
        R = self.p.R
        full, tail = divmod(n, R)
        body = self.tile(B.c(0), R, l0, nl, "unit")
        body.append(ir.Assign(B.ref(self.alloc("tot_", self.p.cdt, (max(2, self.p.W),)), B.sl(0, nl)), self.ident))
        kept = min(self.keep, full)
        k = B.v("k_")
        if kept:
            steps, ev = self.operand(self.tile_start(n, k), R, l0, nl)
            raw = self.raw()
            steps.append(ir.Assign(self.kept(k, nl), self.region(f"{raw}_h", FULL, R, nl) if raw else ev))
            body.append(ir.For("k_", B.c(0), B.c(kept), tuple(steps + self.fold(ev, R, nl))))
        def totals(skip):
            steps, ev = self.operand(self.tile_start(n, k, skip), R, l0, nl)
            return steps + self.fold(ev, R, nl)
        body += self.after_nram("to", kept, full - kept, totals)
        if tail:
            steps, ev = self.operand(self.tail_start(n), tail, l0, nl)
            body += steps + self.fold(ev, tail, nl)
        dst = ir.Ref(self.tot_name, tuple(B.v(f"u_{v}") for v in self.p.units_vars) + (B.sl(B.v("p_"), 1),
                                                                                         B.sl(l0, nl)))
        return body + [B.move("store", dst, B.ref("tot_", B.sl(0, nl)))]

    # ------------------------------------------------------------ phase 2: the scan
    def scan_range(self, n: int, l0, nl: int) -> list:
        p, R = self.p, self.p.R
        acc = B.ref(self.alloc("acc_", p.cdt, (max(2, p.W),)), B.sl(0, nl))
        body = self.tile(B.c(0), R, l0, nl, "unit") + [ir.Assign(acc, self.ident)]
        if self.P > 1:   # the carry into the range: the totals of the ranges before it (after it: reverse)
            tt = self.alloc("tt_", p.cdt, (max(2, self.P), max(2, p.W)))
            src = ir.Ref(self.tot_name, tuple(B.v(f"u_{v}") for v in p.units_vars) + (B.sl(0, self.P),
                                                                                        B.sl(l0, nl)))
            body.insert(0, B.move("load", B.ref(tt, B.sl(0, self.P), B.sl(0, nl)), src))
            lo, hi = (B.add(B.v("p_"), 1), B.c(self.P)) if p.scan.reverse else (B.c(0), B.v("p_"))
            body.append(ir.For("r_", lo, hi, (ir.Assign(acc, comb(self.op, acc, B.ref(tt, B.v("r_"),
                                                                                      B.sl(0, nl)))),)))
        full, tail = divmod(n, R)
        kept = min(self.keep, full) if self.P > 1 else 0
        k = B.v("k_")
        tiles = []
        if kept:
            ev = self.region(self.alloc("ev_", p.cdt, self.shape_of(FULL)), FULL, R, nl)
            s0 = self.tile_start(n, k)
            kv = ir.Call("f32", (self.kept(k, nl),)) if self.raw() else self.kept(k, nl)
            tiles.append(ir.For("k_", B.c(0), B.c(kept), tuple([ir.Assign(ev, kv)] + self.finish(ev, s0, R, l0, nl))))
        tiles += self.after_nram("from", kept, full - kept,
                                 lambda skip: self.tile(self.tile_start(n, k, skip), R, l0, nl, "tile"))
        last = self.tile(self.tail_start(n), tail, l0, nl, "tile") if tail else []
        return body + tiles + last   # the partial tile is the range's last in scan order (tail_start)

    # ------------------------------------------------------------ the kernel
    def unit_loop(self, per_range) -> ir.For:
        """A work unit (other axes, lane chunk, range) decoded by one-trip loops; its range's steps from
        `per_range(rows, l0, lanes)` (the last range and the last lane chunk may be shorter)."""
        p = self.p
        wl = p.nlanes - (p.chunks - 1) * p.W
        l0 = B.mul(B.v("c_"), p.W)

        def by_lanes(n):
            if p.chunks == 1 or wl == p.W:
                return per_range(n, l0, min(p.W, p.nlanes))
            return [ir.If(ir.BinOp("==", B.v("c_"), B.c(p.chunks - 1)), tuple(per_range(n, l0, wl)),
                          tuple(per_range(n, l0, p.W)))]

        if self.P == 1 or self.last == self.RS:
            body = by_lanes(self.last if self.P == 1 else self.RS)
        else:
            body = [ir.If(ir.BinOp("==", B.v("p_"), B.c(self.P - 1)), tuple(by_lanes(self.last)),
                          tuple(by_lanes(self.RS)))]
        units = p.units * self.P
        radix = [(f"u_{v}", p.shape[v]) for v in p.units_vars] + [("c_", p.chunks), ("p_", self.P)]
        body = decode_units(radix, units, p.tasks, body, self.task())
        return ir.For("it_", B.c(0), unit_trips(units, p.tasks, self.task()), tuple(body))

    def items(self) -> list:
        """[the GDRAM totals, the kernel]: phase 1, `sync @all`, phase 2."""
        p = self.p
        tot = B.alloc(self.tot_name, p.cdt, tuple(p.shape[v] for v in p.units_vars) + (self.P, p.nlanes), "gdram")
        steps = [self.unit_loop(self.totals_range), ir.Sync(ir.ParLevel.all), self.unit_loop(self.scan_range)]
        par = self.scope(tuple(self.allocs.values()), tuple(steps))
        attrs = (("task_dim", str(p.tasks)),) + ((("layout", "dense"),) if p.dense else ())
        return [tot, ir.Kernel(self.name, (par,), attrs)]


def cols_long_items(plan: _Plan, spec: ir.Func, types: dict, remarks=None, loc=None) -> list | None:
    """The items of a long column scan keeping as many tiles in NRAM as the rest leaves room for (None when one
    range per unit would be all there is, or nothing fits NRAM)."""
    name = f"{spec.name}_mlu"
    per_elem = 16
    # a range's tiles: at least MIN_TILES (the NRAM estimate alone grows a tile to a whole range when E takes
    # few temporaries: 6,007 x 40 along the first axis, tiles of 417 in ranges of 417 -- the unit kernel, 6.5x
    # slower, where tiles of 179 in ranges of 537 were)
    ranges = max(1, plan.tasks // max(1, plan.units))
    most = max(1, -(-plan.S // ranges) // MIN_TILES)
    for _ in range(12):   # tiles from a per-element estimate, refined by the real allocation (half the budget:
        plan.choose(per_elem)   # the rest keeps tiles of phase 1 for phase 2)
        plan.R = min(plan.R, most)
        k = _ColsLong(plan, types, name)
        items = k.items()
        used = k.nram_bytes()
        if used <= NRAM_BUDGET // 2 or plan.R == 1:
            break
        per_elem = per_elem * used // (NRAM_BUDGET // 2) + 1
    room = NRAM_BUDGET - k.nram_bytes()
    if k.P < 2 or room < 0 or k.RS < MIN_TILES * plan.R:
        return None
    tile_bytes = k.elems((plan.R, max(2, plan.W))) * L.device_nbytes(k.keep_dtype())   # as nram_bytes counts
    one = _ColsLong(plan, types, name, 1)   # keeping tiles also takes a tile phase 2 copies them into
    one.items()
    keep = min((NRAM_BUDGET - one.nram_bytes()) // tile_bytes + 1, k.RS // plan.R)
    keep = max(keep, 0)
    probe = _ColsLong(plan, types, name)
    skeep = probe.sram_tiles(SRAM_BUDGET, probe.sram_tile_bytes(), k.RS // plan.R - keep)
    if keep or skeep:
        k = _ColsLong(plan, types, name, keep, skeep)
        items = k.items()
    if remarks is not None:
        again = max(0, k.RS - (k.keep + k.skeep) * plan.R)
        remarks.append(Remark(
            "schedule-mlu", "missed",
            f"the scan '{plan.out.name}' has {plan.units} unit(s) of lanes for {plan.tasks} cores: its axis is cut "
            f"into {k.P} ranges (range totals, a barrier across the cores, then the scan carrying them); "
            + (f"{again} of each range's {k.RS} positions are read twice (the others stay on chip: "
               f"{k.keep * plan.R} in NRAM, {k.skeep * plan.R} in SRAM)" if again
               else "every range stays on chip (NRAM, SRAM) between the two"), loc))
    return items
