"""The thread and grid layout of a tile kernel (passes/schedule/tiles.py; a mixin of TileKernel, which sets `a`,
`c`, `cfg`, `col` and `pos`): the fast path's size guards, how much of an in-team axis one sweep trip covers, the
team-existence guards of column tiles, the sweep order, which lanes and warps combine slots, vector widths, the
`@block` grid and `@thread` / `@warp` scopes, and a team axis's position from its grid variable."""
from __future__ import annotations

from gir import ir
from gir.printer import format_expr
from gir.passes.schedule.emit import C, Lines, V, add, dim_expr, fx, mul
from gir.passes.schedule.tiles_plan import TileConfig


def cdiv_expr(e: ir.Expr, n: int) -> ir.Expr:
    return e if n == 1 else ir.Call("cdiv", (e, C(n)))


def tile_vector_width(width: int, nbytes: int) -> int:
    """Elements per vector access of a `width`-element tile of `nbytes`-byte elements: the widest power of two
    (a width gir/verify_kernel accepts) that divides `width` and fits 16 bytes; 1 when none does (odd widths)."""
    vec = 1
    while width % (2 * vec) == 0 and 2 * vec * nbytes <= 16:
        vec *= 2
    return vec


class TileLayout:
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
        if self.col and cfg.lane in self.pos:
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
        return tile_vector_width(width, dtype.nbytes) if self.c.vectors else 1

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

    def _grid_pos(self, cfg: TileConfig, ax: str, v: str) -> ir.Expr:
        if ax == cfg.lane:
            return add(mul(V(v), C(cfg.lanes_l * self.twl(cfg))), mul(V("_tl"), C(self.twl(cfg))))
        if ax == cfg.warp_axis:
            return add(mul(V(v), C(cfg.warps * cfg.lanes_w)), self._thread_on_warp_axis())
        return V(v)
