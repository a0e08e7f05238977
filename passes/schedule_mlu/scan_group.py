"""Scans that share their operands, fused into one MLU kernel (a scan group).

Two or more scan statements over the same shape along the same axis, computing in the same type
(`c[i, j] = cumsum(x[i, j] * w[j], j)` and `p[i, j] = cumprod(1.0 + 0.01 * x[i, j], j, reverse=1)`), walk the
same tiles: run as separate kernels (scan.py) each reads x from GDRAM. A group runs them in one unit kernel of
scan.py's geometry (work units of lanes, tiles along the scan axis): every tile's operands are loaded once and each
member computes its own operand and scan from them, with its own carry, and stores its result.

Members walking the same way share one walk. When the directions differ the unit walks its tiles twice: forward
for the forward members (phase 1), then back for the reverse ones (phase 2). A tail of 3/4 of a tile or more is
one more whole tile moved back to end at the row's end (scan.py's overlap_walk), in both phases: phase 2 walks
the same tiles in reverse order, the overlapping one first. Phase 1 copies each tile of the
operands phase 2 needs into the core's part of its cluster's SRAM after loading it (scan_sram.py); phase 2 copies
them back instead of reading GDRAM again. A unit whose tiles do not all fit SRAM reads the rest again (said in a
remark); a group that can keep none is not formed (two walks of GDRAM are two kernels).

Statements are first reordered so that members of a group are adjacent (`order_scans`: a statement moves up only
past statements it does not read), and the cost model's split of the function into segments (segments.py) decides
whether a group runs fused.
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.passes.builtin.exprs import substitute_vars
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.colreduce import decode_units, unit_trips
from gir.passes.schedule_mlu.scan import COL, FLOATS, FULL, ROW, _dense, _Kernel, _Plan
from gir.passes.schedule_mlu.scan_walk import forward_carry, from_tile, overlap_walk, overlaps
from gir.passes.schedule_mlu.scan_size import NRAM_BUDGET, divisor_tile, even_tile, grow_tile, walk_tile
from gir.passes.schedule_mlu.scan_sram import SramKeep
from gir.scan import identity, is_scan, scan_of
from gir.walk import walk

SRAM_BUDGET = MLU370.sram_bytes   # SRAM of a cluster the tiles kept between the phases may take
OWN = ("acc_", "ev_", "et_", "ot_", "oh_", "o_h", "ov_", "o_", "hs_")   # each member's own NRAM tiles
GEOMETRY = ("W", "step", "chunks", "dense", "units", "R")   # what plan.choose decides: the leader's, every member's


def _key(stmt: ir.Assign, types: dict):
    """What members of one group share: the result's shape, the scan axis' position and the type the scan computes
    in (None: not a scan the MLU scan kernel takes)."""
    p = scan_of(stmt.value)
    if p is None or any(not isinstance(i, ir.Var) for i in stmt.target.index):
        return None
    names = [i.name for i in stmt.target.index]
    if p.axis not in names:
        return None
    try:
        cdt = _Plan(stmt, types, 32).cdt
    except GirError:
        return None
    return tuple(types[stmt.target.name].shape), names.index(p.axis), cdt


def order_scans(func: ir.Func, types: dict) -> ir.Func:
    """`func` with every scan statement moved up to just after the last earlier statement of its group when it
    reads nothing the statements in between produce (dependences kept)."""
    done: list = []
    for s in func.body:
        k = _key(s, types) if isinstance(s, ir.Assign) else None
        at = None
        if k is not None:
            reads = {x.name for x in walk(s.value) if isinstance(x, ir.Ref)}
            for t in range(len(done) - 1, -1, -1):
                if isinstance(done[t], ir.Assign) and _key(done[t], types) == k:
                    at = t + 1
                    break
                if not isinstance(done[t], ir.Assign) or done[t].target.name in reads:
                    break
        if at is None or at == len(done):
            done.append(s)
        else:
            done.insert(at, s)
    return func if done == list(func.body) else dataclasses.replace(func, body=tuple(done))


class _Group(_Kernel, SramKeep):
    """The unit kernel of scan.py run for several scans of one geometry (`plans`, the leader first)."""

    def __init__(self, plans: list[_Plan], types: dict, name: str):
        self.landing = False
        super().__init__(plans[0], types, name)
        self.plans, self.m = plans, 0
        for i, p in enumerate(plans[1:], 1):
            self.p = p
            for x in walk(p.scan.arg):
                if isinstance(x, ir.Ref):
                    got = (self._kind(x), [i.name for i in x.index])
                    if self.refs.setdefault(x.name, got) != got:
                        raise GirError(f"'{x.name}' is read in two ways by the scans of one group", x.loc)
        self.p = plans[0]
        self.sram_setup()
        self.active: set[str] = set(self.refs)   # the operands the tile being built loads
        self.kept: set[str] = set()              # the operands phase 1 keeps in SRAM for phase 2

    def alloc(self, name: str, dt: ir.DType, shape) -> str:
        own = not self.landing and (name in OWN or (name[0] == "e" and name[1:-1].isdigit()))   # (and e1_, ...)
        if not own:
            return super().alloc(name, dt, shape)
        if name == "acc_":   # (a carry: set at the unit's start, live through both walks)
            return super().alloc(f"s{self.m}_{name}", dt, shape)
        shared = f"{self.slot()}{name}"
        a = self.allocs.get(shared)
        if a is not None and (a.type.dtype, tuple(a.type.shape)) != (dt, tuple(shape)):
            shared = f"m{self.m}_{name}"   # (the member sharing the slot holds another shape there)
        return super().alloc(shared, dt, shape)

    def slot(self) -> str:
        """The prefix of the current member's own tiles: a member of one walk only shares them with the member
        at its position in the other walk (never live at once: the walks are separate loops, each drained before
        the next) -- a group walking both ways holds half the temporaries (samples/cumsum.gir at 2,039^2: tiles
        of 256 positions fit instead of 128); a member of both walks (scan_cross.py) keeps its own."""
        fwd, rev = self.directions()
        if (self.m in fwd) == (self.m in rev):
            return f"m{self.m}_"
        return f"s{(fwd if self.m in fwd else rev).index(self.m)}_"

    def raw(self) -> str | None:
        return None   # (a raw 16-bit tile transposed as it is would be one member's; every member widens it)

    def member(self, i: int) -> None:
        self.m, self.p = i, self.plans[i]

    def reverse(self) -> list[int]:
        """The members walking the scan axis backwards."""
        return [i for i, q in enumerate(self.plans) if q.scan.reverse]

    def directions(self) -> tuple[list[int], list[int]]:
        """(the members of the forward walk, those of the walk back; scan_cross.py puts a member in both)."""
        rev = self.reverse()
        return [i for i in range(len(self.plans)) if i not in rev], rev

    def between(self, l0, nl: int) -> list:
        """Steps between the forward walk and the walk back of the unit at lane `l0` (`nl` lanes; scan_cross.py:
        a barrier)."""
        return []

    def unit_start(self, l0, nl: int) -> list:
        """A unit's first steps: the operands loaded once per unit, every member's carry set to its identity."""
        body = self.tile(B.c(0), self.p.R, l0, nl, "unit")
        for i, q in enumerate(self.plans):
            self.member(i)
            ident = identity(q.scan.op, q.cdt in FLOATS, None if q.cdt in FLOATS else "int32")
            body.append(ir.Assign(B.ref(self.alloc("acc_", q.cdt, (max(2, q.W),)), B.sl(0, nl)), B.c(ident)))
        self.member(0)
        return body

    def refs_of(self, members) -> set[str]:
        return {x.name for i in members for x in walk(self.plans[i].scan.arg) if isinstance(x, ir.Ref)}

    def loads(self, s0, ns: int, l0, nl: int, stage: str, widen: bool = True) -> list:
        """scan.py's loads of the active operands; a tile SRAM keeps goes through it (scan_sram.py)."""
        every = self.refs
        self.refs = {n: v for n, v in every.items() if n in self.active or stage == "unit"}
        self.landing = True   # (a tensor's landing tiles are shared: `o_h` of a tensor o is not member 0's `o_h`)
        try:
            steps = super().loads(s0, ns, l0, nl, stage, widen)
        finally:
            self.refs, self.landing = every, False
        if self.sram is None or stage != "tile":
            return steps
        nr, nc = (ns, nl) if self.p.layout == "cols" else (nl, ns)
        rows, cols = self.kept_shape()
        out: list = []
        for x in steps:
            if isinstance(x, ir.Move) and x.kind == "load" and x.src.name in self.kept:
                ks = self.kept_sram(x.src.name, self.types[x.src.name].dtype, rows, cols, nr, nc)
                out += self.through_sram(x.dst, ks, [x])
            else:
                out.append(x)
        return out

    def tile_all(self, s0, ns: int, l0, nl: int, members: list[int]) -> list:
        """One tile for `members`: the loads, every member's operand and scan, then every store (the order the
        software pipeline takes)."""
        nr, nc = (ns, nl) if self.p.layout == "cols" else (nl, ns)
        steps = self.loads(s0, ns, l0, nl, "tile")
        landed = {f"{n}_t" for n in self.refs}
        computes, stores = [], []
        for pos, i in enumerate(members):
            self.member(i)
            self.count = 0   # (every tile of a member computes its operand in the same temporaries)
            ev = self.expr(self.p.scan.arg, computes, nr, nc)
            if not (isinstance(ev, ir.Ref) and self._tile_kind(ev) == FULL) or \
                    (ev.name in landed and pos < len(members) - 1):   # (a scan may overwrite its operand's tile)
                t = self.region(self.alloc("ev_", self.p.cdt, self.shape_of(FULL)), FULL, nr, nc)
                computes.append(ir.Assign(t, ev))
                ev = t
            for x in self.finish(ev, s0, ns, l0, nl):
                (stores if isinstance(x, ir.Move) and x.kind == "store" else computes).append(x)
        self.member(0)
        return steps + computes + stores

    def walk(self, l0, nl: int) -> list:
        """One unit: the carries, then one walk of its tiles per direction (module docstring)."""
        p = self.p
        full, tail, R = p.S // p.R, p.S % p.R, p.R
        body = self.unit_start(l0, nl)
        fwd, rev = self.directions()
        k = B.v("k_")
        if not fwd or not rev:   # one walk, in the members' direction (scan.py's)
            s0, ts0 = (ir.BinOp("-", B.c(p.S - R), B.mul(k, R)), B.c(0)) if rev else (B.mul(k, R), B.c(p.S - tail))
            self.active = set(self.refs)
            if overlaps(p):      # (every member walks the same way: one carry row for all)
                s0, self.carry_row = overlap_walk(p, k)
                body.append(ir.For("k_", B.c(0), B.c(full + 1), tuple(self.tile_all(s0, R, l0, nl, fwd or rev))))
                self.carry_row = None
                return body
            if full:
                body.append(ir.For("k_", B.c(0), B.c(full), tuple(self.tile_all(s0, R, l0, nl, fwd or rev))))
            if tail:
                body += self.tile_all(ts0, tail, l0, nl, fwd or rev)
            return body
        if overlaps(p):   # (a tail of 3/4 of a tile or more: timed on mlu-sim, a shorter one costs more overlapped)
            return body + self.overlapped(fwd, rev, l0, nl)
        # phase 1 forward over tiles 0..full-1 and the tail; the first `skeep` (the tail counted last) go to SRAM
        kf = min(self.skeep, full)
        fwd_refs, rev_refs = self.refs_of(fwd), self.refs_of(rev)

        def phase(members, refs, n, start, mode=None, slot=None):
            self.active = refs
            if not n:
                return []
            at = lambda: self.tile_all(start(k), R, l0, nl, members)   # noqa: E731
            return [ir.For("k_", B.c(0), B.c(n), tuple(self.in_sram(mode, slot(k), at) if mode else at()))]

        body += phase(fwd, fwd_refs | self.kept, kf, lambda k: B.mul(k, R), "to", lambda k: k)
        body += phase(fwd, fwd_refs, full - kf, lambda k: B.mul(B.add(k, kf), R))
        if tail:
            self.active = fwd_refs | (self.kept if self.skeep > full else set())
            at = lambda: self.tile_all(B.c(full * R), tail, l0, nl, fwd)   # noqa: E731
            body += self.in_sram("to", B.c(full), at) if self.skeep > full else at()
        body += self.between(l0, nl)
        if tail:   # phase 2 back: the tail, the tiles SRAM does not keep, then those it keeps
            self.active = rev_refs
            at = lambda: self.tile_all(B.c(full * R), tail, l0, nl, rev)   # noqa: E731
            body += self.in_sram("from", B.c(full), at) if self.skeep > full else at()
        body += phase(rev, rev_refs, full - kf, lambda k: B.mul(ir.BinOp("-", B.c(full - 1), k), R))
        body += phase(rev, rev_refs, kf, lambda k: B.mul(ir.BinOp("-", B.c(kf - 1), k), R), "from",
                      lambda k: ir.BinOp("-", B.c(kf - 1), k))
        return body

    def overlapped(self, fwd: list[int], rev: list[int], l0, nl: int) -> list:
        """Both walks over S // R + 1 whole tiles, the last moved back to end at the row's end (scan.py's
        overlap_walk): phase 1 forward over tiles 0..full, phase 2 back over the same tiles from tile full (those
        SRAM does not keep first). Tile full - 1 hands the forward members the carry at position S - R - 1 (its
        row tail - 1); tile full hands the reverse ones the carry at position full x R (its row R - tail)."""
        p = self.p
        full, tail, R = p.S // p.R, p.S % p.R, p.R
        n, kf = full + 1, min(self.skeep, full + 1)
        k = B.v("k_")
        forward = lambda j: forward_carry(p, j)   # noqa: E731
        back = lambda j: B.mul(from_tile(j, full), R - tail)   # noqa: E731

        def phase(members, refs, count, index, carry, mode=None):
            if not count:
                return []
            self.active, j = refs, index(k)
            self.carry_row = carry(j)
            at = lambda: self.tile_all(ir.Call("min", (B.mul(j, R), B.c(p.S - R))), R, l0, nl, members)  # noqa
            steps = self.in_sram(mode, j, at) if mode else at()
            self.carry_row = None
            return [ir.For("k_", B.c(0), B.c(count), tuple(steps))]

        fwd_refs, rev_refs = self.refs_of(fwd), self.refs_of(rev)
        return (phase(fwd, fwd_refs | self.kept, kf, lambda k: k, forward, "to")
                + phase(fwd, fwd_refs, n - kf, lambda k: B.add(k, kf), forward) + self.between(l0, nl)
                + phase(rev, rev_refs, n - kf, lambda k: ir.BinOp("-", B.c(full), k), back)
                + phase(rev, rev_refs, kf, lambda k: ir.BinOp("-", B.c(kf - 1), k), back, "from"))

    def unit_loop(self) -> ir.For:
        """The task's loop over its work units, each decoded and walked."""
        p = self.p
        radix, body = self.unit_body(self.walk)
        return ir.For("it_", B.c(0), unit_trips(p.units, p.tasks, self.task()),
                      tuple(decode_units(radix, p.units, p.tasks, body, self.task())))

    def kernel(self) -> ir.Kernel:
        loop = self.unit_loop()
        par = self.scope(tuple(self.allocs.values()), (loop,))
        return ir.Kernel(self.name, (par,), (("task_dim", str(self.p.tasks)),))

    def kept_shape(self) -> tuple[int, int]:
        """One kept tile in SRAM: a landed tile's shape, its lanes cut to those the scan has (a rows-layout lane
        block of 64 over fewer lanes keeps only theirs)."""
        rows, cols = self.shape_of(FULL)
        return (min(rows, self.p.nlanes), cols) if self.p.layout == "rows" else (rows, cols)

    def sram_bytes(self, tiles: int) -> int:
        """SRAM of a cluster the kept operands take with `tiles` tiles per core, as allocated (rows padded to the
        tile pitch unless the kernel is `layout=dense`: scan_cols_long.py's rule)."""
        rows, cols = self.kept_shape()
        shape = (self.cpc * self.bands * tiles * rows, cols)
        elems = L.round_up(shape[0] * shape[1], L.PITCH) if self.p.dense else L.phys_elems(shape)
        return sum(elems * L.device_nbytes(self.types[n].dtype) for n in self.kept)

    def fit_sram(self, budget: int, tiles: int) -> None:
        """`skeep`: the most tiles (at most `tiles`) whose kept operands fit `budget` bytes of SRAM (none when the
        schedule may not use SRAM)."""
        self.skeep = self.sram_tiles(budget, max(1, self.sram_bytes(1) // self.cpc), tiles)
        while self.skeep and self.sram_bytes(self.skeep) > budget:
            self.skeep -= 1


def _plans(stmts: list[ir.Assign], types: dict, tasks: int) -> list[_Plan]:
    """The members' plans, every statement's variables renamed to the leader's."""
    lead = [i.name for i in stmts[0].target.index]
    key = _key(stmts[0], types)
    plans = []
    for s in stmts:
        if _key(s, types) != key:
            raise GirError("the scans of a group have one shape, axis and compute type", s.loc)
        ren = {i.name: ir.Var(v) for i, v in zip(s.target.index, lead)}
        s = dataclasses.replace(s, target=substitute_vars(s.target, ren), value=substitute_vars(s.value, ren))
        plans.append(_Plan(s, types, tasks))
    return plans


def _share(plans: list[_Plan], geometry: dict) -> None:
    """Every member takes the geometry (`GEOMETRY` attributes) plan.choose gave the leader."""
    for q in plans:
        for a, v in geometry.items():
            setattr(q, a, v)


def _build(plans: list[_Plan], types: dict, name: str, most: int | None, seconds) -> _Group | None:
    """The group's kernel with lane chunks of at most `most` (sized(): `seconds` times its candidates)."""
    return sized(plans, lambda: _Group(plans, types, name), most, seconds)


def sized(plans: list[_Plan], make, most: int | None, seconds, fits=None):
    """The kernel `make()` builds for `plans` (the leader's geometry shared), with lane chunks of at most `most`
    (`fits(plan)`: may widen them, or refuse with False): scan positions per tile from the per-element estimate of
    NRAM, raised to the largest that fits (scan_size.py's grow_tile); of that, the estimate's own fit, the largest
    tile dividing the scan axis, the largest whose walk has no unpipelined tail and half the largest, the one
    `seconds(kernel)` rates fastest (the larger on ties) -- the largest is not always: 8,191 rows of 509 in tiles of
    320 leave a tail of 189 after the loop (estimated 322 us; in tiles of 256, the last overlapping, 267 us). When the members walk both ways, SRAM keeps the tiles of
    the operands the walk back reads. None when nothing fits NRAM, or SRAM keeps no tile of a walk back."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING
    p = plans[0]
    per_elem = 16
    for step in range(24):
        p.choose(per_elem, most)
        if fits is not None and not fits(p):
            return None
        _share(plans, {a: getattr(p, a) for a in GEOMETRY})
        k = make()
        k.kernel()
        used = k.nram_bytes()
        if used <= NRAM_BUDGET or p.R <= (1 if p.layout == "cols" else L.PITCH):
            break
        per_elem = per_elem * used // NRAM_BUDGET + 1
    if used > NRAM_BUDGET:
        return None
    fit = p.R

    def nram_at_r() -> int:
        _share(plans, {a: getattr(p, a) for a in GEOMETRY})
        g = make()
        g.kernel()
        return g.nram_bytes()
    grow_tile(p, nram_at_r)
    options = []
    rows = p.layout == "rows"
    half = divisor_tile(p.S, max(L.PITCH, p.R // 2 // L.PITCH * L.PITCH), L.PITCH) if rows else None
    for r in dict.fromkeys(x for x in (p.R, fit, even_tile(p.S, p.R, L.PITCH), walk_tile(p.S, p.R, L.PITCH) if rows
                                       else None, half) if x):
        p.R = r
        _share(plans, {a: getattr(p, a) for a in GEOMETRY})
        k = make()
        fwd, rev = k.directions()
        if fwd and rev:   # walks both ways: SRAM keeps the operands of the walk back
            k.kept = {n for n in k.refs_of(rev) if k.refs[n][0] == FULL}   # (known before the kernel is built)
            if k.kept:
                k.fit_sram(SRAM_BUDGET, p.S // p.R + (p.S % p.R > 0))
            if not k.skeep:
                continue
        k.kern = _dense(k.kernel(), p)
        k.geometry = {a: getattr(p, a) for a in GEOMETRY}
        options.append(k)
        if seconds is None:
            break
    if not options:
        return None
    best = order(options, seconds, MLU_RANKING)[0] if len(options) > 1 else options[0]
    _share(plans, best.geometry)
    return best


def group_items(spec: ir.Func, info, tasks: int = 32, remarks=None, allow_sram: bool = True) -> list | None:
    """The kernel of a function `spec` (sizes specialised) whose statements are two or more scans of one shape and
    axis (module docstring), or None when they do not form a group. Directions differing, narrower lane chunks
    are tried as well (a unit SRAM keeps whole reads GDRAM once): the cost model picks."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    stmts = [s.stmt for s in info.stmts]
    if len(stmts) < 2 or not all(is_scan(s.value) for s in stmts):
        return None
    made = {s.target.name for s in stmts}
    if any(isinstance(x, ir.Ref) and x.name in made for s in stmts for x in walk(s.value)):
        return None   # (a scan of another member's result: that result is stored, not read, by the kernel)
    types = dict(info.types)
    name = f"{spec.name}_mlu"
    try:
        plans = _plans(stmts, types, tasks)
        for q in plans:
            q.allow_sram = allow_sram
        mixed = len({q.scan.reverse for q in plans}) > 1
        best, most, alt, even, tried = None, None, None, False, set()
        seconds = lambda k: estimate(dataclasses.replace(spec, body=(k.kern,))).seconds  # noqa: E731
        for i in range(6 if mixed else 1):
            k = _build(plans, types, name, most, seconds)
            if i == 0:
                alt, even = plans[0].alt_W, plans[0].can_balance
            tried.add(plans[0].W)
            if k is not None:   # (one direction: one width, nothing to compare but the candidates below)
                t = seconds(k) if mixed or alt or even else 0.0
                if best is not None and t >= best[0]:
                    break   # (narrower chunks: more units, no fewer bytes)
                best = (t, k, {a: getattr(plans[0], a) for a in GEOMETRY})
                if k.skeep * plans[0].R >= plans[0].S:
                    break   # every tile kept: narrower chunks cannot move fewer bytes
            w = plans[0].W
            if w <= 32 or plans[0].nlanes <= 32 or (most is not None and w > most):
                break   # (no narrower chunk: 16-bit lane chunks are 64 lanes at least)
            most = w // 2
        for most, balance in ((alt, False), (None, True)):   # longer row segments; lanes dealt evenly (scan_size.py)
            if best is None or (balance and not even) or (not balance and (most is None or most in tried)):
                continue
            plans[0].balance = balance
            k = _build(plans, types, name, most, seconds)
            plans[0].balance = False
            if k is not None:
                best = order([best, (seconds(k), k, {a: getattr(plans[0], a) for a in GEOMETRY})], lambda o: o[0],
                             MLU_RANKING)[0]
    except GirError:
        return None
    if best is None:
        return None
    _, k, geometry = best
    p = plans[0]
    _share(plans, geometry)
    if remarks is not None:
        from gir.passes.remarks import Remark
        names = ", ".join(f"'{q.out.name}'" for q in plans)
        msg = f"the scans {names} run as one kernel: each tile is loaded once for all of them"
        again = max(0, p.S - k.skeep * p.R) if mixed else 0
        if mixed:
            per_pos = ROW if p.layout == "cols" else COL   # (per-tile operands other than whole tiles)
            small = sorted(n for n in k.refs_of(k.reverse()) if k.refs[n][0] == per_pos)
            msg += "; the reverse scans walk back over tiles kept in SRAM" + (
                f" ({again} of each unit's {p.S} positions are read again: SRAM keeps {k.skeep} tiles of {p.R})"
                if again else "") + (f"; {', '.join(repr(n) for n in small)} (one value per scan position) "
                                     "loaded again on the way back" if small else "")
        remarks.append(Remark("schedule-mlu", "missed" if again else "passed", msg, stmts[0].loc))
    return [k.kern]
