"""Shifted column tiles: column reductions whose rows start off a 32-byte sector (f32 `y[j] = sum(x[i, j])` with
N odd: row i starts at byte 4 * N * i, so a warp's 32 consecutive columns straddle one sector more than they move).

The plain column tile puts lane l of every warp on column `32 * g + l` of every row (5 sectors per 128-byte warp
access for odd N). Here a block owns W = 32 * vec * win consecutive columns (`win` aligned windows of 32
vectors) and every warp access is shifted back by its row's skew `_s = (row start + g * W) mod A` (A elements per
sector): lane l of window t takes the vector at column `g * W + 32 * vec * t + vec * l - _s`, so each access starts
on a sector (and a 16-byte vector) boundary and a row costs `win + 1` aligned accesses for `win` windows of data
(one sector more per row and block instead of one per access).

A thread's columns then depend on the skew. The warps split the reduced axis with a row stride that is a multiple
of A / gcd(pitch, A), so the skew is constant per warp (it depends on the warp and the block, not on the row): a
thread keeps one accumulator per column it holds (`win + 1` vectors); elements outside the block's W columns are
the reduction identity (`select` on a column iota). The cross-warp combine goes through the shared memory the
tile recipe already uses, indexed by the column (offset A), so every warp reads the totals of its own shifted
columns: team values (means, the phases of a variance) are computed in the same layout, and team results are
stored element by element under the column mask.

As in shift.py the skew must be quasi-affine: the kernel is specialised (size guard) on the hinted residues mod A
of the row pitches; other sizes take the plain column tile (32-column tiles walked across the block's W).
Not mapped (the plain tile is kept): full (element-wise) stores and cross-team reductions, operands along the
lane axis that are not streamed with the rows (a `b[j]` starts at another skew), mixed element sizes.
"""
from __future__ import annotations

from dataclasses import replace
from itertools import product

from gir import ir
from gir.affine import to_affine
from gir.printer import format_expr
from gir.passes.builtin.exprs import var_names
from gir.passes.schedule.emit import C, V, add, alloc, dim_expr, fx, identity, mul, simplify
from gir.passes.schedule.tiles import TileKernel, _update
from gir.passes.schedule.tiles_plan import TileAnalysis, TileConfig, Unsupported

SECTOR = 32


def _h(d, hints) -> int:
    return d if isinstance(d, int) else int(hints.get(d, 4096))


def row_refs(a: TileAnalysis, lane: str) -> list[ir.Ref]:
    """Inputs streamed with the rows along the lane axis (`x[..., lane]`)."""
    return [r for r in a.inputs if r.index and isinstance(r.index[-1], ir.Var) and r.index[-1].name == lane]


def _pitch_syms(a: TileAnalysis, refs) -> list[str]:
    out: list[str] = []
    for r in refs:
        for d in a.types[r.name].shape[1:]:
            if isinstance(d, str) and d not in out:
                out.append(d)
    return out


def start_coeffs(a: TileAnalysis, r: ir.Ref, res: dict[str, int], unit: int) -> dict[str, int] | None:
    """Coefficients mod `unit` of the canonical axes in the row start of `r` (pitch sizes by their residues),
    with the constant under key ''; None when an index is not affine."""
    shape = a.types[r.name].shape
    out: dict[str, int] = {"": 0}
    for k, idx in enumerate(r.index[:-1]):
        p = 1
        for d in shape[k + 1:]:
            p = p * (d if isinstance(d, int) else res[d]) % unit
        aff = to_affine(idx)
        if aff is None:
            return None
        out[""] = (out[""] + aff.const * p) % unit
        for n, c in aff.coeffs.items():
            out[n] = (out.get(n, 0) + c * p) % unit
    return {n: c for n, c in out.items() if c or n == ""}


