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
from passes.schedule.emit import (C, Lines, V, add, alloc, combine, dim_expr, fx, identity, mul, prod_expr, region,
                                  simplify, tile)
from passes.schedule.tiles_io import operands, translate, value_vars
from passes.schedule.tiles_plan import TileAnalysis, TileConfig, Unsupported


def cdiv_expr(e: ir.Expr, n: int) -> ir.Expr:
    return e if n == 1 else ir.Call("cdiv", (e, C(n)))


def _update(op: str, acc: str, val: str) -> str:
    return {"sum": f"{acc} + {val}", "prod": f"{acc} * {val}"}.get(op) or f"{op}({acc}, {val})"


class TileKernel:
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

    def guards(self, cfg: TileConfig) -> list[str]:
        """Conditions under which the fast path (vectors, register cache) is valid for the actual sizes."""
        a = self.a
        out: list[str] = []
        if cfg.tile == cfg.lane and cfg.tw > 1 and cfg.vectors:
            for e in [a.axes[cfg.lane]] + [a.types[r.name].shape[-1] for r in a.inputs if a.types[r.name].shape] + \
                    [a.types[n].shape[-1] for n in a.full_stores + a.team_stores if a.types[n].shape]:
                if isinstance(e, str):
                    out.append(f"{e} % {cfg.tw} == 0")
        if self.tile_chunks(cfg):
            out.append(f"{a.axes[cfg.tile]} % {cfg.tw} == 0")
        for ax, trips in cfg.caps:
            ext = a.axes[ax]
            if not isinstance(ext, int):
                out.append(f"{ext} <= {trips * self.span(cfg, ax)}")
        return list(dict.fromkeys(out))

    def span(self, cfg: TileConfig, ax: str) -> int:
        """Elements of in-team axis `ax` that one trip of its sweep loop covers (across the block)."""
        if ax == cfg.lane and not self.col:
            return 32 * self.twl(cfg) * (cfg.warps if cfg.warp_axis is None else 1)
        if cfg.lanew and ax == cfg.lanew:
            return cfg.lanes_w
        if ax == cfg.warp_axis:
            return cfg.warps * (cfg.lanes_w if self.col and not cfg.lanew else 1)
        if ax == cfg.tile and cfg.tile != cfg.lane:
            return cfg.tw
        return 1

    def _thread_on_warp_axis(self) -> ir.Expr:
        cfg = self.c
        if not self.col:
            return V("_w")
        if cfg.lanew:
            return V("_tq")
        return add(mul(V("_tq"), C(cfg.lanes_w)), V("_tw")) if cfg.lanes_w > 1 else V("_tq")

    def team_warps(self) -> bool:
        """Column tiles whose warps (and remaining lanes) split a team axis: every thread has its own team points
        (no exchange; reductions over in-team axes are thread-serial)."""
        return self.col and self.cfg.warp_axis is not None and self.cfg.warp_axis in self.a.team

    def team_guards(self) -> list[str]:
        """Conditions that a thread's team point exists (column tiles: the lane axis, a team warp axis)."""
        cfg, a = self.c, self.a
        out = []
        if self.col:
            out.append(f"{fx(self.pos[cfg.lane])} < {format_expr(dim_expr(a.axes[cfg.lane]))}")
            if self.team_warps() and cfg.warp_axis in cfg.grid:
                out.append(f"{fx(self.pos[cfg.warp_axis])} < {format_expr(dim_expr(a.axes[cfg.warp_axis]))}")
        return out

    @staticmethod
    def twl(cfg: TileConfig) -> int:
        """Elements of the lane axis per lane."""
        return cfg.tw if cfg.tile == cfg.lane else 1

    def sweep_axes(self, cfg: TileConfig) -> list[str]:
        """In-team axes the sweeps loop over, outermost first: plain loops, the warp axis, the lane axis."""
        a = self.a
        order = [ax for ax in a.inner if ax not in (cfg.warp_axis, cfg.lane, cfg.tile, cfg.lanew)]
        if cfg.warp_axis in a.inner and cfg.warp_axis != cfg.lane:
            order.append(cfg.warp_axis)
        if cfg.lanew in a.inner:
            order.append(cfg.lanew)
        if cfg.lane in a.inner:
            order.append(cfg.lane)
        if self.tile_chunks(cfg):
            order.append(cfg.tile)
        return order

    def vector_width(self, width: int, dtype: ir.DType) -> int:
        """Elements per vector access of a `width`-element tile: the widest power of two that divides it and
        fits 16 bytes (1 on the scalar fallback path)."""
        vec = width if self.c.vectors else 1
        while vec > 1 and (vec * dtype.nbytes > 16 or width % vec):
            vec //= 2
        return max(1, vec)

    # ------------------------------------------------------------------ skeleton
    def _open_grid(self, L: Lines) -> None:
        cfg, a = self.cfg, self.a
        self.gridvars: dict[str, str] = {}
        self.griddims: list[ir.Expr] = []
        for k, ax in enumerate(cfg.grid):
            ext = dim_expr(a.axes[ax])
            if ax == cfg.lane:
                ext = cdiv_expr(ext, cfg.lanes_l * self.twl(cfg))
            elif ax == cfg.warp_axis:  # a team axis split over the block's warps and remaining lanes
                ext = cdiv_expr(ext, cfg.warps * cfg.lanes_w)
            L.open(f"parallel _g{k} in 0..{format_expr(ext)} @block")
            self.gridvars[ax] = f"_g{k}"
            self.griddims.append(ext)
        if cfg.persistent:
            L.open(f"parallel _bp in 0..{cfg.persistent} @block")
            self.griddims.append(C(cfg.persistent))
        if cfg.chunk:
            ext = cdiv_expr(dim_expr(a.axes[cfg.tloop[0]]), cfg.chunk)
            L.open(f"parallel _bc in 0..{format_expr(ext)} @block")
            self.griddims.append(ext)
        if not cfg.grid and not cfg.persistent and not cfg.chunk:
            L.open("parallel _g0 in 0..1 @block")
            self.griddims.append(C(1))

    def _open_threads(self, L: Lines) -> None:
        cfg = self.cfg
        if self.col:
            L.open(f"parallel _tq in 0..{cfg.warps} @thread")
            L.open(f"parallel _tl in 0..{cfg.lanes_l} @thread")
            if cfg.lanes_w > 1:
                L.open(f"parallel _tw in 0..{cfg.lanes_w} @thread")
        else:
            L.open(f"parallel _w in 0..{cfg.warps} @warp")
            L.open("parallel _l in 0..32 @lane")

    def exchanges(self) -> bool:
        """Whether the warps of a block share team points (slots are combined across warps)."""
        cfg = self.cfg
        return bool(self.a.slots) and cfg.warps > 1 and (cfg.warp_axis in self.a.inner or not self.col)

    def _lanes_reduce(self) -> bool:
        """Whether the remaining lanes of a column tile split an in-team axis (slots combine across them)."""
        return self.col and self.cfg.lanes_w > 1 and self.cfg.lanew_axis in self.a.inner

    def twt(self, cfg: TileConfig) -> int:
        """Width of a team value: the tile when the tile axis is a team axis, else 1."""
        return cfg.tw if cfg.tile is not None and cfg.tile in self.a.team else 1

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
        from passes.schedule.tiles_io import operands
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
            if ax == cfg.lane:
                self.pos[ax] = add(mul(V(v), C(cfg.lanes_l * self.twl(cfg))), mul(V("_tl"), C(self.twl(cfg))))
            elif ax == cfg.warp_axis:
                self.pos[ax] = add(mul(V(v), C(cfg.warps * cfg.lanes_w)), self._thread_on_warp_axis())
            else:
                self.pos[ax] = V(v)
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
            if self.exchanges():
                decl(alloc(f"{px}x{k}", s.dtype, [cfg.warps, wt] if self.col else [cfg.warps], "reg"))
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
            if ax == cfg.warp_axis:  # a team axis split over the block's threads, walked in steps of them
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
                B(f"copy {px}x{k}[0:{cfg.warps}, 0:{wt}] <- _red{k}[0:{cfg.warps}, {wt} * _tl:{wt} * _tl + {wt}]")
                B(f"{px}a{k}[0:{wt}] = {ops[k]}({px}x{k}[0:{cfg.warps}, 0:{wt}], axis=0)")
            else:
                B(f"copy {px}x{k}[0:{cfg.warps}] <- _red{k}[0:{cfg.warps}]")
                B(f"{px}a{k}[0:1] = {ops[k]}({px}x{k}[0:{cfg.warps}])")

    def _team_values(self, phase: int) -> None:
        a, B, px = self.a, self.B, self.px
        for name, _ in a.teamdefs:
            if a.ready[name] == phase + 1:
                B(f"{px}v_{name}[0:{self.tw_team}] = {format_expr(self.tr(a.teamexprs[name]))}")

    def batched(self) -> list[str]:
        """Team results stored once per chunk of team points (row tiles walking a chunked team axis that is the
        result's last dimension): one coalesced store of `chunk` consecutive values instead of one each."""
        cfg, a = self.cfg, self.a
        if self.col or not cfg.chunk:
            return []
        return [n for n in a.team_stores if self._target_axes(n)[-1:] == [cfg.tloop[0]]]

    def _team_stores(self) -> None:
        cfg, a, B, px = self.c, self.a, self.B, self.px
        batched = self.batched()
        if batched:
            B.open("if _l == 0" + (" and _w == 0" if cfg.warps > 1 else ""))
            for name in batched:
                B(f"{px}s_{name}[0:1] = {px}v_{name}[0:1]")
                B(f"copy _sb_{name}[_tp:_tp + 1] <- {px}s_{name}[0:1]")
            B.close()
        if not [n for n in a.team_stores if n not in batched]:
            return
        if self.col:
            conds = self.team_guards()
            if not self.team_warps():
                conds += ["_tq == 0"] if cfg.warps > 1 else []
                conds += ["_tw == 0"] if cfg.lanes_w > 1 else []
        else:
            conds = ["_l == 0"] + (["_w == 0"] if cfg.warps > 1 else [])
        B.open(f"if {' and '.join(conds)}")
        for name in a.team_stores:
            if name in batched:
                continue
            B(f"{px}s_{name}[0:{self.tw_team}] = {px}v_{name}[0:{self.tw_team}]")
            self._store(name, f"{px}s_{name}", self.tw_team)
        B.close()

    def _batched_stores(self) -> None:
        """After the chunk's team points: lanes store the chunk's results, consecutive lanes consecutive points."""
        cfg, a, B, px = self.c, self.a, self.B, self.px
        batched = self.batched()
        if not batched:
            return
        ax = cfg.tloop[0]
        B("sync @block")
        saved = self.pos[ax]
        self.pos[ax] = add(mul(V("_bc"), C(cfg.chunk)), V("_l"))
        lead = f"_l < {cfg.chunk}" + (" and _w == 0" if cfg.warps > 1 else "")
        B.open(f"if {lead} and {fx(self.pos[ax])} < {format_expr(dim_expr(a.axes[ax]))}")
        for name in batched:
            B(f"copy {px}s_{name}[0:1] <- _sb_{name}[_l:_l + 1]")
            self._store(name, f"{px}s_{name}", 1)
        B.close()
        self.pos[ax] = saved

    # ------------------------------------------------------------------ loads and stores
    def staged(self) -> list:
        """Team-level scalars of row tiles with several warps: one thread loads them into shared memory and
        every warp copies them (one sector per team point instead of one per warp)."""
        if self.col or self.cfg.warps == 1:
            return []
        return [op for op in self.ops if op.level == "team" and op.mode == "scalar"]

    def _loads(self, level: str) -> None:
        """Loads outside the sweeps; a column tile's lanes past the team axis's end load nothing."""
        todo = [op for op in self.ops if op.level == level]
        if not todo:
            return
        staged = [op for op in self.staged() if op in todo] if level == "team" else []
        if staged:
            self.B.open("if _w == 0 and _l == 0")
            for op in staged:
                text, _ = self.region(op.ref.name, op.ref.index, 1)
                self.B(f"load _sv{op.k}[0:1] <- {text}")
            self.B.close()
            self.B("sync @block")
            for op in staged:
                self.B(f"copy {op.reg()}[0, 0:1] <- _sv{op.k}[0:1]")
            todo = [op for op in todo if op not in staged]
        if not todo:
            return
        guards = self.team_guards()
        if guards:
            self.B.open(f"if {' and '.join(guards)}")
        for op in todo:
            op.load(C(0))
        if guards:
            self.B.close()

    def _block_cache(self) -> None:
        """Cached configs that walk team axes: inputs no walked team axis changes are loaded once per block."""
        todo = [op for op in self.ops if op.block_cached]
        if not todo:
            return
        depth, idx = self._open_sweep(True)
        for op in todo:
            op.load(idx)
        for _ in range(depth):
            self.B.close()

    def _iota_needed(self) -> bool:
        a, cfg = self.a, self.cfg
        exprs = [s.arg for s in a.slots] + [a.inline(a.full[n]) for n in a.full_stores] + [c.arg for c in a.cross]
        exprs += list(a.teamexprs.values())
        return cfg.tile is not None and any(cfg.tile in value_vars(e) for e in exprs)

    def _iota(self) -> None:
        cfg, B, px = self.c, self.B, self.px
        if cfg.tile is None or not self._iota_needed():
            return
        B.open(f"for _e in 0..{self.w}")
        B(f"{px}ix[_e:_e + 1] = {fx(add(self.pos[cfg.tile], V('_e')))}")
        B.close()

    def region(self, tensor: str, index: tuple, width: int) -> tuple[str, bool]:
        """Text of the region `tensor[index]` (canonical indices) at the current positions, and whether it is a
        tile along the tile axis (its last index is the tile axis itself)."""
        cfg = self.c
        parts: list = []
        is_tile = False
        for d, i in enumerate(index):
            if width > 1 and d == len(index) - 1 and isinstance(i, ir.Var) and i.name == cfg.tile:
                parts.append((self.pos[cfg.tile], width))
                is_tile = True
            else:
                parts.append(self.at(i))
        return region(tensor, parts), is_tile

    def at(self, e: ir.Expr) -> ir.Expr:
        """An index expression at the current positions."""
        return simplify(translate(e, lambda r: r, lambda v: self.pos.get(v.name, v)))

    def _store(self, name: str, reg: str, width: int) -> None:
        B, dt = self.B, self.a.types[name].dtype
        idx = tuple(ir.Var(ax) for ax in self._target_axes(name))
        text, is_tile = self.region(name, idx, width)
        if is_tile:
            vec = self.vector_width(width, dt)
            B(f"store {text} <- {reg}[0:{width}] with {f'vec={vec}, ' if vec > 1 else ''}mask")
        elif width > 1:
            tx = self.c.tile
            B.open(f"for _e in 0..{width}")
            saved = self.pos[tx]
            self.pos[tx] = add(saved, V("_e"))
            B(f"store {self.region(name, idx, 1)[0]} <- {reg}[_e:_e + 1] with mask")
            self.pos[tx] = saved
            B.close()
        else:
            B(f"store {text} <- {reg}[0:1]")

    def _target_axes(self, name: str) -> list[str]:
        st = next(s for s in self.a.unit.stmts if s.target == name)
        vm = self.a.unit.group.varmap[st.id]
        return [vm[v] for v in st.out_vars]

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

    # ------------------------------------------------------------------ cross-team reductions
    def _cross_slots(self, c) -> int:
        return max(1, dict(self.c.caps).get(self.c.lane, 1)) if c.out_axes and self.c.cache else 1

    def _cross_width(self, c) -> int:
        return self.twl(self.c) if c.out_axes else 1

    def part_name(self, c) -> str:
        return f"{self.kname}_{c.target}_part"

    def _block_index(self) -> list[ir.Expr]:
        out: list[ir.Expr] = [V(v) for v in self.gridvars.values()]
        if self.cfg.persistent:
            out.append(V("_bp"))
        if self.cfg.chunk:
            out.append(V("_bc"))
        return out or [C(0)]

    def _part_index(self, c) -> tuple:
        return tuple(self._block_index()) + tuple(ir.Var(ax) for ax in c.out_axes)

    def _part_store(self, c, reg: str, load: bool = False) -> str:
        w = self._cross_width(c)
        text, _ = self.region(self.part_name(c), self._part_index(c), w)
        vec = self.vector_width(w, c.dtype)
        attrs = f"with {f'vec={vec}, ' if vec > 1 else ''}mask" + (", other=0" if load else "")
        return f"load {reg} <- {text} {attrs}" if load else f"store {text} <- {reg} {attrs}"

    def _cross_init(self) -> None:
        a, B, px = self.a, self.B, self.px
        for k, c in enumerate(a.cross):
            B(f"{px}c{k}[0:{self._cross_slots(c)}, 0:{self._cross_width(c)}] = {identity(c.op, c.dtype)}")
            if c.out_axes and not self.c.cache:  # streaming: this block's partial row in @global, updated in place
                depth, _ = self._open_sweep(False)
                B(self._part_store(c, f"{px}c{k}[0, 0:{self._cross_width(c)}]"))
                for _ in range(depth):
                    B.close()

    def _cross_accumulate(self, k: int, c) -> None:
        B, px, w = self.B, self.px, self.w
        op = "sum" if c.op == "mean" else c.op
        if not c.out_axes:
            acc = f"{px}c{k}[0, 0:1]"
            B(f"{acc} = {combine(op, acc, f'{px}u{k}[0:{w}]')}")
            return
        cw = self._cross_width(c)
        row = fx(self.slot_index) if self.c.cache else "0"
        acc = f"{px}c{k}[{row}, 0:{cw}]"
        if not self.c.cache:
            B(self._part_store(c, acc, load=True))
        B(f"{acc} = {_update(op, acc, f'{px}u{k}[0:{cw}]')}")
        if not self.c.cache:
            B(self._part_store(c, acc))

    def _cross_finish(self) -> None:
        cfg, a, B, px = self.c, self.a, self.B, self.px
        for k, c in enumerate(a.cross):
            op = "sum" if c.op == "mean" else c.op
            if not c.out_axes:  # one partial per block: reduce over the block's threads
                B(f"allreduce {op} {px}c{k}[0, 0:1] over _l")
                if cfg.warps > 1:
                    B.open("if _l == 0")
                    B(f"copy _xred{k}[_w:_w + 1] <- {px}c{k}[0, 0:1]")
                    B.close()
                    B("sync @block")
                    B(f"copy {px}y{k}[0:{cfg.warps}] <- _xred{k}[0:{cfg.warps}]")
                    B(f"{px}c{k}[0, 0:1] = {op}({px}y{k}[0:{cfg.warps}])")
                B.open("if _l == 0" + (" and _w == 0" if cfg.warps > 1 else ""))
                B(f"store {self.part_name(c)}[{', '.join(fx(i) for i in self._block_index())}] <- {px}c{k}[0, 0:1]")
                B.close()
            elif cfg.cache:
                depth, idx = self._open_sweep(True)
                B(self._part_store(c, f"{px}c{k}[{fx(idx)}, 0:{self._cross_width(c)}]"))
                for _ in range(depth):
                    B.close()

    def partial_allocs(self) -> list[str]:
        out = []
        for c in self.a.cross:
            dims = [_dim(d) for d in self.griddims] + [self.a.axes[ax] for ax in c.out_axes]
            out.append(alloc(self.part_name(c), c.dtype, dims, "global"))
        return out

    def combine_kernel(self, c) -> str:
        """`target[out] = outer(op over blocks of part[blocks, out])`, one thread per output element."""
        from passes.middle.graph import Stmt
        from passes.middle.printer import standalone_kernel
        st = c.stmt
        qv = [f"_q{k}" for k in range(len(self.griddims))]
        inv = {ax: v for v, ax in self.a.unit.group.varmap[st.id].items()}
        ref = ir.Ref(self.part_name(c), tuple(ir.Var(v) for v in qv) + tuple(ir.Var(inv[ax]) for ax in c.out_axes))
        red: ir.Expr = ir.Reduce("sum" if c.op == "mean" else c.op, ref)
        if c.op == "mean":
            red = ir.BinOp("/", red, prod_expr([st.ranges[v] for v in st.reduce_vars[0]]))
        outer = translate(c.outer, lambda r: red if r.name == "@x" else r,
                          lambda v: ir.Var(inv[v.name]) if v.name in inv else v)
        ranges = {v: st.ranges[v] for v in st.out_vars}
        ranges.update({v: _dim(self.griddims[k]) for k, v in enumerate(qv)})
        cs = Stmt(st.id, st.target, st.out_vars, ranges, outer, {0: tuple(qv)}, st.loc)
        ptype = ir.TensorType(c.dtype, tuple(ranges[v] for v in qv) + tuple(st.ranges[v] for v in st.out_vars))
        return standalone_kernel(self.a.g, cs, f"{self.kname}_{c.target}", {self.part_name(c): ptype})


def _dim(e: ir.Expr):
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Var):
        return e.name
    raise Unsupported("a partial buffer over a tiled grid axis")


def _acc_dt(d: ir.DType) -> ir.DType:
    return ir.DType.f32 if d.is_float else d


def _splice(L: Lines, B: Lines) -> None:
    for line in B.lines:
        L.lines.append("  " * L.depth + line)
