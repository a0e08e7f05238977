"""The tile kernel: any group the tile analysis accepts (tiles_plan.py), under one TileConfig.

Thread layout. *Row tiles* (the lane axis is an in-team axis): a block is one team point; its 32 x NW threads
take consecutive `tw`-element vectors along the lane axis (@warp/@lane), or the lanes do and the warps split
another in-team axis. *Column tiles* (the lane axis is a team axis): a block covers `lanes_l * tw` consecutive
team points along it; threads are (_tq warp, _tl lane along the lane axis, _tw lane along the warp axis), so
warps and the remaining lanes split an in-team axis (@thread scopes x=_tw, y=_tl, z=_tq). Other team axes go to
the grid or are walked serially (`tloop`, grid-stride over `persistent` blocks); other in-team axes are loops.

Per team point: slots are accumulated in sweeps over the in-team axes (one per phase), combined across lanes
(xor-shuffle allreduce) and warps (shared memory), team values computed, then a final sweep stores the full
values and accumulates the cross-team reductions, whose per-block partials a second kernel combines. With
`caps`, a thread keeps the inputs of its chunks in registers between sweeps (and the ones no walked team axis
changes, across team points); the kernel then runs `if (sizes fit) { cached, vectorised } else { streaming }`.
"""
from __future__ import annotations

from dataclasses import replace

from gir import ir
from gir.printer import format_expr
from gir.passes.schedule.emit import C, Lines, V, add, alloc, combine, dim_expr, fx, identity, mul, simplify, tile
from gir.passes.schedule.tiles_io import operands, translate
from gir.passes.schedule.tiles_layout import TileLayout, cdiv_expr
from gir.passes.schedule.tiles_cross import TileCross
from gir.passes.schedule.tiles_plan import TileAnalysis, TileConfig, Unsupported
from gir.passes.schedule.tiles_store import TileStores


def _update(op: str, acc: str, val: str) -> str:
    return {"sum": f"{acc} + {val}", "prod": f"{acc} * {val}"}.get(op) or f"{op}({acc}, {val})"


