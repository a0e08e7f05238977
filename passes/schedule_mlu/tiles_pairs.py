"""Pair rotations on the MLU (rotary position embedding and other interleaved-pair maps): one pipelined kernel for

    y[v_1, .., v_m, k, t] = select(t == 0, E0, E1)            (t of extent 2: interleaved pairs, t == 1 likewise)

where E0 / E1 read `x[v_1, .., v_m, k, 0]` / `x[.., k, 1]` (the pair's two halves), tensors indexed like y, and
tables `c[v_b, k]` (one leading axis and k) or `c[k]`. RoPE: y = select(t == 0, x0 * cs - x1 * sn, x1 * cs + x0 *
sn). The general tile recipe (tiles.py) cannot read pinned pair halves: lanes here are the pairs' elements
themselves, interleaved as in memory, [k, t] -> lane 2k + t:

* the tile of x ([R rows, 2K lanes], one DMA) is also pair-swapped on chip (two strided NRAM-to-NRAM copies in the
  pipeline's load stage, on the IO pipe after the load: x_s[2k] = x[2k + 1], x_s[2k + 1] = x[2k]); at even lanes
  x[.., 0] is x and x[.., 1] is x_s, at odd lanes the other way round, so E0 is computed with (x, x_s) and E1
  with (x_s, x), each one vector op per element op over the whole tile, and y = select(even-lane mask, E0, E1);
* a table `c[v_b, k]` is loaded per block of v_b values and its elements doubled into lanes 2k and 2k + 1 (two
  strided copies); rows are (v_b, v_b+1.., v_m) flattened (x and y viewed as [A, V_b * H, 2K]: a reshape view, no
  data movement), so a tile is a block of Sb values of v_b times their H rows, and an op with the table is one
  cycled vector op per v_b value (`x[j*H:(j+1)*H, :] * c2[j, :]`).

Work units: (a point of the axes before v_b, a part of v_b's blocks), cyclic over the cores; each unit walks its
blocks in a pipelined loop (load + swap copies / compute / store), the v_b % Sb tail block after it. Pairs
interleaved along one flat even axis (rope_flat) are first rewritten into this form (tiles_pairs_flat.py).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.constfold import fold
from gir.passes.schedule_mlu.rowmodel import BINOPS
from gir.passes.schedule_mlu.tiles import FLOATS, NotTile
from gir.passes.schedule_mlu.tiles_pairs_blocks import choose_block
from gir.passes.schedule_mlu.tiles_pairs_flat import flat_pairs
from gir.walk import stmt_exprs, walk, walk_stmts

F32 = ir.DType.f32
ARITH = {"+": "+", "-": "-", "*": "*", "/": "/"}
TILE_BYTES = 128 * 1024      # x rows per block (f32 working tile): few DMAs, each paying a 500-cycle latency
UNIT_TABLE_BYTES = 64 * 1024  # a unit's table rows loaded once per unit when they fit (else per block)
NRAM_BUDGET = 720 * 1024


@dataclasses.dataclass
class Pairs:
    y: str
    lead: list              # leading index variables v_1..v_m
    k: str
    t: str
    even: ir.Expr
    odd: ir.Expr
    pairs: set              # tensors read by pair halves (x[.., k, 0|1])
    full: set               # tensors read like y (t as an index)
    tables: dict            # table name -> the leading variable it depends on (None: c[k])
    block: int              # position of v_b among the leading variables (0 when no table depends on one)
    types: dict


def match(spec: ir.Func, info) -> Pairs:
    if len(info.stmts) != 1 or len(spec.results) != 1:
        raise NotTile("not one statement")
    st = info.stmts[0].stmt
    types = dict(info.types)
    idx = st.target.index
    if len(idx) < 3 or any(not isinstance(i, ir.Var) for i in idx):
        raise NotTile("not a pair map")
    names = [i.name for i in idx]
    lead, k, t = names[:-2], names[-2], names[-1]
    shape = types[st.target.name].shape
    if shape[-1] != 2:
        raise NotTile("the last axis is not a pair")
    v = st.value
    if not (isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3):
        raise NotTile("not a select on the pair index")
    c = v.args[0]
    if not (isinstance(c, ir.BinOp) and c.op in ("==", "!=")):
        raise NotTile("not a select on the pair index")
    lhs, rhs = (c.lhs, c.rhs) if isinstance(c.lhs, ir.Var) else (c.rhs, c.lhs)
    if not (isinstance(lhs, ir.Var) and lhs.name == t and isinstance(rhs, ir.Const) and rhs.value in (0, 1)
            and not isinstance(rhs.value, bool)):
        raise NotTile("not a select on the pair index")
    first = (rhs.value == 0) == (c.op == "==")       # whether args[1] is taken at even lanes
    even, odd = (v.args[1], v.args[2]) if first else (v.args[2], v.args[1])
    p = Pairs(st.target.name, lead, k, t, even, odd, set(), set(), {}, 0, types)
    for e in (even, odd):
        _scan(e, p, shape)
    if any(types[n].dtype not in FLOATS for n in types):
        raise NotTile("non-float tensors")
    deps = {d for d in p.tables.values() if d is not None}
    if len(deps) > 1:
        raise NotTile("tables depend on different axes")
    p.block = lead.index(deps.pop()) if deps else 0
    if not lead:
        raise NotTile("no leading axis")
    return p


def _scan(e, p: Pairs, shape) -> None:
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool):
            raise NotTile("a boolean constant")
        return
    if isinstance(e, ir.Var):
        raise NotTile("an index used as a value")
    if isinstance(e, ir.Ref):
        ix = e.index
        vs = [i.name if isinstance(i, ir.Var) else None for i in ix]
        if len(ix) == len(p.lead) + 2 and vs[:-1] == p.lead + [p.k] and p.types[e.name].shape == shape:
            last = ix[-1]
            if isinstance(last, ir.Const) and last.value in (0, 1) and not isinstance(last.value, bool):
                p.pairs.add(e.name)
                return
            if vs[-1] == p.t:
                p.full.add(e.name)
                return
        if all(v is not None for v in vs) and vs and vs[-1] == p.k and len(vs) <= 2 and \
                (len(vs) == 1 or vs[0] in p.lead):
            dep = vs[0] if len(vs) == 2 else None
            if p.tables.get(e.name, dep) != dep:
                raise NotTile("a table read two ways")
            p.tables[e.name] = dep
            return
        raise NotTile(f"'{e.name}' is read in a form the pair recipe does not take")
    if isinstance(e, ir.BinOp):
        if e.op not in BINOPS:
            raise NotTile(f"operator {e.op}")
        _scan(e.lhs, p, shape)
        _scan(e.rhs, p, shape)
        return
    if isinstance(e, ir.UnOp):
        if e.op != "-":
            raise NotTile("logical not")
        _scan(e.operand, p, shape)
        return
    if isinstance(e, ir.Call) and (e.fn in ir.UNARY_FUNCS or e.fn in ("max", "min", "pow", "f32")):
        for a in e.args:
            _scan(a, p, shape)
        return
    raise NotTile("an expression the pair recipe does not take")


# ------------------------------------------------------------------------------------------------ kernel
class _Build:
    def __init__(self, p: Pairs, name: str, sb: int, tasks: int):
        self.p, self.name, self.tasks = p, name, tasks
        ext = dict(zip(p.lead + [p.k], p.types[p.y].shape[:-1]))
        self.K = ext[p.k]
        self.W = 2 * self.K
        self.A = 1
        for v in p.lead[:p.block]:
            self.A *= ext[v]
        self.VB = ext[p.lead[p.block]]
        self.H = 1
        for v in p.lead[p.block + 1:]:
            self.H *= ext[v]
        self.sb = sb
        self.R = sb * self.H
        self.allocs: dict[str, ir.Alloc] = {}
        self.count = 0
        self.memo: dict = {}

    def alloc(self, name, dt, shape):
        if name not in self.allocs:
            self.allocs[name] = B.alloc(name, dt, shape, "nram")
        return name

    def full(self, name, nr):
        return B.ref(name, B.sl(0, nr), B.sl(0, self.W))

    # ------------------------------------------------------------ views
    def viewed(self, prm: ir.Param) -> ir.Param:
        """x / y as [A, VB * H, 2K] (tables keep their shapes)."""
        p = self.p
        if prm.name not in p.pairs | p.full | {p.y}:
            return prm
        shape = (self.A, self.VB * self.H, self.W)
        outer = prm.view.outer if prm.view is not None else prm.type
        return dataclasses.replace(prm, type=ir.TensorType(prm.type.dtype, shape),
                                   view=ir.View(outer, tuple(ir.Const(n) for n in shape)))

    # ------------------------------------------------------------ one block of sb v_b values
    def tables(self, vb0, nrows: int, trows: int) -> tuple[list, list]:
        """(moves, computes) bringing rows vb0..vb0 + nrows of every c[v_b, k] table into [trows, 2K] tiles,
        each element doubled into lanes 2k and 2k + 1."""
        p, W, K = self.p, self.W, self.K
        moves, comps = [], []
        for n, dep in sorted(p.tables.items(), key=lambda kv: kv[0]):
            if dep is None:
                continue
            dt = p.types[n].dtype
            src = self.alloc(f"{n}_l", dt, (trows, max(2, K)))
            dup = self.alloc(f"{n}_dh" if dt != F32 else f"{n}_d", dt, (trows, W))
            moves.append(B.move("load", B.ref(src, B.sl(0, nrows), B.sl(0, K)),
                                B.ref(n, B.sl(vb0, nrows), B.sl(0, K))))
            for par in (0, 1):   # each table element into lanes 2k and 2k + 1
                moves.append(B.move("copy", B.ref(dup, B.sl(0, nrows), ir.Slice(B.c(par), B.c(W), 2)),
                                    B.ref(src, B.sl(0, nrows), B.sl(0, K))))
            if dt != F32:
                comps.append(ir.Assign(B.ref(self.alloc(f"{n}_d", F32, (trows, W)), B.sl(0, nrows), B.sl(0, W)),
                                       ir.Call("f32", (B.ref(dup, B.sl(0, nrows), B.sl(0, W)),))))
        return moves, comps

    def block(self, a, vb0, sb: int, trow=None) -> tuple[list, list, list]:
        """One block of sb values of v_b at vb0; `trow`: the block's first row in the unit's table tiles (None:
        the tables are loaded with the block)."""
        p, W = self.p, self.W
        nr = sb * self.H
        loads, comps, stores = [], [], []
        r0 = B.mul(vb0, self.H)
        self.trow = trow if trow is not None else B.c(0)
        self.count = 0   # every block names its temporaries alike (the tail block and the parts share tiles)
        for n in sorted(p.pairs | p.full):
            dt = p.types[n].dtype
            land = self.alloc(f"{n}_h" if dt != F32 else f"{n}_t", dt, (self.R, W))
            loads.append(B.move("load", self.full(land, nr), B.ref(n, a, B.sl(r0, nr), B.sl(0, W))))
            if n in p.pairs:   # the pair-swapped tile: x_s[2k] = x[2k + 1], x_s[2k + 1] = x[2k]
                sw = self.alloc(f"{n}_sh" if dt != F32 else f"{n}_s", dt, (self.R, W))
                loads.append(B.move("copy", B.ref(sw, B.sl(0, nr), ir.Slice(B.c(0), B.c(W), 2)),
                                    B.ref(land, B.sl(0, nr), ir.Slice(B.c(1), B.c(W), 2))))
                loads.append(B.move("copy", B.ref(sw, B.sl(0, nr), ir.Slice(B.c(1), B.c(W), 2)),
                                    B.ref(land, B.sl(0, nr), ir.Slice(B.c(0), B.c(W), 2))))
                if dt != F32:
                    comps.append(ir.Assign(self.full(self.alloc(f"{n}_s", F32, (self.R, W)), nr),
                                           ir.Call("f32", (self.full(sw, nr),))))
            if dt != F32:
                comps.append(ir.Assign(self.full(self.alloc(f"{n}_t", F32, (self.R, W)), nr),
                                       ir.Call("f32", (self.full(land, nr),))))
        if trow is None:
            m, c = self.tables(vb0, sb, self.sb)
            loads += m
            comps += c
        self.memo = {}
        ev = self.expr(p.even, 0, comps, sb)
        od = self.expr(p.odd, 1, comps, sb)
        if "table" in (ev[0], od[0]):
            raise NotTile("a pair half that is a table alone")
        renamed, m = _reuse(comps, {x for k, x in (ev, od) if k == "full"})
        comps[:] = renamed
        ev, od = ((k, m.get(x, x) if k == "full" else x) for k, x in (ev, od))
        ydt = p.types[p.y].dtype
        # y in the first pair tensor's working tile (dead by now: loaded and stored, three pipeline slots)
        x0 = sorted(p.pairs | p.full)[0]
        out = self.full(f"{x0}_t", nr)
        comps.append(ir.Assign(out, ir.Call("select", (self.full("mskf_", nr), self.value(ev, nr),
                                                        self.value(od, nr)))))
        if ydt != F32:
            h = self.full(self.alloc("y_h", ydt, (self.R, W)), nr)
            comps.append(ir.Assign(h, ir.Call(ydt.value, (out,))))
            out = h
        stores.append(B.move("store", B.ref(p.y, a, B.sl(r0, nr), B.sl(0, W)), out))
        return loads, comps, stores

    def value(self, v, nr):
        kind, x = v
        if kind == "const":
            return x
        if kind == "col":
            return B.ref(x, B.sl(0, self.W))
        return self.full(x, nr)

    def expr(self, e, parity: int, out: list, sb: int):
        """(kind, tile name | Const): kind full (a [nr, 2K] tile), table (a [sb, 2K] tile, one row per v_b
        value), col (a [2K] vector), const."""
        p = self.p
        nr = sb * self.H
        if isinstance(e, ir.Const):
            return "const", B.c(float(e.value))
        if isinstance(e, ir.Ref):
            if e.name in p.pairs:
                c = e.index[-1].value
                return "full", f"{e.name}_t" if c == parity else f"{e.name}_s"
            if e.name in p.full:
                return "full", f"{e.name}_t"
            return ("table", f"{e.name}_d") if p.tables[e.name] is not None else ("col", f"{e.name}_c")
        if isinstance(e, ir.Call) and e.fn == "f32":
            return self.expr(e.args[0], parity, out, sb)
        if isinstance(e, ir.UnOp):
            args, fn = [e.operand], "neg"
        elif isinstance(e, ir.BinOp):
            args, fn = [e.lhs, e.rhs], e.op
        else:
            args, fn = list(e.args), e.fn
        vals = [self.expr(a, parity, out, sb) for a in args]
        key = (fn, tuple((k, x if isinstance(x, str) else float(x.value)) for k, x in vals))
        if key in self.memo:
            return self.memo[key]
        kinds = {k for k, _ in vals}
        if kinds <= {"const"}:
            value = fold(BINOPS.get(fn, fn), [float(x.value) for _, x in vals])   # (constfold.py)
            if value is None:
                raise NotTile("a constant expression")
            return "const", B.c(value)
        self.count += 1
        if kinds <= {"col", "const"}:
            res = "col", self.alloc(f"c{self.count}_", F32, (max(2, self.W),))
            dst = B.ref(res[1], B.sl(0, self.W))
            out.append(ir.Assign(dst, self._build(fn, [self.value(v, nr) for v in vals])))
        elif "table" in kinds and "full" not in kinds:
            raise NotTile("an op on tables alone")   # (computed per element instead: kept simple)
        else:
            res = "full", self.alloc(f"f{self.count}_", F32, (self.R, self.W))
            if "table" in kinds and self.H == 1:   # a table row per tile row: whole-tile ops
                ops = [B.ref(x, B.sl(self.trow, nr), B.sl(0, self.W)) if k == "table" else self.value((k, x), nr)
                       for k, x in vals]
                out.append(ir.Assign(self.full(res[1], nr), self._build(fn, ops)))
            elif "table" in kinds:   # one cycled op per v_b value: rows j*H..(j+1)*H with the table's row j
                j = B.v("j_")
                rows = B.sl(B.mul(j, self.H), self.H)
                ops = [B.ref(x, B.add(self.trow, j) if not (isinstance(self.trow, ir.Const) and
                                                            self.trow.value == 0) else j, B.sl(0, self.W))
                       if k == "table" else
                       B.ref(x, rows, B.sl(0, self.W)) if k == "full" else self.value((k, x), nr) for k, x in vals]
                out.append(ir.For("j_", B.c(0), B.c(sb), (ir.Assign(B.ref(res[1], rows, B.sl(0, self.W)),
                                                                    self._build(fn, ops)),)))
            else:
                out.append(ir.Assign(self.full(res[1], nr), self._build(fn, [self.value(v, nr) for v in vals])))
        self.memo[key] = res
        return res

    @staticmethod
    def _build(fn, args):
        if fn in ARITH:
            return ir.BinOp(fn, *args)
        if fn == "neg":
            return ir.UnOp("-", args[0])
        if fn in BINOPS and fn not in ("max", "min", "pow"):
            return ir.BinOp(fn, *args)
        return ir.Call(fn, tuple(args))


def pair_schedule(spec: ir.Func, info, tasks: int = 32) -> ir.Func:
    """The scheduled function of a pair map (x / y viewed as [A, V_b * H, 2K]), or NotTile."""
    try:
        p = match(spec, info)
    except NotTile:   # pairs interleaved along a flat last axis: the same, through [.., D / 2, 2] views
        from gir.shapes import func_info
        spec = flat_pairs(spec, info)
        try:
            info = func_info(spec)
        except Exception:
            raise NotTile("not a pair map") from None
        p = match(spec, info)
    probe = _Build(p, f"{spec.name}_mlu", 1, tasks)
    row_bytes = probe.H * L.pitch((1, probe.W)) * 4
    return choose_block(probe.VB, max(1, min(probe.VB, TILE_BYTES // max(1, row_bytes))),
                        lambda sb: _kernel(p, spec, sb, tasks), NRAM_BUDGET)


def balanced_parts(units: int, nblk: int, tail: float, block_bytes: float, unit_dmas: int,
                   tasks: int) -> tuple[int, int]:
    """(blocks per part, parts) cutting each of `units` runs of `nblk` blocks (and `tail` of a block after the last)
    into parts, units x parts cyclic over the cores: the split whose busiest core moves the fewest bytes, a part
    of K blocks counted as K + 1 (its blocks run in one pipelined loop whose first load and last store overlap
    nothing: indexops._split) and its `unit_dmas` unpipelined DMAs (tables, the pipeline's ends) as the bytes a
    core moves during their latencies; more parts only for a gain above 1%. Three batches on 32 cores cut into 11
    parts each made 33 units, one core running two (RoPE at B=3 1.56x the DMA roofline); 32 parts make 96. Without
    the + 1, 48 batches of 2 blocks were cut into one-block parts (1.310x -> 1.562x)."""
    import numpy as np
    from gir.passes.schedule_mlu.indexops import latency_bytes
    lat = unit_dmas * latency_bytes(tasks)
    best = None
    for want in range(1, min(nblk, 4 * tasks) + 1):
        bp = -(-nblk // want)
        parts = -(-nblk // bp)
        if best is not None and parts == best[2]:
            continue
        size = np.full(units * parts, (bp + 1) * block_bytes + lat)
        size[parts - 1::parts] = (nblk - (parts - 1) * bp + tail + 1) * block_bytes + lat
        t = np.bincount(np.arange(units * parts) % tasks, size, tasks).max()
        if best is None or t < best[0] * 0.99:
            best = (t, bp, parts)
    return best[1], best[2]


def _kernel(p: Pairs, spec: ir.Func, sb: int, tasks: int):
    from gir.passes.schedule_mlu.tiles_builder import _kernel as kernel_of, _unit_loop, decode_loops
    from gir.passes.schedule_mlu.tiles_nram import footprint
    b = _Build(p, f"{spec.name}_mlu", sb, tasks)
    nblk, tail = b.VB // sb, b.VB % sb
    bp, parts = balanced_parts(b.A, nblk, tail / sb, b.H * b.W * 4 * 2 * sb,
                               2 + len(p.tables), tasks) if nblk else (0, 1)
    W, K = b.W, b.K
    trows = max(bp * sb, b.VB - (parts - 1) * bp * sb)
    pre: list = []
    # the even-lane mask (1 at lanes 2k), and c[k] tables doubled into lanes 2k, 2k + 1: once per core
    b.alloc("msk_", F32, (max(2, W),))
    b.alloc("one_", F32, (max(2, K),))
    b.alloc("mskf_", F32, (b.R, W))   # the mask over a whole tile: selects need no broadcast per tile
    pre += [ir.Assign(B.ref("one_", B.sl(0, K)), B.c(1.0)), ir.Assign(B.ref("msk_", B.sl(0, W)), B.c(0.0)),
            B.move("copy", B.ref("msk_", ir.Slice(B.c(0), B.c(W), 2)), B.ref("one_", B.sl(0, K))),
            ir.Assign(B.ref("mskf_", B.sl(0, b.R), B.sl(0, W)), B.ref("msk_", B.sl(0, W)))]
    for n, dep in sorted(p.tables.items(), key=lambda kv: kv[0]):
        if dep is not None:
            continue
        dt = p.types[n].dtype
        land = b.alloc(f"{n}_lc", dt, (max(2, K),))
        pre.append(B.move("load", B.ref(land, B.sl(0, K)), B.ref(n, B.sl(0, K))))
        lc = b.alloc(f"{n}_c", F32, (max(2, W),))
        if dt != F32:
            wide = b.alloc(f"{n}_lw", F32, (max(2, K),))
            pre.append(ir.Assign(B.ref(wide, B.sl(0, K)), ir.Call("f32", (B.ref(land, B.sl(0, K)),))))
            land = wide
        for par in (0, 1):
            pre.append(B.move("copy", B.ref(lc, ir.Slice(B.c(par), B.c(W), 2)), B.ref(land, B.sl(0, K))))

    per_unit = any(d is not None for d in p.tables.values()) and \
        max(bp * sb, b.VB - (parts - 1) * bp * sb) * L.pitch((1, W)) * 4 <= UNIT_TABLE_BYTES

    def unit(idx) -> list:
        a, q = idx["a"], idx["part"]
        out: list = []
        first = B.mul(B.mul(q, bp), sb) if parts > 1 else B.c(0)   # the unit's first v_b

        def loop(count):
            if not count:
                return []
            vb0 = B.mul(B.add(B.mul(q, bp), B.v("k_")), sb) if parts > 1 else B.mul(B.v("k_"), sb)
            ld, cp, st = b.block(a, vb0, sb, B.mul(B.v("k_"), sb) if per_unit else None)
            return [ir.For("k_", B.c(0), B.c(count), tuple(ld + cp + st))]

        def tables(rows):   # the unit's table rows, once (not per block)
            if not per_unit:
                return []
            m, c = b.tables(first, rows, trows)
            return m + c
        last = tables(b.VB - (parts - 1) * bp * sb) + loop(nblk - (parts - 1) * bp)
        if tail:
            ld, cp, st = b.block(a, B.c(b.VB - tail), tail,
                                 B.c(b.VB - tail - (parts - 1) * bp * sb) if per_unit else None)
            last += ld + cp + st
        if parts == 1 or (not tail and nblk == parts * bp):
            out += last
        else:
            out.append(ir.If(ir.BinOp("==", q, B.c(parts - 1)), tuple(last), tuple(tables(bp * sb) + loop(bp))))
        return out

    loops = _unit_loop("it_", b.A * parts, tasks, 0,
                       lambda u: decode_loops(None, u, [("a", b.A), ("part", parts)], unit))
    body = pre + loops
    used = _referenced(body)   # (temporaries `_reuse` folded into others' tiles take no NRAM)
    kern = kernel_of(f"{spec.name}_mlu", tasks, [a for n, a in b.allocs.items() if n in used], body, False)
    params = tuple(b.viewed(x) for x in spec.params)
    results = tuple(b.viewed(x) for x in spec.results)
    func = dataclasses.replace(spec, params=params, results=results, body=(kern,))
    return func, footprint(func, [kern])


def _referenced(body: list) -> set:
    """Names of the tensors the statements of `body` read or write."""
    return {x.name for s in walk_stmts(body) for e in stmt_exprs(s) for x in walk(e) if isinstance(x, ir.Ref)}


def _rename(e, m: dict):
    if isinstance(e, ir.Ref):
        return dataclasses.replace(e, name=m.get(e.name, e.name))
    if isinstance(e, ir.BinOp):
        return dataclasses.replace(e, lhs=_rename(e.lhs, m), rhs=_rename(e.rhs, m))
    if isinstance(e, ir.UnOp):
        return dataclasses.replace(e, operand=_rename(e.operand, m))
    if isinstance(e, ir.Call):
        return dataclasses.replace(e, args=tuple(_rename(a, m) for a in e.args))
    if isinstance(e, ir.Assign):
        return dataclasses.replace(e, target=_rename(e.target, m), value=_rename(e.value, m))
    if isinstance(e, ir.For):
        return dataclasses.replace(e, body=tuple(_rename(x, m) for x in e.body))
    return e


def _refs_of(x) -> list:
    from gir.shapes import _walk
    if isinstance(x, ir.For):
        return [r for y in x.body for r in _refs_of(y)]
    return [r.name for r in _walk(x.value) if isinstance(r, ir.Ref)]


def _reuse(comps: list, live_out: set) -> list:
    """Full temporaries (`f<n>_`) share tiles by liveness: a temporary is computed into the tile of one that
    died (in place when its operand dies there); `live_out` stay live to the end."""
    def target(x):
        return (x.body[0] if isinstance(x, ir.For) else x).target.name
    last: dict = {}
    for i, x in enumerate(comps):
        for n in _refs_of(x):
            last[n] = i
    m: dict = {}
    free: list = []
    out = []
    for i, x in enumerate(comps):
        t = target(x) if isinstance(x, (ir.Assign, ir.For)) else None
        dying = [n for n in dict.fromkeys(_refs_of(x)) if n.startswith("f") and n.endswith("_") and last.get(n) == i
                 and n not in live_out and n != t]
        for n in dying:
            free.append(m.get(n, n))
        if t is not None and t.startswith("f") and t.endswith("_") and t not in m and free:
            m[t] = free.pop(0)
        out.append(_rename(x, m))
    return out, m
