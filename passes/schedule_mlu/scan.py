"""Scans (cumsum, cumprod, cummax, cummin; gir/scan.py) on the MLU: a pipelined scan kernel per scan statement.

`y[..., s, ..., l] = SCAN(E, s)` is cut into work units (one point of every axis other than s and the lane axis,
and a chunk of lanes), cyclic over the cores; each unit walks the scan axis s in tiles, pipelined by codegen
(load tile k+1 / compute tile k / store tile k-1):

    acc[0:W] = identity
    for k in 0..tiles {                                  # loads, computes, stores: software-pipelined
      load x_t <- x[.., s0:s0 + R, .., l0:l0 + W]        # every operand of E (16-bit: landing tile + f32())
      e = E(x_t, ...)                                    # element-wise producers, three-address on NRAM tiles
      o[0] = acc OP e[0];  for q in 1..R { o[q] = o[q-1] OP e[q] }     # one vector op per scan row
      acc = o[R-1]                                       # the carry into the next tile
      store y[.., s0:s0 + R, .., l0:l0 + W] <- o
    }
    (the S % R tail tile with its exact size, after the loop; `rows`, a tail of 3/4 of a tile or more: one more
     whole tile in the loop instead, ending at the row's end, overlapping the tile before)

Two layouts, by where s lies:
- `cols` (s is not the last axis): lanes are the last axis, the tile is [R scan rows, W lanes]: every scan step is
  one vector op over W lanes (fully vectorised, no transpose).
- `rows` (s is the last axis): lanes are the axis before s (rank 1: one lane); a [Ra lanes, Sc scan] tile is
  loaded, E computed, transposed on chip (`transpose()`, `__bang_transpose`) to [Sc, Ra], scanned row by row as
  above, transposed back and stored. Ra and Sc are multiples of 64 (dense buffers); tails load and store their
  exact regions, and scan only their real rows.

Exclusive forms write the carry first (o[0] = acc; o[q] = o[q-1] OP e[q-1]); reverse forms walk the tiles from
the end of s and the rows of a tile from its last. f16 / bf16 tensors are scanned in f32 (rounded once per
result), i32 natively (wrapping as numpy does).
"""
from __future__ import annotations

import dataclasses
import re

from gir import ir
from gir.errors import GirError
from gir.scan import identity, is_scan, scan_of
from gir.walk import walk
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.colreduce import _unit_kernel, decode_units, unit_trips
from gir.passes.schedule_mlu import scan_subseg as subseg
from gir.passes.schedule_mlu.scan_steps import doubling_pays, doubling_steps, serial_steps
from gir.passes.schedule_mlu.scan_walk import overlap_walk, overlaps, single_tile

F32, I32 = ir.DType.f32, ir.DType.i32
FLOATS = (ir.DType.f32, ir.DType.f16, ir.DType.bf16)
FULL, ROW, COL = "full", "row", "col"
BINARY = ("+", "-", "*", "/", "max", "min", "pow")


def has_scan(func: ir.Func) -> bool:
    return any(is_scan(x) for s in func.body if isinstance(s, ir.Assign) for x in walk(s.value))