def plan(a: TileAnalysis, cfg: TileConfig) -> dict[str, int]:
    """Check that `cfg` can shift; returns the skew's coefficients (canonical axes, '' the constant)."""
    lane, A = cfg.lane, cfg.skew
    if cfg.lane not in a.team or cfg.tile != lane or cfg.lanes_l != 32 or cfg.lanew:
        raise Unsupported("shifted column tiles need 32 lanes on the team lane axis")
    if cfg.warp_axis not in a.inner or cfg.tloop or cfg.persistent or cfg.chunk or cfg.caps:
        raise Unsupported("shifted column tiles need warps on an in-team axis and no walked team axes")
    if a.full_stores or a.cross:
        raise Unsupported("element-wise stores (or cross-team reductions) would write columns a neighbouring "
                          "block owns")
    rows = row_refs(a, lane)
    if not rows:
        raise Unsupported("no input is streamed along the lane axis")
    for r in a.inputs:
        if r not in rows and lane in var_names(r):
            raise Unsupported(f"'{r.name}' is read along the lane axis at another row start")
        if r in rows and (any(lane in var_names(i) for i in r.index[:-1]) or
                          not (set(var_names(r)) & set(a.inner))):
            raise Unsupported(f"'{r.name}' is not streamed with the rows")
    if len({a.types[r.name].dtype.nbytes for r in rows}) != 1:
        raise Unsupported("row operands of different element sizes")
    res = dict(cfg.residues)
    coeffs = [start_coeffs(a, r, res, A) for r in rows]
    if any(c is None for c in coeffs) or any(c != coeffs[0] for c in coeffs):
        raise Unsupported("row operands start at different skews")
    co = coeffs[0]
    for ax in a.inner:
        step = cfg.warps if ax == cfg.warp_axis else 1
        if co.get(ax, 0) * step % A:
            raise Unsupported(f"the skew changes along '{ax}' within a warp")
    return co


