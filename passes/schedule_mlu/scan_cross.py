"""Scans along the last axis and along the axis before it, sharing their operands, in one MLU kernel.

samples/cumsum.gir scans x along its rows (`c = cumsum(x * w[j], j)`, `p = cumprod(1 + 0.01 x, j, reverse=1)`,
a scan group: scan_group.py) and down its columns (`r = cummax(x, i, reverse=1)`): run as two kernels, x is read
twice (2,039 x 2,039: 1.560x the DMA roofline). The scan group's unit is a band of rows (lanes i of the rows
layout) walked in tiles along j, forward then back (the tiles kept in SRAM between the walks). A *column member*
-- a scan along i -- rides along:

- on the forward walk it folds each tile's rows into the band's column totals and stores them in a GDRAM array
  `<kernel>_tot<k>[other axes..., bands, positions]` (one per column member);
- between the walks, two `sync @all` around the carries: each task takes a slice of the positions (whole vector
  units) and walks the bands in scan order, replacing every band's totals by its carry (the combination of the
  bands before it; after it when reverse) -- each task reads 1/32 of the totals instead of all of them (at
  2,039^2 the totals read by every band were 8.4 MB, 13% of the compulsory bytes). The kernel is split around
  the barriers: a task walks all its bands (unit loop `it_`) before them and all again after them; SRAM keeps
  each band's tiles in a part of its own, and the walk back of a band starts afresh (`between`: per-unit
  operands loaded again, carries reset) when a task has several;
- on the walk back it loads its band's carry row for the tile's columns and scans the band's rows from it
  (scan_steps.py's row steps over the untransposed tile: one vector op per row across the tile's columns,
  computed over whole vector units), then stores the result.

Row members run as in the scan group. A column member's operand is computed on the tiles as the row members' are
(the member is planned as if it scanned along j, for the tile shapes; its own scan -- op, direction, exclusive --
is kept apart). Lane chunks widened until the bands do not outnumber the cores (one band each) and, for rows off
the 64-byte granule or where that does not fit, narrower chunks with several bands per task are the candidates
(`_build`: the cost model picks). The cost model's segment split decides whether the fused kernel runs
(segments.py).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.passes.builtin.exprs import substitute_vars
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.scan import FLOATS, FULL, _Plan
from gir.passes.schedule_mlu.scan_group import _Group, _key, _share, sized
from gir.passes.schedule_mlu.scan_steps import OPS, comb, serial_steps
from gir.scan import identity, is_scan, scan_of
from gir.walk import walk


class _Cross(_Group):
    """The scan group's kernel with column members (`cols`: index -> the member's own ScanParts)."""

    def __init__(self, plans: list[_Plan], cols: dict, types: dict, name: str, tot: str):
        super().__init__(plans, types, name)
        self.cols, self.tot = cols, tot
        self.bands = -(-plans[0].units // plans[0].tasks)   # (bands a task walks: between() and scan_sram.py)
        rows = [i for i in range(len(plans)) if i not in cols]
        self._fwd = [i for i in rows if not plans[i].scan.reverse] + sorted(cols)
        self._rev = [i for i in rows if plans[i].scan.reverse] + sorted(cols)

    def directions(self) -> tuple[list[int], list[int]]:
        if not hasattr(self, "_fwd"):   # (before __init__ has set them)
            return super().directions()
        return self._fwd, self._rev

    def reverse(self) -> list[int]:
        return self._rev

    def between(self, l0, nl: int) -> list:
        """The barrier; a task walking several bands (`bands` > 1) starts the walk back of each afresh (its
        per-unit operands loaded again, the carries reset: the next band's phase 1 overwrote them)."""
        return [ir.Sync(ir.ParLevel.all)] + (self.unit_start(l0, nl) if self.bands > 1 else [])

    def loads(self, s0, ns: int, l0, nl: int, stage: str, widen: bool = True) -> list:
        steps = super().loads(s0, ns, l0, nl, stage, widen)
        self.n_loads = len(steps)
        return steps

    def tot_name(self, i: int) -> str:
        """The GDRAM array of column member i's band totals (then carries)."""
        return f"{self.tot}{sorted(self.cols).index(i)}"

    def tot_ref(self, i: int, bands, s0, ns: int) -> ir.Ref:
        p = self.p
        return ir.Ref(self.tot_name(i), tuple(B.v(f"u_{v}") for v in p.units_vars) + (bands, B.sl(s0, ns)))

    def tile_all(self, s0, ns: int, l0, nl: int, members: list[int]) -> list:
        """The group's tile of the row members with the column members' steps: their computes before the row
        members' (a row member's scan may overwrite a landed tile they read); loads, computes, stores in order."""
        back = members is self._rev
        group = super().tile_all(s0, ns, l0, nl, [i for i in members if i not in self.cols])   # (loads first)
        n_loads = self.n_loads   # (the loads, SRAM copies and widenings of the landed tiles: loads())
        loads, computes, stores = [], [], []
        for i in (i for i in members if i in self.cols):
            self.member(i)
            self.count = 0
            scan, p = self.cols[i], self.p
            op, wide = OPS[scan.op], L.round_up(ns, L.PITCH)   # (computes over whole vector units of the row)
            ev = self.expr(p.scan.arg, computes, nl, wide)
            if not (isinstance(ev, ir.Ref) and self._tile_kind(ev) == FULL):
                t = self.region(self.alloc("ev_", p.cdt, self.shape_of(FULL)), FULL, nl, wide)
                computes.append(ir.Assign(t, ev))
                ev = t
            row = lambda q: ir.Ref(ev.name, (q, B.sl(0, wide)))   # noqa: E731
            vec = lambda t, n: B.ref(self.alloc(f"s{i}_{t}_", p.cdt, (max(2, p.R),)), B.sl(0, n))   # noqa: E731
            if not back:   # the band's column totals
                tt = vec("tt", wide)
                computes.append(ir.Assign(tt, row(B.c(0))))
                if nl > 1:
                    computes.append(ir.For("q_", B.c(1), B.c(nl), (ir.Assign(tt, comb(op, tt, row(B.v("q_")))),)))
                stores.append(B.move("store", self.tot_ref(i, B.v("c_"), s0, ns), vec("tt", ns)))
                self.stored.add(tt.name)
                continue
            tl = vec("tl", ns)   # the band's carry row (carries())
            loads.append(B.move("load", tl, self.tot_ref(i, B.v("c_"), s0, ns)))
            self.loaded.add(tl.name)
            acc = vec("ca", wide)
            computes.append(ir.Assign(acc, vec("tl", wide)))
            o = self.alloc(f"s{i}_oc_", p.cdt, self.shape_of(FULL))
            computes += serial_steps(scan, ev.name, o, nl, wide, acc)   # (into a tile of its own: ev may be landed)
            for x in self.store(o, s0, ns, l0, nl):
                (stores if isinstance(x, ir.Move) else computes).append(x)
        self.member(0)
        moves = next((k for k, x in enumerate(group) if not isinstance(x, ir.Move)), len(group))
        moves = min(moves, n_loads)
        # the carry rows' loads with the other moves, before any widening (the software pipeline takes moves
        # first); the column members' computes before the group's, their stores after the group's
        return group[:moves] + loads + group[moves:n_loads] + computes + group[n_loads:] + stores

    def kernel(self) -> ir.Kernel:
        """The group's unit loop split around the barrier between the walks, the carries computed between two
        barriers there (module docstring)."""
        before, after = _split([self.unit_loop()])
        carries = [ir.Sync(ir.ParLevel.all)] + self.carries() + [ir.Sync(ir.ParLevel.all)]
        par = self.scope(tuple(self.allocs.values()), tuple(before + carries + after))
        return ir.Kernel(self.name, (par,), (("task_dim", str(self.p.tasks)),))

    def carries(self) -> list:
        """Each band's carry of every column member, in place of its totals: each task takes a slice of the
        columns and walks the bands in scan order (one vector op per band and member), for every point of the
        other axes."""
        p = self.p
        cs = L.round_up(-(-p.S // p.tasks), L.PITCH)   # (whole vector units)
        slices, last = -(-p.S // cs), p.S - (-(-p.S // cs) - 1) * cs
        task = self.task() or B.v("task_")
        s0 = B.mul(task, cs)

        def one(n: int) -> list:
            steps = []
            for i, scan in sorted(self.cols.items()):
                q, op = self.plans[i], OPS[scan.op]
                tot = self.alloc(f"s{i}_tk_", q.cdt, (max(2, p.chunks), cs))
                out = self.alloc(f"s{i}_ok_", q.cdt, (max(2, p.chunks), cs))
                acc = B.ref(self.alloc(f"s{i}_ak_", q.cdt, (cs,)), B.sl(0, cs))
                row = lambda t, b: ir.Ref(t, (b, B.sl(0, cs)))   # noqa: E731
                band = ir.BinOp("-", B.c(p.chunks - 1), B.v("q_")) if scan.reverse else B.v("q_")
                ident = identity(scan.op, q.cdt in FLOATS, None if q.cdt in FLOATS else "int32")
                region = B.ref(tot, B.sl(0, p.chunks), B.sl(0, n))
                steps += [B.move("load", region, self.tot_ref(i, B.sl(0, p.chunks), s0, n)),
                          ir.Assign(acc, B.c(ident)),
                          ir.For("q_", B.c(0), B.c(p.chunks), (ir.Assign(row(out, band), acc),
                                                               ir.Assign(acc, comb(op, acc, row(tot, band))))),
                          B.move("store", self.tot_ref(i, B.sl(0, p.chunks), s0, n),
                                 B.ref(out, B.sl(0, p.chunks), B.sl(0, n)))]
            for v in reversed(p.units_vars):
                steps = [ir.For(f"u_{v}", B.c(0), B.c(p.shape[v]), tuple(steps))]
            return steps
        if last == cs:
            return [ir.If(ir.BinOp("<", task, B.c(slices)), tuple(one(cs)), ())]
        return [ir.If(ir.BinOp("<", task, B.c(slices - 1)), tuple(one(cs)), ()),
                ir.If(ir.BinOp("==", task, B.c(slices - 1)), tuple(one(last)), ())]


def _split(stmts: list) -> tuple[list, list]:
    """(the statements before the `sync @all` nested in `stmts`, those after), every loop and condition around
    it repeated on both sides (one-trip unit loops; both branches of a condition hold it)."""
    for k, s in enumerate(stmts):
        if isinstance(s, ir.Sync) and s.level == ir.ParLevel.all:
            return list(stmts[:k]), list(stmts[k + 1:])
        if isinstance(s, ir.For) and _holds(s.body):
            a, b = _split(list(s.body))
            return list(stmts[:k]) + [dataclasses.replace(s, body=tuple(a))], \
                [dataclasses.replace(s, body=tuple(b))] + list(stmts[k + 1:])
        if isinstance(s, ir.If) and (_holds(s.then) or _holds(s.orelse or ())):
            (ta, tb), (ea, eb) = _split(list(s.then)), _split(list(s.orelse or ()))
            return list(stmts[:k]) + [dataclasses.replace(s, then=tuple(ta), orelse=tuple(ea))], \
                [dataclasses.replace(s, then=tuple(tb), orelse=tuple(eb))] + list(stmts[k + 1:])
    return list(stmts), []


def _holds(stmts) -> bool:
    for s in stmts:
        if isinstance(s, ir.Sync) and s.level == ir.ParLevel.all:
            return True
        if isinstance(s, ir.For) and _holds(s.body):
            return True
        if isinstance(s, ir.If) and (_holds(s.then) or _holds(s.orelse or ())):
            return True
    return False


def _one_band_each(p: _Plan, cands=(64, 128, 256)) -> bool:
    """Lane chunks widened (balanced: `step` lanes in W-wide buffers) until the bands do not outnumber the cores;
    False when no chunk of at most 256 lanes does."""
    if p.units <= p.tasks:
        return True
    per = p.tasks // p.n_other
    if per < 1:
        return False
    step = -(-p.nlanes // per)
    w = next((c for c in cands if c >= step), None)
    if w is None:
        return False
    p.W, p.step, p.chunks = w, step, -(-p.nlanes // step)
    p.units = p.n_other * p.chunks
    p.dense = p.W * L.device_nbytes(p.cdt) % L.VECTOR_ALIGN == 0
    return p.units <= p.tasks


def cross_items(spec: ir.Func, info, tasks: int = 32, remarks=None, allow_sram: bool = True) -> list | None:
    """[a totals array per column member, the kernel] of a function whose statements are scans of one shape and
    compute type, along its last axis (one or more) and along the axis before it (one or more), none reading
    another's result (module docstring); None when they do not form one."""
    stmts = [s.stmt for s in info.stmts]
    if len(stmts) < 2 or not all(is_scan(s.value) for s in stmts) or not allow_sram:
        return None
    made = {s.target.name for s in stmts}
    if any(isinstance(x, ir.Ref) and x.name in made for s in stmts for x in walk(s.value)):
        return None
    types = dict(info.types)
    keys = [_key(s, types) for s in stmts]
    if None in keys or len({(k[0], k[2]) for k in keys}) > 1:
        return None
    rank = len(keys[0][0])
    if rank < 2 or {k[1] for k in keys} != {rank - 1, rank - 2}:
        return None
    lead = [i.name for i in stmts[[k[1] for k in keys].index(rank - 1)].target.index]
    plans, cols = [], {}
    try:
        for n, s in enumerate(stmts):
            ren = {i.name: ir.Var(v) for i, v in zip(s.target.index, lead)}
            s = dataclasses.replace(s, target=substitute_vars(s.target, ren), value=substitute_vars(s.value, ren))
            if keys[n][1] == rank - 2:   # a column member, planned as if along the last axis (tile shapes)
                cols[n] = scan_of(s.value)
                call = s.value
                s = dataclasses.replace(s, value=dataclasses.replace(call, args=(call.args[0], ir.Var(lead[-1]))
                                                                     + tuple(call.args[2:])))
            plans.append(_Plan(s, types, tasks))
        order = [n for n in range(len(plans)) if n not in cols] + sorted(cols)   # a row member leads
        plans = [plans[n] for n in order]
        cols = {order.index(n): v for n, v in cols.items()}
        name = f"{spec.name}_mlu"
        k = _build(plans, cols, types, name, spec)
    except GirError:
        return None
    if k is None:
        return None
    p = plans[0]
    if remarks is not None:
        from gir.passes.remarks import Remark
        names = ", ".join(f"'{q.out.name}'" for q in plans)
        down = ", ".join(f"'{plans[i].out.name}'" for i in sorted(cols))
        again = max(0, p.S - k.skeep * p.R)
        remarks.append(Remark(
            "schedule-mlu", "missed" if again else "passed",
            f"the scans {names} run as one kernel: each tile is loaded once for all of them; {down} "
            f"scan{'' if len(cols) > 1 else 's'} across the {p.units} bands of rows (band totals, their carries "
            "between two barriers across the cores, then each band scanned from its carry)"
            + (f"; {again} of each band's {p.S} positions are read again (SRAM keeps {k.skeep} tiles of {p.R})"
               if again else ""), stmts[0].loc))
    return _items(k)


def _build(plans: list[_Plan], cols: dict, types: dict, name: str, spec: ir.Func) -> _Cross | None:
    """The kernel sized as the scan group's (scan_group.py's sized(), the cost model timing the candidates): one
    band per task at most, and, for rows off the 64-byte DMA granule or when one band each does not fit, lane
    chunks of at most 128 and 64 lanes with several bands per task (between() and scan_sram.py) -- the one-band
    chunk leaves short row segments (8,191 x 509 f32: 256 lanes of 64 positions, a partial granule at both ends
    of every 256-byte segment, 1.60x the compulsory bytes; 128 lanes of 128 positions, two bands each: 1.31x),
    and more batches than cores have no band of their own. The cost model picks; None when no band of rows fits,
    or SRAM keeps no tile."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    tot = f"{name}_tot"
    seconds = lambda k: estimate(dataclasses.replace(spec, body=tuple(_items(k)))).seconds   # noqa: E731
    make = lambda: _Cross(plans, cols, types, name, tot)   # noqa: E731
    one = sized(plans, make, None, seconds, _one_band_each)
    options = [one] if one is not None else []
    p = plans[0]
    if one is not None and p.S * L.device_nbytes(p.ydt) % MLU370.dma_granularity == 0:
        return one
    for most in (None, 128, 64):
        if options and (most is None or most >= min(k.geometry["W"] for k in options)):
            continue   # (the narrowest chunk so far is within `most`: plan.choose would pick it again)
        k = sized(plans, make, most, seconds)
        if k is not None:
            options.append(k)
    if not options:
        return None
    pick = order(options, seconds, MLU_RANKING)[0]
    _share(plans, pick.geometry)
    return pick


def _items(k: _Cross) -> list:
    """[a totals array per column member, the kernel]."""
    p = k.p
    shape = tuple(p.shape[v] for v in p.units_vars) + (max(2, p.chunks), p.S)
    return [B.alloc(k.tot_name(i), p.cdt, shape, "gdram") for i in sorted(k.cols)] + [k.kern]