class _Plan:
    """The scan statement's geometry: scan axis, lane axis, unit axes, tile sizes."""

    def __init__(self, stmt: ir.Assign, types: dict, tasks: int):
        p = scan_of(stmt.value)
        self.stmt, self.scan, self.tasks = stmt, p, tasks
        self.allow_sram = True   # (scan_items: the long scans may keep tiles in SRAM)
        self.wide = False        # cols: one lane chunk as wide as the rows (up to WIDE_LANES), cut into ranges
        self.subseg = False      # rows: tiles may scan in sub-segments (scan_subseg.py; a candidate scan_size times)
        self.out = stmt.target
        self.vars = [i.name for i in self.out.index]
        self.shape = dict(zip(self.vars, types[self.out.name].shape))
        self.ydt = types[self.out.name].dtype
        if self.ydt in FLOATS:
            # cummax / cummin of a 16-bit tensor into its type: in that type (exact: a max or min of 16-bit
            # values is one of them; half the vector units and NRAM); every other float scan computes in f32
            raw = raw_operand(p, types, F32)
            self.cdt = self.ydt if p.op in ("cummax", "cummin") and raw and types[raw].dtype == self.ydt else F32
            if self.cdt != F32:   # E is the tensor itself (`cummax(f32(x))`: the widening dropped, exact)
                p.arg = next(x for x in walk(p.arg) if isinstance(x, ir.Ref))
        elif self.ydt == I32:
            self.cdt = I32
        else:
            raise GirError(f"the MLU scan runs f32, f16, bf16 and i32 results, not {self.ydt.value}", stmt.loc)
        k = self.vars.index(p.axis)
        self.axis = p.axis
        self.S = self.shape[p.axis]
        if k < len(self.vars) - 1:
            self.layout, self.lane = "cols", self.vars[-1]
        else:
            self.layout, self.lane = "rows", (self.vars[k - 1] if k > 0 else None)
        self.units_vars = [v for v in self.vars if v not in (p.axis, self.lane)]
        self.nlanes = self.shape[self.lane] if self.lane else 1
        self.n_other = 1
        for v in self.units_vars:
            self.n_other *= self.shape[v]

    def choose(self, per_elem: int, most: int | None = None, least: int | None = None) -> None:
        """Lane chunk W (at most `most`, at least `least`) and scan rows R (cols), or lane block Ra and scan
        chunk Sc (rows): scan_size.py."""
        from gir.passes.schedule_mlu.scan_size import choose
        choose(self, per_elem, most, least)


_TEMP = re.compile(r"e\d+_")   # the temporaries `_Kernel.expr` computes E's operations in