class SkewTileKernel(TileKernel):
    def __init__(self, a: TileAnalysis, cfg: TileConfig):
        super().__init__(a, cfg)
        self.coeffs = plan(a, cfg) if cfg.skew else {}
        self.A = cfg.skew
        self.vec = cfg.tw // (cfg.win + 1)
        self.W = 32 * self.vec * cfg.win

    # ------------------------------------------------------------------ configuration hooks
    def twl(self, cfg: TileConfig) -> int:
        if cfg.skew:
            return cfg.tw // (cfg.win + 1) * cfg.win
        return TileKernel.twl(cfg)

    def fallback(self) -> TileConfig:
        return replace(self.cfg, skew=0, win=0, residues=(), tw=1, caps=(), vectors=False)

    def guards(self, cfg: TileConfig) -> list[str]:
        if cfg.skew:
            return [f"{s} % {cfg.skew} == {r}" for s, r in cfg.residues]
        return super().guards(cfg)

    def _shared_allocs(self) -> list[str]:
        if not self.exchanges():
            return []
        return [alloc(f"_red{k}", s.dtype, [self.cfg.warps, self._wb()], "shared") for k, s in enumerate(self.a.slots)]

    def _wb(self) -> int:
        return self.W + 32 * self.vec + self.A

    def _grid_pos(self, cfg: TileConfig, ax: str, v: str) -> ir.Expr:
        if ax == self.cfg.lane and cfg.skew:
            return add(add(mul(V(v), C(self.W)), mul(V("_tl"), C(self.vec))), mul(V("_s"), C(-1)))
        if ax == self.cfg.lane:  # fallback: 32-column tiles walked across the block's W columns
            return add(add(mul(V(v), C(self.W)), mul(V("_u"), C(32))), V("_tl"))
        return super()._grid_pos(cfg, ax, v)

    # ------------------------------------------------------------------ body
    def body(self, B, cfg: TileConfig, px: str) -> None:
        if not cfg.skew:
            B.open(f"for _u in 0..{self.W // 32}")
            super().body(B, cfg, px)
            if self.exchanges():
                B("sync @block")  # the shared buffers are reused by the next tile
            B.close()
            return
        if self.exchanges():  # every column position of the exchange is defined (warps cover different ranges)
            wb = self._wb()
            B.open(f"for _z in 0..{-(-wb // 32)}")
            B.open(f"if 32 * _z + _tl < {wb}")
            for k, s in enumerate(self.a.slots):
                B(f"_red{k}[_tq, 32 * _z + _tl:32 * _z + _tl + 1] = {identity(s.op, s.dtype)}")
            B.close()
            B.close()
            B("sync @block")
        super().body(B, cfg, px)

    def _declare(self) -> None:
        super()._declare()
        if self.c.skew:
            self.allocs.append(alloc(f"{self.px}cx", ir.DType.i32, [self.w], "reg"))
            gpos = self._grid_col()
            self.lim = format_expr(simplify(add(dim_expr(self.a.axes[self.c.lane]), mul(gpos, C(-1)))))

    def _grid_col(self) -> ir.Expr:
        return mul(V(self.gridvars[self.c.lane]), C(self.W))

    def _skew(self) -> str:
        """`R` of the one-iteration loop `for _s in R..R + 1`: the skew in the thread's variables."""
        e: ir.Expr = C(self.coeffs.get("", 0))
        for ax, c in sorted(self.coeffs.items()):
            if not ax:
                continue
            if ax == self.c.warp_axis:
                p = self._thread_on_warp_axis()
            elif ax in self.a.inner:
                continue  # its steps are multiples of A
            else:
                p = self.pos[ax]
            e = add(e, mul(C(c), p))
        return f"({fx(e)}) % {self.A}"

    def _open_s(self) -> None:
        self.B.open(f"for _s in 0..{self.A}")  # constant bounds (traffic analyses evaluate them per block)
        self.B.open(f"if _s == {self._skew()}")

    def _rel(self, t: int, e: ir.Expr) -> ir.Expr:
        return simplify(add(add(mul(V("_tl"), C(self.vec)), mul(V("_s"), C(-1))), add(C(32 * self.vec * t), e)))

    def _valid(self, rel: str) -> str:
        return f"{rel} >= 0 and {rel} < {self.W} and {rel} < {self.lim}"

    def skew_load(self, op, slot: ir.Expr) -> None:
        B, lane, vec, k = self.B, self.c.lane, self.vec, self.c.win
        saved = self.pos[lane]
        for t in range(k + 1):
            self.pos[lane] = simplify(add(saved, C(32 * vec * t)))
            text, _ = self.region(op.ref.name, op.ref.index, vec)
            dst = f"{op.reg()}[{fx(slot)}, {t * vec}:{(t + 1) * vec}]"
            line = f"load {dst} <- {text} with {f'vec={vec}, ' if vec > 1 else ''}mask, other=0"
            if t == k:  # only the lanes whose vector reaches below W read the last window
                B(f"{dst} = {'0' if op.dtype.is_int else '0.0'}")
                B.open(f"if {vec} * _tl < _s")
                B(line)
                B.close()
            else:
                B(line)
        self.pos[lane] = saved

    def sweep(self, phase) -> None:
        if not self.c.skew:
            return super().sweep(phase)
        a, B, px, w = self.a, self.B, self.px, self.w
        slots = [k for k, s in enumerate(a.slots) if s.phase == phase] if phase is not None else []
        exprs = [a.slots[k].arg for k in slots]
        self._open_s()
        for t in range(self.c.win + 1):
            B.open(f"for _e in 0..{self.vec}")
            B(f"{px}cx[{t * self.vec} + _e:{t * self.vec} + _e + 1] = {fx(self._rel(t, V('_e')))}")
            B.close()
        depth, self.slot_index = self._open_sweep(False)
        for op in self.ops:
            if op.level == "sweep" and op.used_in(exprs):
                op.load(self.slot_index)
        self._iota()
        cx = f"{px}cx[0:{w}]"
        for k in slots:
            s = a.slots[k]
            op = "sum" if s.op == "mean" else s.op
            B(f"{px}t{k}[0:{w}] = {format_expr(self.tr(s.arg))}")
            val = f"select({self._valid(cx)}, {px}t{k}[0:{w}], {identity(op, s.dtype)})"
            B(f"{px}a{k}[0:{w}] = {_update(op, f'{px}a{k}[0:{w}]', val)}")
        for _ in range(depth + 2):
            B.close()

    def _iota(self) -> None:
        cfg = self.c
        if not cfg.skew:
            return super()._iota()
        if cfg.tile is None or not self._iota_needed():
            return
        for t in range(cfg.win + 1):
            self.B.open(f"for _e in 0..{self.vec}")
            col = add(self.pos[cfg.lane], add(C(32 * self.vec * t), V("_e")))
            self.B(f"{self.px}ix[{t * self.vec} + _e:{t * self.vec} + _e + 1] = {fx(col)}")
            self.B.close()

    def _combine(self, ks: list[int]) -> None:
        if not self.c.skew:
            return super()._combine(ks)
        cfg, a, B, px, vec = self.c, self.a, self.B, self.px, self.vec
        if not ks or not self.exchanges():
            return
        ops = {k: "sum" if a.slots[k].op == "mean" else a.slots[k].op for k in ks}

        def at(t: int) -> str:
            p = fx(add(self._rel(t, C(0)), C(self.A)))
            return f"{p}:{p} + {vec}"
        self._open_s()
        for k in ks:
            for t in range(cfg.win + 1):
                B(f"copy _red{k}[_tq, {at(t)}] <- {px}a{k}[{t * vec}:{(t + 1) * vec}]")
        B.close()
        B.close()
        B("sync @block")
        self._open_s()
        for k in ks:
            for t in range(cfg.win + 1):
                reg = f"{px}a{k}[{t * vec}:{(t + 1) * vec}]"
                B(f"{reg} = _red{k}[0, {at(t)}]")
                B.open(f"for _x in 1..{cfg.warps}")
                B(f"{reg} = {_update(ops[k], reg, f'_red{k}[_x, {at(t)}]')}")
                B.close()
        B.close()
        B.close()

    def _team_stores(self) -> None:
        if not self.c.skew:
            return super()._team_stores()
        cfg, a, B, px, w = self.c, self.a, self.B, self.px, self.w
        if not a.team_stores:
            return
        conds = self.team_guards() + (["_tq == 0"] if cfg.warps > 1 else [])
        self._open_s()
        B.open(f"if {' and '.join(conds)}")
        lane = cfg.lane
        saved = self.pos[lane]
        for name in a.team_stores:
            B(f"{px}s_{name}[0:{w}] = {px}v_{name}[0:{w}]")
            for t in range(cfg.win + 1):
                B.open(f"for _e in 0..{self.vec}")
                B.open(f"if {self._valid(fx(self._rel(t, V('_e'))))}")
                self.pos[lane] = simplify(add(saved, add(C(32 * self.vec * t), V("_e"))))
                self._store(name, f"{px}s_{name}[{t * self.vec} + _e:{t * self.vec} + _e + 1]", 1)
                B.close()
                B.close()
        self.pos[lane] = saved
        B.close()
        B.close()
        B.close()

    def _store(self, name: str, reg: str, width: int) -> None:
        if self.c.skew and reg.endswith("]"):
            idx = tuple(ir.Var(ax) for ax in self._target_axes(name))
            text, _ = self.region(name, idx, 1)
            self.B(f"store {text} <- {reg}")
            return
        super()._store(name, reg, width)


