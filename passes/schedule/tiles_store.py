"""Team-level loads and the stores of the tile kernel (a mixin of TileKernel, tiles.py): loads outside the sweeps
(block and team level; team scalars staged through shared memory), the tile-axis iota, regions of tensors at the
current positions, full and team stores (batched into coalesced stores for chunked team loops)."""
from __future__ import annotations

from gir import ir
from gir.printer import format_expr
from gir.passes.schedule.emit import C, V, add, dim_expr, fx, mul, region, simplify
from gir.passes.schedule.tiles_io import translate, value_vars


class TileStores:
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