class _Kernel:
    """Builds the explicit MLU GIR of one scan statement (sizes specialised)."""

    def __init__(self, plan: _Plan, types: dict, name: str):
        self.p, self.types, self.name = plan, types, name
        self.allocs: dict[str, ir.Alloc] = {}
        self.count = 0
        self.refs: dict[str, tuple] = {}       # tensor name -> (kind, vars)
        self.loaded: set[str] = set()          # tiles loaded / stored in the pipelined loop (pipeline slots)
        self.stored: set[str] = set()
        self.carry_row = None   # lanes(): the row a tile's carry comes from, when not its last (scan_steps.py)
        self.shift = 0          # lanes(): pad positions before a tile's real ones (a reverse one-tile unit)
        self.hoisted: list | None = None   # units_pipelined: the per-position operands loaded once per core
        self.hoisting = False   # units_pipelined: per-position operands are loaded once per core (`hoists`)
        p = plan
        for x in walk(p.scan.arg):
            if isinstance(x, ir.Ref):
                self.refs[x.name] = (self._kind(x), [i.name for i in x.index])

    # ------------------------------------------------------------ operands
    def _kind(self, x: ir.Ref) -> str:
        p = self.p
        names = []
        for i in x.index:
            if not isinstance(i, ir.Var) or i.name not in p.vars:
                raise GirError(f"the MLU scan computes its operand on chip from tensors indexed by the statement's "
                               f"variables; '{x.name}' is indexed otherwise", x.loc,
                               ["compute the operand in its own statement first"])
            names.append(i.name)
        if [p.vars.index(v) for v in names] != sorted(set(p.vars.index(v) for v in names)):
            raise GirError(f"'{x.name}' is indexed in another order than the scan's result (a transpose): the MLU "
                           "scan cannot read it on chip", x.loc, ["compute the operand in its own statement first"])
        dt = self.types[x.name].dtype
        if (p.cdt == F32 and dt not in FLOATS) or (p.cdt == I32 and dt != I32):
            raise GirError(f"the MLU scan of a {p.ydt.value} result reads '{x.name}' of type {dt.value}", x.loc,
                           ["cast it in its own statement first"])
        has_s, has_l = p.axis in names, p.lane in names
        if has_s and (has_l or p.lane is None):
            return FULL
        if not has_s and not has_l:
            raise GirError(f"'{x.name}' depends on neither the scan axis nor '{p.lane}': the MLU scan reads "
                           "only tiles along them", x.loc, ["broadcast it in its own statement first"])
        scan_only = has_s
        return (ROW if scan_only else COL) if p.layout == "cols" else (COL if scan_only else ROW)

    def raw(self) -> str | None:
        """The raw 16-bit operand (`raw_operand`) when it is read as a whole tile (a per-lane or per-position
        operand is not: its tile is not transposed)."""
        raw = raw_operand(self.p.scan, self.types, self.p.cdt)
        return raw if raw and self.refs[raw][0] == FULL else None

    def alloc(self, name: str, dt: ir.DType, shape) -> str:
        if name not in self.allocs:
            self.allocs[name] = B.alloc(name, dt, shape, "nram")
        return name

    def shape_of(self, kind: str) -> tuple:
        """Tile shapes in the compute orientation: cols [R, W] (scan x lanes), rows [W, Sc] (lanes x scan)."""
        p = self.p
        rows, cols = (p.R, max(2, p.W)) if p.layout == "cols" else (p.W, p.R)   # [R, 1] would be a row vector
        return {FULL: (rows, cols), ROW: (rows, 1), COL: (cols,)}[kind]

    def region(self, name: str, kind: str, nr: int, nc: int, moved: bool = False) -> ir.Ref:
        """A tile's region of `nr` x `nc` (compute orientation); `moved`: the region a DMA fills or drains, after
        the tile's pad positions (`shift`) along the scan axis of the rows layout."""
        at = self.shift if moved and self.p.layout == "rows" else 0
        if kind == FULL:
            return B.ref(name, B.sl(0, nr), B.sl(at, nc))
        if kind == ROW:
            return B.ref(name, B.sl(0, nr), B.sl(0, 1))
        return B.ref(name, B.sl(at, nc))

    def acc(self, nl: int) -> ir.Ref:
        """The unit's carry over `nl` lanes (allocated whole vector units wide: scan_subseg.py `carry_lanes`)."""
        return B.ref(self.alloc("acc_", self.p.cdt, (max(2, subseg.carry_lanes(self.p)),)), B.sl(0, nl))

    def computed(self, ns: int) -> int:
        """Positions a tile's computes span: all of them when its real ones follow pads (`shift`)."""
        return self.p.R if self.shift else ns

    def gdram(self, name: str, names: list, s0, ns: int, l0, nl: int) -> ir.Ref:
        idx = []
        for v in names:
            if v == self.p.axis:
                idx.append(B.sl(s0, ns))
            elif v == self.p.lane:
                idx.append(B.sl(l0, nl))
            else:
                idx.append(B.v(f"u_{v}"))
        return ir.Ref(name, tuple(idx))

    # ------------------------------------------------------------ one tile
    def tile(self, s0, ns: int, l0, nl: int, stage: str) -> list:
        """Steps of one tile of `ns` scan rows and `nl` lanes at scan offset `s0`, lane offset `l0`. `stage`:
        'unit' (operands loaded once per unit: lanes only) or 'tile' (the rest, loads / computes / stores)."""
        if stage == "unit":
            return self.loads(s0, ns, l0, nl, "unit")
        p = self.p
        # (a tile of fewer positions ends its walk)
        k = subseg.subsegments(p, ns, ns < p.R, self.carry_row, self.shift > 0)
        raw = self.raw() if p.layout == "rows" else None
        if raw:   # rows: the 16-bit landing tile transposed as it is (half the units), widened after
            land = B.ref(f"{raw}_h", B.sl(0, p.W), B.sl(0, p.R))
            steps = self.loads(s0, ns, l0, nl, "tile", widen=False)
            if k:
                tr, tv = subseg.land(self, k, land, self.types[raw].dtype)
                return steps + tr + subseg.finish(self, None, tv, k, s0, ns, l0, nl)
            th = B.ref(self.alloc("th_", self.types[raw].dtype, (p.R, p.W)), B.sl(0, p.R), B.sl(0, p.W))
            steps.append(ir.Assign(th, ir.Call("transpose", (land,))))
            return steps + self.finish(None, s0, ns, l0, nl, th)
        steps, ev = self.operand(s0, ns, l0, nl)
        if k:
            return steps + subseg.finish(self, ev, None, k, s0, ns, l0, nl)
        return steps + self.finish(ev, s0, ns, l0, nl)

    def loads(self, s0, ns: int, l0, nl: int, stage: str, widen: bool = True) -> list:
        """The loads (and, with `widen`, the widening conversions) of the operands a `stage` tile reads."""
        p = self.p
        nr, nc = (ns, nl) if p.layout == "cols" else (nl, ns)
        cc = nc if p.layout == "cols" else self.computed(ns)
        per_tile = {FULL, ROW} if p.layout == "cols" else {FULL, COL}
        loads, convs = [], []
        for name, (kind, names) in self.refs.items():
            hoist = self.hoists(kind, names)
            if not {"unit": kind not in per_tile, "tile": kind in per_tile and not hoist, "core": hoist}[stage]:
                continue
            dt = self.types[name].dtype
            land = self.alloc(f"{name}_t" if dt == p.cdt else f"{name}_h", dt, self.shape_of(kind))
            gsl = self.gdram(name, names, s0, ns, l0, nl)
            loads.append(B.move("load", self.region(land, kind, nr, nc, moved=True), gsl))
            if stage == "tile":
                self.loaded.add(land)
            if dt != p.cdt and widen:   # (no f32 tile where the raw path widens after its transpose)
                t = self.alloc(f"{name}_t", p.cdt, self.shape_of(kind))
                convs.append(ir.Assign(self.region(t, kind, nr, cc), ir.Call("f32", (self.region(land, kind, nr,
                                                                                                  cc),))))
        return loads + convs

    def hoists(self, kind: str, names: list) -> bool:
        """Whether an operand of `kind` indexed by `names` is loaded once per core (stage 'core'): a per-position
        operand (`w[j]`) of one-tile units of the rows layout, the same tile for every unit."""
        p = self.p
        return self.hoisting and p.layout == "rows" and kind == COL and names == [p.axis]

    def operand(self, s0, ns: int, l0, nl: int) -> tuple[list, ir.Ref]:
        """(loads and computes, the full tile holding E) of a tile of `ns` scan rows and `nl` lanes."""
        p = self.p
        nr, nc = (ns, nl) if p.layout == "cols" else (nl, self.computed(ns))
        steps = self.loads(s0, ns, l0, nl, "tile")
        self.count = 0   # (every walk of a tile computes E in the same temporaries)
        ev = self.expr(p.scan.arg, steps, nr, nc)
        if not (isinstance(ev, ir.Ref) and self._tile_kind(ev) == FULL):
            t = self.alloc("ev_", p.cdt, self.shape_of(FULL))
            steps.append(ir.Assign(self.region(t, FULL, nr, nc), ev))
            ev = self.region(t, FULL, nr, nc)
        return steps, ev

    def finish(self, ev: ir.Ref | None, s0, ns: int, l0, nl: int, th: ir.Ref | None = None) -> list:
        """The scan of the tile `ev` (E of `ns` scan rows x `nl` lanes, carried in `acc_`) and its store. Rows
        layout: `th`, when given, is E's raw 16-bit tile already transposed (`ev` is None); a 16-bit result is
        rounded before it is transposed back (half the units)."""
        p = self.p
        computes: list = []
        inplace = not p.scan.exclusive     # o[q] = o[q-1] OP e[q] may overwrite e[q] itself
        if p.layout == "cols":
            o = ev.name if inplace else self.alloc("o_", p.cdt, self.shape_of(FULL))
            steps, o = self.scan_rows(ev.name, o, ns, nl)
            return computes + steps + self.store(o, s0, ns, l0, nl)
        et = self.alloc("et_", p.cdt, (p.R, p.W))
        ot = et if inplace else self.alloc("ot_", p.cdt, (p.R, p.W))
        whole = lambda t, r, c: B.ref(t, B.sl(0, r), B.sl(0, c))   # noqa: E731
        computes.append(ir.Assign(whole(et, p.R, p.W), ir.Call("f32", (th,)) if th is not None else
                                  ir.Call("transpose", (whole(ev.name, p.W, p.R),))))
        steps, ot = self.scan_rows(et, ot, ns, p.W)
        computes += steps
        if p.ydt != p.cdt:
            oh = self.alloc("oh_", p.ydt, (p.R, p.W))
            h = self.alloc("o_h", p.ydt, (p.W, p.R))
            computes += [ir.Assign(whole(oh, p.R, p.W), ir.Call(p.ydt.value, (whole(ot, p.R, p.W),))),
                         ir.Assign(whole(h, p.W, p.R), ir.Call("transpose", (whole(oh, p.R, p.W),)))]
            src = self.region(h, FULL, nl, ns, moved=True)
            self.stored.add(h)
            return computes + [B.move("store", self.gdram(p.out.name, p.vars, s0, ns, l0, nl), src)]
        o = ev.name if ev is not None else self.alloc("ov_", p.cdt, (p.W, p.R))
        computes.append(ir.Assign(whole(o, p.W, p.R), ir.Call("transpose", (whole(ot, p.R, p.W),))))
        return computes + self.store(o, s0, ns, l0, nl)

    def store(self, o: str, s0, ns: int, l0, nl: int) -> list:
        """The result tile `o` (compute orientation) rounded to the result type if it is narrower, and stored."""
        p = self.p
        nr, nc = (ns, nl) if p.layout == "cols" else (nl, ns)
        cc = nc if p.layout == "cols" else self.computed(ns)
        src, computes = self.region(o, FULL, nr, nc, moved=True), []
        if p.ydt != p.cdt:
            h = self.alloc("o_h", p.ydt, self.allocs[o].type.shape)
            computes.append(ir.Assign(self.region(h, FULL, nr, cc), ir.Call(p.ydt.value, (self.region(o, FULL, nr,
                                                                                                          cc),))))
            src = self.region(h, FULL, nr, nc, moved=True)
        self.stored.add(src.name)
        return computes + [B.move("store", self.gdram(p.out.name, p.vars, s0, ns, l0, nl), src)]

    def _tile_kind(self, r: ir.Ref) -> str:
        shape = self.allocs[r.name].type.shape
        return ROW if L.is_rowvec(shape) else (COL if len(shape) == 1 else FULL)

    def expr(self, e, out: list, nr: int, nc: int):
        """Three-address computes of E on tiles; returns a tile region or a constant."""
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                raise GirError("the MLU scan takes numeric operands", e.loc)
            return e
        if isinstance(e, ir.Ref):
            return self.region(f"{e.name}_t", self.refs[e.name][0], nr, nc)
        if isinstance(e, ir.Call) and e.fn in ("f32", "i32") and len(e.args) == 1 and \
                ir.DType(e.fn) == self.p.cdt and not (self.p.cdt == I32 and _has_float(e.args[0], self.types)):
            return self.expr(e.args[0], out, nr, nc)
        if isinstance(e, ir.UnOp) and e.op == "-":
            args, build = [e.operand], lambda a: ir.UnOp("-", a[0])
        elif isinstance(e, ir.BinOp) and e.op in BINARY:
            args, build = [e.lhs, e.rhs], lambda a: ir.BinOp(e.op, a[0], a[1])
        elif isinstance(e, ir.Call) and (e.fn in ir.UNARY_FUNCS or e.fn in BINARY or e.fn == "clamp"):
            args, build = list(e.args), lambda a: ir.Call(e.fn, tuple(a))
        else:
            raise GirError("the MLU scan cannot compute this operand on chip", getattr(e, "loc", None),
                           ["compute the operand in its own statement first"])
        vals = [self.expr(a, out, nr, nc) for a in args]
        kinds = {self._tile_kind(v) for v in vals if isinstance(v, ir.Ref)}
        if not kinds:
            raise GirError("the MLU scan cannot compute a constant operand on chip", getattr(e, "loc", None))
        kind = FULL if FULL in kinds or kinds == {ROW, COL} else kinds.pop()
        # the first tile operand, when a temporary of E of the result's kind (computed for this op alone), takes
        # the result in place: E needs as many temporaries as its tree's widest point, not one per operation
        # (NRAM for longer tiles). The first operand, or the only tile beside constants: the emitter computes
        # `dst = a OP b` into a scratch tile when dst is b and a is a narrower tile, and so for clamp's bounds
        # and `s ** a` (codegen/mlu/vecops.py) -- scratch the NRAM count does not see (a review: clamp(x, 0,
        # w - 2x) along i at 4,096^2 overflowed NRAM)
        tiles = [v for v in vals if isinstance(v, ir.Ref)]
        t0 = tiles[0] if tiles else None
        fn = e.fn if isinstance(e, ir.Call) else getattr(e, "op", "")
        dst = t0 if t0 is not None and _TEMP.fullmatch(t0.name) and self._tile_kind(t0) == kind and \
            fn not in ("clamp", "select", "**", "pow") and (t0 is vals[0] or len(tiles) == 1) else None
        if dst is None:
            self.count += 1
            dst = self.region(self.alloc(f"e{self.count}_", self.p.cdt, self.shape_of(kind)), kind, nr, nc)
        out.append(ir.Assign(dst, build(vals)))
        return dst

    def scan_rows(self, e: str, o: str, ns: int, nl: int) -> tuple[list, str]:
        """The row steps of the scan of tile `e` ([ns rows, nl lanes], scan orientation), carried in `acc_`
        (passes/schedule_mlu/scan_steps.py). Returns (steps, the tile holding the result)."""
        p = self.p
        acc = self.acc(nl)
        units = -(-p.W * L.device_nbytes(p.cdt) // L.VECTOR_ALIGN)
        carry = self.carry_row
        if doubling_pays(ns, units, p.dense, p.scan.exclusive):
            h = self.alloc("hs_", p.cdt, self.allocs[e].type.shape)
            return doubling_steps(p.scan, e, h, o, ns, nl, acc, carry)
        return serial_steps(p.scan, e, o, ns, nl, acc, carry), o

    # ------------------------------------------------------------ units
    def lanes(self, l0, nl: int) -> list:
        """One unit's walk of the scan axis over `nl` lanes at `l0`."""
        p = self.p
        full, tail = p.S // p.R, p.S % p.R
        k = B.v("k_")
        if p.scan.reverse:
            s0, ts0 = ir.BinOp("-", B.c(p.S - p.R), B.mul(k, p.R)), B.c(0)
        else:
            s0, ts0 = B.mul(k, p.R), B.c(p.S - tail)
        ident = identity(p.scan.op, p.cdt in FLOATS, None if p.cdt in FLOATS else "int32")
        acc = self.acc(nl)
        body = self.tile(B.c(0), p.R, l0, nl, "unit") + [ir.Assign(acc, B.c(ident))]
        if single_tile(p):   # the unit's loads first, then its computes, then its stores: pipelined across units
            # (a reverse scan in sub-segments lands its positions at the tile's end: the pads come last in its
            # order; the per-position operands are loaded once per core)
            self.shift = p.R - p.S if p.scan.reverse and subseg.subsegments(p, p.S, True, None, True) else 0
            if self.hoisted is None:   # (once: the same for every unit; no lane offset, they have no lane axis)
                self.hoisted = self.loads(B.c(0), p.S, B.c(0), nl, "core")
            steps = body[:-1] + self.tile(B.c(0), p.S, l0, nl, "tile")
            self.shift = 0
            load = lambda x: isinstance(x, ir.Move) and x.kind == "load"   # noqa: E731 (GDRAM reads: hoisted)
            last = max((i for i, x in enumerate(steps) if load(x)), default=-1)
            loads = [x for x in steps[:last + 1] if load(x)]        # (the per-unit operands' and the tile's,
            rest = [x for x in steps[:last + 1] if not load(x)]     # their widenings after)
            return loads + rest + body[-1:] + steps[last + 1:]
        if overlaps(p):
            s0, self.carry_row = overlap_walk(p, k)
            body.append(ir.For("k_", B.c(0), B.c(full + 1), tuple(self.tile(s0, p.R, l0, nl, "tile"))))
            self.carry_row = None
            return body
        if full:
            body.append(ir.For("k_", B.c(0), B.c(full), tuple(self.tile(s0, p.R, l0, nl, "tile"))))
        if tail:
            body += self.tile(ts0, tail, l0, nl, "tile")
        return body

    def unit_body(self, walk) -> tuple[list, list]:   # (the units' radix, one unit's body: walk(l0, lanes))
        p, l0 = self.p, B.mul(B.v("c_"), self.p.step)
        radix, wl = [(f"u_{v}", p.shape[v]) for v in p.units_vars] + [("c_", p.chunks)], \
            p.nlanes - (p.chunks - 1) * p.step
        if p.chunks == 1 or wl == p.step:
            return radix, walk(l0, min(p.step, p.nlanes))
        return radix, [ir.If(ir.BinOp("==", B.v("c_"), B.c(p.chunks - 1)), tuple(walk(l0, wl)),
                             tuple(walk(l0, p.step)))]

    def kernel(self) -> ir.Kernel:
        p = self.p
        if single_tile(p):
            return self.units_pipelined()
        radix, body = self.unit_body(self.lanes)
        return _unit_kernel(self.name, p.units, p.tasks, list(self.allocs.values()),
                            decode_units(radix, p.units, p.tasks, body))

    def units_pipelined(self) -> ir.Kernel:
        """Units of one tile each (`single_tile`), their loop pipelined (`pipeline=units`: the next unit's loads
        and the last one's stores beside a unit's computes) -- one loop over the units of whole lane chunks, one
        over those of the last, narrower chunk (a condition in the unit's body would stop the pipeline). A f16
        cumsum along rows of 527 at 12,320 rows (385 units of 32 lanes): 2.435x -> 1.377x the DMA roofline."""
        p = self.p
        self.hoisting, self.hoisted = True, None
        radix = [(f"u_{v}", p.shape[v]) for v in p.units_vars]
        wl = p.nlanes - (p.chunks - 1) * p.step
        whole = p.chunks if wl == p.step else p.chunks - 1
        loops, bodies = [], []
        if whole:
            units = p.n_other * whole
            bodies.append(self.lanes(B.mul(B.v("c_"), p.step), min(p.step, p.nlanes)))
            body = decode_units(radix + [("c_", whole)], units, p.tasks, bodies[-1])
            loops.append(ir.For("it_", B.c(0), unit_trips(units, p.tasks), tuple(body)))
        if whole < p.chunks:
            body = self.lanes(B.c(whole * p.step), wl)
            bodies.append(body)
            # its units go on from the task after the first loop's last one (task 0 took one more unit there)
            off = p.n_other * whole % p.tasks
            task = ir.BinOp("%", B.add(B.v("task_"), p.tasks - off), B.c(p.tasks)) if off else None
            if radix:
                body = decode_units(radix, p.n_other, p.tasks, body, task)
            else:   # (a one-trip loop: the unit's decoding)
                body = [ir.For("c_", B.c(0), B.c(1), tuple(body))]
            loops.append(ir.For("it_", B.c(0), unit_trips(p.n_other, p.tasks, task), tuple(body)))
        par = ir.Parallel("task_", B.c(0), B.c(p.tasks), ir.ParLevel.core,
                          tuple(self.allocs.values()) + tuple(self.hoisted or ()) + tuple(loops))
        attrs = (("task_dim", str(p.tasks)),) + ((("pipeline", "units"),) if all(map(_staged, bodies)) else ())
        return ir.Kernel(self.name, (par,), attrs)

    def nram_bytes(self) -> int:
        """NRAM of the allocs, loaded and stored tiles counted twice (pipeline slots)."""
        total = 0
        for n, a in self.allocs.items():
            slots = 1 + (n in self.loaded or n in self.stored) + (n in self.loaded and n in self.stored)
            b = L.phys_elems(a.type.shape) * L.device_nbytes(a.type.dtype) * slots
            total += L.round_up(b, L.VECTOR_ALIGN)
        return total


def _staged(body: list) -> bool:
    """Whether a unit's steps are its loads, then computes, then stores (what the software pipeline takes; a
    load after a compute -- a copy of a computed tile -- keeps the units in sequence)."""
    stage = 0
    for x in body:
        now = (2 if x.kind == "store" else 0) if isinstance(x, ir.Move) else 1
        if now < stage:
            return False
        stage = now
    return True


def raw_operand(scan, types: dict, cdt: ir.DType) -> str | None:
    """The tensor when the scan's operand E is one 16-bit tensor read as it is (at most widened to `cdt`): the long
    scans keep (and transpose) its landing tiles in 16 bits, half the bytes and vector units of the f32 tiles."""
    e = scan.arg
    while isinstance(e, ir.Call) and e.fn == cdt.value and len(e.args) == 1:
        e = e.args[0]
    if isinstance(e, ir.Ref) and types[e.name].dtype != cdt:
        return e.name
    return None


def _has_float(e, types) -> bool:
    return any((isinstance(x, ir.Ref) and types[x.name].dtype.is_float) or
               (isinstance(x, ir.Const) and isinstance(x.value, float)) for x in walk(e))


def _dense(kern: ir.Kernel, plan: _Plan) -> ir.Kernel:
    """Rows of whole 128-byte units need no padding: unpadded (`layout=dense`) tiles halve the widening, rounding
    and DMA work of a 32-lane f32 chunk (padded to 64 elements, half of every row op was pad)."""
    return dataclasses.replace(kern, attrs=tuple(kern.attrs) + (("layout", "dense"),)) if plan.dense else kern