# ---------------------------------------------------------------------- search
def skew_candidates(a: TileAnalysis, m, hints, estimate) -> list:
    """Shifted column tiles for groups whose rows start off a sector at the hinted sizes (none otherwise)."""
    out = []
    if a.full_stores or a.cross:
        return out
    for lane in a.team:
        rows = row_refs(a, lane)
        if not rows:
            continue
        elem = a.types[rows[0].name].dtype.nbytes
        A = SECTOR // elem
        res = tuple((s, _h(s, hints) % A) for s in _pitch_syms(a, rows))
        co = start_coeffs(a, rows[0], dict(res), A)
        if co is None or not [n for n, c in co.items() if c and n]:
            continue  # every row starts on a sector at these sizes: nothing to shift
        others = tuple(x for x in a.team if x != lane)
        if len(others) > 2:
            continue
        # 16-byte vectors only: 16-bit tiles of 8-byte vectors (the 16-byte ones' exchange buffer does not fit
        # shared memory with the 16 warps a constant skew needs) moved 1.03x on sim but ran 7.7x slower than
        # unskewed tiles on an H200 (sum over the middle axis of [128, 4096, 4095] f16: 10.9 ms against 1.41 ms)
        vec = max(1, 16 // elem)
        for wa, warps, win in product(a.inner, (8, 16, 32), (2, 4)):
            cfg = TileConfig(lane, lane, vec * (win + 1), 32, wa, warps, others + (lane,), (),
                             skew=A, win=win, residues=res)
            try:
                SkewTileKernel(a, cfg)
            except Unsupported:
                continue
            est = _estimate(a, cfg, m, hints, estimate, vec, elem)
            if est is not None:
                out.append(est)
    return out


def _estimate(a, cfg: TileConfig, m, hints, estimate, vec: int, elem: int):
    """The plain vectorised column tile at sector-aligned sizes, its row reads scaled by (win + 1) aligned
    accesses per `win` windows' worth (each access of 32 vectors: 32 * vec * elem / 32 sectors, the last one
    sector), registers and shared memory for the wider tile."""
    A, win = cfg.skew, cfg.win
    ah = dict(hints)
    for s, _ in cfg.residues:
        ah[s] = max(A, _h(s, hints) // A * A)
    plain = replace(cfg, skew=0, win=0, residues=(), tw=vec)
    est = estimate(a, plain, m, ah)
    if est is None:
        return None
    per = 32 * vec * elem // SECTOR
    extra = 1.0 / (win * per)
    comp = a.unit.compulsory(a.g, hints)
    dram = est.dram_bytes * (1 + extra) * comp / max(a.unit.compulsory(a.g, ah), 1.0)
    nops = len(row_refs(a, cfg.lane))
    words = (win + 1) * vec * (nops + 2 * len(a.slots) + 2 * len(a.teamdefs) + 1)
    regs = words + m.reg_overhead
    budget = min(m.max_regs_per_thread, m.regs_per_sm // cfg.threads)
    smem = cfg.warps * (32 * vec * (win + 1) + A) * 4 * len(a.slots)
    if regs > budget or smem > m.smem_per_block_default:
        return None
    # memory time: the plain estimate's other terms, bytes in flight instead of threads (each thread has
    # `win + 1` independent vector loads per row in flight; the model's full rate is 1024 threads x 16 bytes)
    mem_plain = est.dram_bytes / m.dram_bw / max(est.notes.get("util", 1.0), 1e-3)
    threads = cfg.threads
    # the skewed tile's own blocks (the plain estimate's, at sizes rounded to the skew, were taken for them:
    # col_sum at 4093^2 ran on 16 blocks of W = 256 columns estimated as 32, 52 us against 180 us on an H200)
    blocks = 1
    for ax in cfg.grid:
        ext = _h(a.axes[ax], hints)
        blocks *= -(-ext // (32 * vec * win)) if ax == cfg.lane else \
            -(-ext // (cfg.warps * cfg.lanes_w)) if ax == cfg.warp_axis else ext
    resident = max(1, min(m.max_threads_per_sm // threads, 32, m.regs_per_sm // max(1, max(32, regs) * threads)))
    in_flight = min(blocks, resident * m.sms) * threads * (win + 1) * vec * elem
    util = min(1.0, in_flight / (m.sms * 1024 * 16)) * est.notes.get("lane_util", 1.0)
    floor = m.dispatch_s(blocks)   # the plain estimate took the larger of its memory time and its dispatch
    secs = max(est.seconds - max(mem_plain, m.dispatch_s(est.blocks)), 0.0) \
        + max(dram / m.dram_bw / max(util, 1e-3), floor)
    est.config, est.seconds, est.dram_bytes, est.regs, est.smem = cfg, secs, dram, regs, smem
    est.blocks = blocks
    est.compulsory = comp
    est.notes = dict(est.notes, skew=A, compulsory=est.compulsory)
    return est