class TileKernel(TileLayout, TileStores, TileCross):
    def __init__(self, a: TileAnalysis, cfg: TileConfig):
        self.a, self.cfg, self.c = a, cfg, cfg
        if cfg.lane not in a.axes:
            raise Unsupported(f"no axis '{cfg.lane}'")
        self.col = cfg.lane in a.team
        if a.cross:
            if self.col:
                raise Unsupported("cross-team reductions need row tiles")
            if cfg.lane in cfg.grid:
                raise Unsupported("cross-team reductions need the lane axis in the team")
            for c in a.cross:
                if c.out_axes and (tuple(c.out_axes) != (cfg.lane,) or cfg.warp_axis is not None
                                   or len(a.inner) != 1 or (cfg.tile not in (None, cfg.lane))):
                    raise Unsupported(f"'{c.target}' reduces across teams into an axis other than the lanes")

    # ------------------------------------------------------------------ kernel
    def tile_chunks(self, cfg: TileConfig) -> bool:
        """Whether the tile axis is a small in-team axis of symbolic extent: walked in `tw`-element chunks (one
        at the hinted sizes, guarded)."""
        a = self.a
        return cfg.tile is not None and cfg.tile != cfg.lane and cfg.tile in a.inner and \
            not isinstance(a.axes[cfg.tile], int)

    def fallback(self) -> TileConfig:
        """The path for sizes the fast one does not fit: no register cache, no vectors (row tiles: one element
        per lane; a symbolic small tile axis: a plain loop)."""
        cfg = self.cfg
        if (cfg.tile == cfg.lane and not self.col) or self.tile_chunks(cfg):
            return replace(cfg, tile=None, tw=1, caps=(), vectors=False)
        return replace(cfg, caps=(), vectors=False)

    def emit(self, name: str) -> list[str]:
        """The kernel text(s): the tile kernel, then one combine kernel per cross-team statement."""
        fast = self.cfg
        slow = self.fallback()
        guards = self.guards(fast)
        L = Lines()
        L.open(f"kernel {name}")
        self.kname = name
        self._open_grid(L)
        for s in self._shared_allocs():
            L(s)
        self._open_threads(L)
        self.allocs: list[str] = []
        if guards and slow != fast:
            B1, B2 = Lines(), Lines()
            self.body(B1, fast, "_p")
            self.body(B2, slow, "_q")
            for x in self.allocs:
                L(x)
            L.open(f"if {' and '.join(guards)}")
            _splice(L, B1)
            L.depth -= 1
            L.open("} else")
            _splice(L, B2)
            L.close()
        else:
            B = Lines()
            self.body(B, slow if guards else fast, "_p")
            for x in self.allocs:
                L(x)
            _splice(L, B)
        while L.depth:
            L.close()
        return [L.text()] + [self.combine_kernel(c) for c in self.a.cross]

    def _shared_allocs(self) -> list[str]:
        cfg, a = self.cfg, self.a
        out = []
        if self.exchanges():
            w = self.twt(cfg)
            for k, s in enumerate(a.slots):
                shape = [cfg.warps, cfg.lanes_l * w] if self.col else [cfg.warps]
                out.append(alloc(f"_red{k}", s.dtype, shape, "shared"))
        if cfg.warps > 1:
            for k, c in enumerate(a.cross):
                if not c.out_axes:
                    out.append(alloc(f"_xred{k}", c.dtype, [cfg.warps], "shared"))
        for name in self.batched():
            out.append(alloc(f"_sb_{name}", a.types[name].dtype, [cfg.chunk], "shared"))
        if not self.col and cfg.warps > 1:
            for k, r in enumerate(self.team_scalars()):
                if r is not None:
                    out.append(alloc(f"_sv{k}", a.types[r.name].dtype, [1], "shared"))
        return out

    def team_scalars(self) -> list[ir.Ref]:
        """References staged through shared memory (see `staged`), by operand number."""
        from gir.passes.schedule.tiles_io import operands
        saved = self.c
        self.c = self.cfg
        ops = operands(self)
        self.c = saved
        return [op.ref if (op.level == "team" and op.mode == "scalar") else None for op in ops]

    # ------------------------------------------------------------------ body
    def body(self, B: Lines, cfg: TileConfig, px: str) -> None:
        a = self.a
        self.B, self.c, self.px = B, cfg, px
        self.w = cfg.tw if cfg.tile is not None else 1
        self.tw_team = self.twt(cfg)
        self.pos: dict[str, ir.Expr] = {}
        for ax, v in self.gridvars.items():
            self.pos[ax] = self._grid_pos(cfg, ax, v)
        if cfg.tile is not None and cfg.tile != cfg.lane:
            self.pos[cfg.tile] = C(0)
        self.slot_index: ir.Expr = C(0)
        self.cached_loaded: set[int] = set()
        self.ops = operands(self)
        self._declare()
        self._cross_init()
        self._block_cache()
        self._loads("block")
        depth = self._team_loop()
        self._loads("team")
        for k, s in enumerate(a.slots):
            B(f"{px}a{k}[0:{self.tw_team}] = {identity(s.op, s.dtype)}")
        self._team_values(-1)
        for p in range(a.nphases):
            self.sweep(p)
            self._combine([k for k, s in enumerate(a.slots) if s.phase == p])
            self._team_values(p)
        if a.final:
            self.sweep(None)
        self._team_stores()
        if (self.exchanges() or self.staged()) and cfg.tloop:
            B("sync @block")  # shared buffers are reused by the next team point
        for _ in range(depth):
            B.close()
        self._batched_stores()
        self._cross_finish()

    def _declare(self) -> None:
        a, cfg, px, w, wt = self.a, self.c, self.px, self.w, self.tw_team
        decl = self.allocs.append
        for op in self.ops:
            decl(alloc(op.reg(), op.dtype, [op.slots(), op.width()], "reg"))
        for k, s in enumerate(a.slots):
            decl(alloc(f"{px}a{k}", s.dtype, [wt], "reg"))
            decl(alloc(f"{px}t{k}", s.dtype, [w], "reg"))
        for name, _ in a.teamdefs:
            decl(alloc(f"{px}v_{name}", _acc_dt(a.types[name].dtype), [wt], "reg"))
            if name in a.team_stores:
                decl(alloc(f"{px}s_{name}", a.types[name].dtype, [wt], "reg"))
        for name in a.full_stores:
            decl(alloc(f"{px}o_{name}", a.types[name].dtype, [w], "reg"))
        if cfg.tile is not None and self._iota_needed():
            decl(alloc(f"{px}ix", ir.DType.i32, [w], "reg"))
        for k, c in enumerate(a.cross):
            decl(alloc(f"{px}c{k}", c.dtype, [self._cross_slots(c), self._cross_width(c)], "reg"))
            decl(alloc(f"{px}u{k}", c.dtype, [w], "reg"))
            if not c.out_axes and cfg.warps > 1:
                decl(alloc(f"{px}y{k}", c.dtype, [cfg.warps], "reg"))

    def _team_loop(self) -> int:
        """Open the loops over the walked team axes; returns how many scopes to close."""
        cfg, a, B = self.c, self.a, self.B
        depth = 0
        for k, ax in enumerate(cfg.tloop):
            ext = dim_expr(a.axes[ax])
            if ax == cfg.lane:  # column tiles of the lane axis walked by the block (its grid is full)
                n = cfg.lanes_l * self.twl(cfg)
                B.open(f"for _t{k} in 0..{format_expr(cdiv_expr(ext, n))}")
                self.pos[ax] = add(mul(V(f"_t{k}"), C(n)), mul(V("_tl"), C(self.twl(cfg))))
                depth += 1
            elif ax == cfg.warp_axis:  # a team axis split over the block's threads, walked in steps of them
                n = cfg.warps * cfg.lanes_w
                step, base = (n * cfg.persistent, mul(V("_bp"), C(n))) if k == 0 and cfg.persistent else (n, C(0))
                B.open(f"for _t{k} in 0..{format_expr(cdiv_expr(ext, step))}")
                self.pos[ax] = add(add(mul(V(f"_t{k}"), C(step)), base), self._thread_on_warp_axis())
                B.open(f"if {fx(self.pos[ax])} < {format_expr(ext)}")
                depth += 2
            elif k == 0 and cfg.persistent:
                B.open(f"for _tp in 0..{format_expr(cdiv_expr(ext, cfg.persistent))}")
                self.pos[ax] = add(mul(V("_tp"), C(cfg.persistent)), V("_bp"))
                B.open(f"if {fx(self.pos[ax])} < {format_expr(ext)}")
                depth += 2
            elif k == 0 and cfg.chunk:
                B.open(f"for _tp in 0..{cfg.chunk}")
                self.pos[ax] = add(mul(V("_bc"), C(cfg.chunk)), V("_tp"))
                B.open(f"if {fx(self.pos[ax])} < {format_expr(ext)}")
                depth += 2
            else:
                B.open(f"for _t{k} in 0..{format_expr(ext)}")
                self.pos[ax] = V(f"_t{k}")
                depth += 1
        return depth

    # ------------------------------------------------------------------ sweeps
    def _open_sweep(self, cached: bool) -> tuple[int, ir.Expr]:
        """Open the loops (and validity condition) of one sweep; returns (scopes to close, cache slot index)."""
        cfg, a, B = self.c, self.a, self.B
        caps = dict(cfg.caps)
        idx: ir.Expr = C(0)
        conds = []
        n = 0
        for n, ax in enumerate(self.sweep_axes(cfg)):
            span = self.span(cfg, ax)
            ext = dim_expr(a.axes[ax])
            var = f"_k{n}"
            trips = C(caps[ax]) if cached else cdiv_expr(ext, span)
            B.open(f"for {var} in 0..{format_expr(trips)}")
            if ax == cfg.lane and not self.col:
                lanepos = V("_l") if cfg.warp_axis is not None or cfg.warps == 1 else add(mul(V("_w"), C(32)), V("_l"))
                pos = add(mul(V(var), C(span)), mul(lanepos, C(self.twl(cfg))))
            elif cfg.lanew and ax == cfg.lanew:
                pos = add(mul(V(var), C(span)), V("_tw"))
            elif ax == cfg.warp_axis:
                pos = add(mul(V(var), C(span)), self._thread_on_warp_axis())
            else:
                pos = mul(V(var), C(span))
            self.pos[ax] = pos
            if span > 1 or cached:
                conds.append(f"{fx(pos)} < {format_expr(ext)}")
            if cached:
                idx = add(mul(idx, C(caps[ax])), V(var))
        depth = len(self.sweep_axes(cfg))
        conds += self.team_guards()
        if conds:
            B.open(f"if {' and '.join(dict.fromkeys(conds))}")
            depth += 1
        del n
        return depth, simplify(idx)

    def sweep(self, phase: int | None) -> None:
        """One pass over the thread's share of the in-team axes: accumulate the slots of `phase`, or (None) the
        final pass that stores the full values and accumulates the cross-team partials."""
        cfg, a, B, px, w = self.c, self.a, self.B, self.px, self.w
        slots = [k for k, s in enumerate(a.slots) if s.phase == phase] if phase is not None else []
        exprs = [a.slots[k].arg for k in slots]
        if phase is None:
            exprs += [a.inline(a.full[n]) for n in a.full_stores] + [c.arg for c in a.cross]
        depth, self.slot_index = self._open_sweep(cfg.cache)
        for op in self.ops:
            if op.level != "sweep" or not op.used_in(exprs):
                continue
            if cfg.cache and (op.k in self.cached_loaded or op.block_cached):
                continue
            op.load(self.slot_index)
            if cfg.cache:
                self.cached_loaded.add(op.k)
        self._iota()
        for k in slots:
            s = a.slots[k]
            B(f"{px}t{k}[0:{w}] = {format_expr(self.tr(s.arg))}")
            op = "sum" if s.op == "mean" else s.op
            acc = f"{px}a{k}[0:{self.tw_team}]"
            if w > 1 and self.tw_team == 1:  # the tile lies along a reduced axis
                B(f"{acc} = {combine(op, acc, f'{px}t{k}[0:{w}]')}")
            else:
                B(f"{acc} = {_update(op, acc, f'{px}t{k}[0:{self.tw_team}]')}")
        if phase is None:
            for name in a.full_stores:
                B(f"{px}o_{name}[0:{w}] = {format_expr(self.tr(a.inline(a.full[name])))}")
                self._store(name, f"{px}o_{name}", w)
            for k, c in enumerate(a.cross):
                B(f"{px}u{k}[0:{w}] = {format_expr(self.tr(c.arg))}")
                self._cross_accumulate(k, c)
        for _ in range(depth):
            B.close()

    # ------------------------------------------------------------------ combine across threads
    def _combine(self, ks: list[int]) -> None:
        cfg, a, B, px, wt = self.c, self.a, self.B, self.px, self.tw_team
        if not ks:
            return
        ops = {k: "sum" if a.slots[k].op == "mean" else a.slots[k].op for k in ks}
        for k in ks:
            if not self.col:
                B(f"allreduce {ops[k]} {px}a{k}[0:1] over _l")
            elif cfg.lanes_w > 1 and cfg.lanew_axis in a.inner:
                B(f"allreduce {ops[k]} {px}a{k}[0:{wt}] over _tw")
        if not self.exchanges():
            return
        lead = "_l == 0" if not self.col else ("_tw == 0" if cfg.lanes_w > 1 else None)
        if lead:
            B.open(f"if {lead}")
        for k in ks:
            if self.col:
                B(f"copy _red{k}[_tq, {wt} * _tl:{wt} * _tl + {wt}] <- {px}a{k}[0:{wt}]")
            else:
                B(f"copy _red{k}[_w:_w + 1] <- {px}a{k}[0:1]")
        if lead:
            B.close()
        B("sync @block")
        for k in ks:
            if self.col:
                B(f"{px}a{k}[0:{wt}] = _red{k}[0, {wt} * _tl:{wt} * _tl + {wt}]")
                B.open(f"for _x in 1..{cfg.warps}")  # a loop, not one wide reduction: few registers live
                B(f"{px}a{k}[0:{wt}] = {_update(ops[k], f'{px}a{k}[0:{wt}]', f'_red{k}[_x, {wt} * _tl:{wt} * _tl + {wt}]')}")
                B.close()
            else:
                B(f"{px}a{k}[0:1] = {ops[k]}(_red{k}[0:{cfg.warps}])")

    def _team_values(self, phase: int) -> None:
        a, B, px = self.a, self.B, self.px
        for name, _ in a.teamdefs:
            if a.ready[name] == phase + 1:
                B(f"{px}v_{name}[0:{self.tw_team}] = {format_expr(self.tr(a.teamexprs[name]))}")

    # ------------------------------------------------------------------ expressions
    def tr(self, e: ir.Expr) -> ir.Expr:
        """Canonical expression -> compute expression over this thread's registers."""
        cfg, px = self.c, self.px

        def on_ref(x: ir.Ref) -> ir.Expr:
            if x.name.startswith("@a:"):
                return tile(f"{px}a{x.name[3:]}", [(C(0), self.tw_team)])
            if x.name.startswith("@tv:"):
                return tile(f"{px}v_{x.name[4:]}", [(C(0), self.tw_team)])
            for op in self.ops:
                if x in op.members:
                    return op.value(x)
            raise Unsupported(f"unplanned reference {x.name}")

        def on_var(v: ir.Var) -> ir.Expr:
            if cfg.tile is not None and v.name == cfg.tile:
                return tile(f"{px}ix", [(C(0), self.w)])
            return self.at(v) if v.name in self.a.axes else v
        return translate(e, on_ref, on_var)


def _acc_dt(d: ir.DType) -> ir.DType:
    return (ir.DType.f64 if d == ir.DType.f64 else ir.DType.f32) if d.is_float else d


def _splice(L: Lines, B: Lines) -> None:
    for line in B.lines:
        L.lines.append("  " * L.depth + line)
