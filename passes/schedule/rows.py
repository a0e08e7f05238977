"""The fused row kernel: one team (a block, or a warp) per row of a row group.

Every full-rank intermediate is inlined and recomputed on chip; reductions are split into
*phases* (a reduction whose argument needs an earlier row statistic runs in a later phase).
Each phase is one pass over the row's chunks: per-thread partials, then a warp all-reduce and,
for block teams, a shared-memory exchange. Inputs are cached in registers across phases when
the row fits (`cached` chunks), otherwise re-read from global memory each phase.
Lanes map to consecutive elements of the innermost column dim (coalesced), `vec` elements each.
The analysis of the group (slots, phases, input classes) is in rowplan.py; multi-block rows in split.py.
"""
from __future__ import annotations

from gir import ir
from gir.printer import format_expr
from gir.shapes import _walk
from gir.passes.schedule import halo, shift
from gir.passes.schedule.emit import (C, Lines, V, add, alloc, combine, dim_expr, fx, identity, mul, region,
                                  simplify, subst, tile)
from gir.passes.schedule.groups import cvar, rvar
from gir.passes.schedule.kinds import compute_dtype
from gir.passes.schedule.rowplan import ColRef, RowAnalysis, RowConfig, _Unsupported, staged_rows

__all__ = ["RowKernel", "RowConfig", "ColRef", "_Unsupported"]


class RowKernel(RowAnalysis):
    """Emission of the fused row kernel for one RowConfig."""

    def emit(self, cfg: RowConfig, kname: str, fallback: RowConfig | None, guards: list[str],
             middle: list[tuple[list[str], RowConfig]] | None = None) -> str:
        """The kernel text. With guards: `if guards { cfg } else if g1 { m1 } ... else { fallback }`,
        where `middle` holds the intermediate (guards, config) variants."""
        L = Lines()
        g = self.g
        warp_mode = cfg.rows_per_block > 1
        NW = cfg.rows_per_block if warp_mode else cfg.threads // self.warp
        L.open(f"kernel {kname}")
        self.kname = kname
        R = list(g.R) if g.R else [1]
        bvars = [f"_b{k}" for k in range(len(R))]
        for k, ext in enumerate(R[:-1]):
            L.open(f"parallel {bvars[k]} in 0..{format_expr(dim_expr(ext))} @block")
        last = dim_expr(R[-1])
        if cfg.persistent:
            L.open(f"parallel {bvars[-1]} in 0..{cfg.persistent} @block")
        elif warp_mode:
            L.open(f"parallel {bvars[-1]} in 0..cdiv({format_expr(last)}, {cfg.rows_per_block}) @block")
        else:
            L.open(f"parallel {bvars[-1]} in 0..{format_expr(last)} @block")
        if cfg.split:
            L.open(f"parallel _bs in 0..{cfg.split} @block")
        if not warp_mode and NW > 1:
            for s, (_, _, dt) in enumerate(self.slots):
                L(alloc(f"_red{s}", dt, [NW], "shared"))
        if staged_rows(cfg, self.warp):
            for i, r in enumerate(self.rowrefs):
                L(alloc(f"_sv{i}", self.types[r.name].dtype, [1], "shared"))
        for c in [cfg] + [c for _, c in (middle or [])]:
            if c.shift:
                shift.staged_allocs(self, L, c)
        halo.allocs(self, L, [cfg, fallback] + [c for _, c in (middle or [])])
        L.open(f"parallel _w in 0..{NW} @warp")
        L.open(f"parallel _l in 0..{self.warp} @lane")
        if guards and fallback is not None:
            chain = [(guards, cfg)] + [(gs, c) for gs, c in (middle or []) if gs]
            prefixes = ["_p", "_m", "_n", "_o"][:len(chain)]
            for px, (_, c) in zip(prefixes, chain):
                self._allocs(L, c, px, NW)
            self._allocs(L, fallback, "_q", NW)
            opened = 0
            for px, (gs, c) in zip(prefixes, chain):
                L.open(f"if {' and '.join(gs)}")
                self._body(L, c, px, NW, bvars)
                L.depth -= 1
                L.open("} else")
                opened += 1
            self._body(L, fallback, "_q", NW, bvars)
            for _ in range(opened):
                L.close()
        else:
            self._allocs(L, cfg, "_p", NW)
            self._body(L, cfg, "_p", NW, bvars)
        while L.depth:
            L.close()
        return L.text()

    def _allocs(self, L: Lines, cfg: RowConfig, px: str, NW: int) -> None:
        n = max(cfg.cached, 1)
        for i, c in enumerate(self.colrefs):
            k = cfg.cached // cfg.inner if (c.mode == "inv" and cfg.inner) else n
            L(alloc(f"{px}i{i}", c.dtype, [k, 1 if c.mode == "inv" else cfg.vec], "reg"))
        for i, r in enumerate(self.rowrefs):
            L(alloc(f"{px}v{i}", self.types[r.name].dtype, [1], "reg"))
        for s, (_, _, dt) in enumerate(self.slots):
            L(alloc(f"{px}a{s}", dt, [1], "reg"))
            L(alloc(f"{px}t{s}", dt, [cfg.vec], "reg"))
            if cfg.rows_per_block == 1 and NW > 1:
                L(alloc(f"{px}x{s}", dt, [NW], "reg"))
        for name, _ in self.rowdefs:
            L(alloc(f"{px}s_{name}", self._rowdt(name), [1], "reg"))
        for name in self.row_stores:
            L(alloc(f"{px}w_{name}", self.types[name].dtype, [1], "reg"))
        for name in self.full_stores:
            L(alloc(f"{px}o_{name}", self.types[name].dtype, [cfg.vec], "reg"))

    def _rowdt(self, name: str) -> ir.DType:
        return compute_dtype(self.types[name].dtype)

    def _body(self, L: Lines, cfg: RowConfig, px: str, NW: int, bvars: list[str]) -> None:
        g = self.g
        warp_mode = cfg.rows_per_block > 1
        T, VW = cfg.threads, cfg.vec
        tid = V("_l") if warp_mode else add(mul(V("_w"), C(self.warp)), V("_l"))
        R = list(g.R) if g.R else [1]
        blast: ir.Expr = V(bvars[-1])
        need_guard = bool(cfg.persistent) or warp_mode
        if cfg.persistent:
            blast = add(mul(V("_rr"), C(cfg.persistent)), blast)
        rowlast = add(mul(blast, C(cfg.rows_per_block)), V("_w")) if warp_mode else blast
        rowenv = {rvar(k): V(bvars[k]) for k in range(len(g.R) - 1)}
        if g.R:
            rowenv[rvar(len(g.R) - 1)] = rowlast
        self.px, self.cfg, self.rowenv, self.tid = px, cfg, rowenv, tid
        self._slot_done = {}
        if cfg.shift:
            shift.stage(self, L, cfg)
        elif cfg.persistent and cfg.cached:
            bc = [i for i, c in enumerate(self.colrefs) if c.broadcast]
            if bc:
                self._chunks(L, cfg, lambda kk, cb: self._loads(L, bc, kk, cb))
        if cfg.persistent:
            per = cfg.persistent * cfg.rows_per_block
            L.open(f"for _rr in 0..cdiv({format_expr(dim_expr(R[-1]))}, {per})")
        ext_last = R[-1]
        row_guard = need_guard and not (isinstance(ext_last, int) and
                                        ext_last % (cfg.rows_per_block * max(cfg.persistent, 1)) == 0)
        if row_guard:
            L.open(f"if {fx(rowlast)} < {format_expr(dim_expr(ext_last))}")
        if cfg.shift:  # the row's skew: one iteration, so that column starts stay affine (shift.py)
            sk = format_expr(shift.skew_expr(self, cfg))
            L.open(f"for _s in {sk}..{sk} + 1")
        if self.rowrefs and staged_rows(cfg, self.warp):
            L.open("if _w == 0 and _l == 0")
            for i, r in enumerate(self.rowrefs):
                L(f"load _sv{i}[0:1] <- {format_expr(subst(r, rowenv))}")
            L.close()
            L("sync @block")
            for i, r in enumerate(self.rowrefs):
                L(f"copy {px}v{i}[0:1] <- _sv{i}[0:1]")
        else:
            for i, r in enumerate(self.rowrefs):
                L(f"load {px}v{i}[0:1] <- {format_expr(subst(r, rowenv))}")
        for s, (op, _, dt) in enumerate(self.slots):
            L(f"{px}a{s}[0:1] = {identity(op, dt)}")
        done: set[str] = set()
        self._rowstats(L, done)
        loaded_all = False
        for p in range(self.nphases):
            slots = [s for s in range(len(self.slots)) if self.slot_phase[s] == p]
            if cfg.cached:
                idx = [] if loaded_all else [i for i, c in enumerate(self.colrefs)
                                             if not (cfg.persistent and c.broadcast and not cfg.shift)]
                loaded_all = True
            else:
                idx = self._needed([self.slots[s][1] for s in slots])

            def chunk(kk, cb, slots=slots, idx=idx):
                self._loads(L, idx, kk, cb)
                for s in slots:
                    op, arg, dt = self.slots[s]
                    self._compute(L, f"{px}t{s}", arg, kk, cb)
                    if self._tail(cfg):
                        col = fx(add(cb, V('_e')))
                        L.open(f"for _e in 0..{VW}")
                        L.open(f"if {col} >= {format_expr(dim_expr(self.cin_ext))}" +
                               (f" or {col} < 0" if cfg.shift else ""))
                        L(f"{px}t{s}[_e:_e + 1] = {identity(op, dt)}")
                        L.close()
                        L.close()
                    L(f"{px}a{s}[0:1] = {combine(op, f'{px}a{s}[0:1]', f'{px}t{s}[0:{VW}]')}")
            self._chunks(L, cfg, chunk)
            self._exchange(L, slots, cfg, NW)
            if cfg.split:
                self._store_partials(L, NW)
                return
            self._rowstats(L, done)
        if self.full_stores:
            if cfg.cached:
                idx = [] if loaded_all else [i for i, c in enumerate(self.colrefs)
                                             if not (cfg.persistent and c.broadcast and not cfg.shift)]
            else:
                idx = self._needed([self._inline(self.full[n]) for n in self.full_stores])

            def store(kk, cb):
                self._loads(L, idx, kk, cb)
                for name in self.full_stores:
                    self._compute(L, f"{px}o_{name}", self._inline(self.full[name]), kk, cb)
                    ext = self.types[name].shape[-1]
                    vec = VW if VW > 1 and (cfg.shift or not isinstance(ext, int) or ext % VW == 0) else 1
                    parts = [self.rowenv.get(rvar(k), C(0)) for k in range(len(g.R))]
                    parts += [V(f"_k{m}") for m in range(len(g.C) - 1)] + [(cb, VW)]
                    attrs = f" with vec={vec}, mask" if vec > 1 else " with mask"
                    L(f"store {region(name, parts)} <- {px}o_{name}[0:{VW}]{attrs}")
            self._chunks(L, cfg, store)
        self._store_rows(L, "_l == 0" if warp_mode or NW == 1 else "_w == 0 and _l == 0")
        if cfg.shift:
            L.close()
        if row_guard:
            L.close()
        if cfg.persistent:
            if not warp_mode and NW > 1:
                L("sync @block")
            L.close()

    def _store_rows(self, L: Lines, lead: str) -> None:
        """One thread of the team stores the row results."""
        if not self.row_stores:
            return
        px = self.px
        L.open(f"if {lead}")
        for name in self.row_stores:
            L(f"{px}w_{name}[0:1] = {px}s_{name}[0:1]")
            parts = [self.rowenv[rvar(k)] for k in range(len(self.g.R))]
            L(f"store {region(name, parts)} <- {px}w_{name}[0:1]")
        L.close()

    def _store_partials(self, L: Lines, NW: int) -> None:
        from gir.passes.schedule.split import store_partials
        store_partials(self, L, NW, self.kname)

    def _tail(self, cfg: RowConfig) -> bool:
        if cfg.shift:
            return True
        n = cfg.threads * cfg.vec * (1 if cfg.outer else max(cfg.split, 1))
        return not (isinstance(self.cin_ext, int) and self.cin_ext % n == 0)

    def _rowstats(self, L: Lines, done: set[str]) -> None:
        for name, _ in self.rowdefs:
            if name in done:
                continue
            e = self.rowexprs[name]
            ok = True
            for x in _walk(e):
                if isinstance(x, ir.Ref) and x.name.startswith("@a"):
                    ok &= self._slot_done.get(int(x.name[2:]), False)
                elif isinstance(x, ir.Ref) and x.name in self.rownames:
                    ok &= x.name in done
            if not ok:
                continue
            L(f"{self.px}s_{name}[0:1] = {format_expr(self._tr(e, None, None, None))}")
            done.add(name)

    def _needed(self, exprs) -> list[int]:
        out = []
        for i, c in enumerate(self.colrefs):
            if any(any(isinstance(x, ir.Ref) and x == c.ref for x in _walk(e)) for e in exprs):
                out.append(i)
        return out

    def _chunks(self, L: Lines, cfg: RowConfig, fn) -> None:
        span = cfg.threads * cfg.vec
        for m in range(len(self.g.C) - 1):
            if m == 0 and cfg.split and cfg.outer:   # block _bs takes outer points _bs, _bs + split, ...
                L.open(f"for _q in 0..cdiv({format_expr(dim_expr(self.g.C[0]))} - _bs, {cfg.split})")
                continue
            L.open(f"for _k{m} in 0..{format_expr(dim_expr(self.g.C[m]))}")
        if cfg.cached and cfg.inner:  # two column dims: chunk (_k0, _k) is register slot _k0 * inner + _k
            L.open(f"for _k in 0..{cfg.inner}")
            kk = add(mul(V("_k0"), C(cfg.inner)), V("_k"))
        elif cfg.cached:
            L.open(f"for _k in 0..{cfg.cached}")
            kk = V("_k")
        elif cfg.split and not cfg.outer:
            L.open(f"for _k in 0..cdiv({format_expr(dim_expr(self.cin_ext))}, {span * cfg.split})")
            kk = C(0)
            cb = add(mul(add(mul(V("_k"), C(cfg.split)), V("_bs")), C(span)), mul(self.tid, C(cfg.vec)))
            fn(kk, cb)
            for _ in range(len(self.g.C)):
                L.close()
            return
        else:
            ext = add(dim_expr(self.cin_ext), V("_s")) if cfg.shift else dim_expr(self.cin_ext)
            L.open(f"for _k in 0..cdiv({format_expr(ext)}, {span})")
            kk = C(0)
        cb = add(mul(V("_k"), C(span)), mul(self.tid, C(cfg.vec)))
        if cfg.shift:  # the lane's column in the row
            cb = ir.BinOp("-", cb, V("_s"))
        fn(kk, cb)
        for _ in range(len(self.g.C)):
            L.close()

    def _env(self, cb: ir.Expr) -> dict[str, ir.Expr]:
        env = dict(self.rowenv)
        env.update({cvar(m): V(f"_k{m}") for m in range(len(self.g.C) - 1)})
        if self.cfg.split and self.cfg.outer:
            env[cvar(0)] = add(mul(V("_q"), C(self.cfg.split)), V("_bs"))
        env[self.cin] = cb
        return env

    def _loads(self, L: Lines, idx: list[int], kk: ir.Expr, cb: ir.Expr) -> None:
        VW = self.cfg.vec
        env = self._env(cb)
        idx = halo.load(self, L, idx, kk, cb)
        for i in idx:
            c = self.colrefs[i]
            dst = f"{self.px}i{i}"
            if c.mode == "inv" and self.cfg.inner:  # hoisted: once per outer column index
                L.open("if _k == 0")
                L(f"load {dst}[_k0, 0:1] <- {format_expr(subst(c.ref, env))}")
                L.close()
            elif c.mode == "inv":
                L(f"load {dst}[{fx(kk)}, 0:1] <- {format_expr(subst(c.ref, env))}")
            elif c.mode == "vec" and self.cfg.shift and c.broadcast:
                shift.copy_staged(self, L, i, kk, cb)
            elif c.mode == "vec":
                parts = [subst(x, env) for x in c.ref.index[:-1]] + [(subst(c.ref.index[-1], env), VW)]
                vec_ok = VW > 1 and c.aligned_offset and (bool(self.cfg.shift) or not isinstance(c.align_ext, int)
                                                          or c.align_ext % VW == 0)
                attrs = f" with vec={VW}, mask, other=0" if vec_ok else " with mask, other=0"
                L(f"load {dst}[{fx(kk)}, 0:{VW}] <- {region(c.ref.name, parts)}{attrs}")
            else:
                L.open(f"for _e in 0..{VW}")
                L.open(f"if {fx(add(cb, V('_e')))} < {format_expr(dim_expr(self.cin_ext))}")
                env_e = dict(env)
                env_e[self.cin] = add(cb, V("_e"))
                L(f"load {dst}[{fx(kk)}, _e:_e + 1] <- {format_expr(subst_simplify(c.ref, env_e))}")
                L.close()
                L.close()

    def _compute(self, L: Lines, dst: str, e: ir.Expr, kk: ir.Expr, cb: ir.Expr) -> None:
        VW = self.cfg.vec
        if self.uses_cin_value(e) or any(c.mode == "elem" and c.ref in list(_walk(e)) for c in self.colrefs):
            L.open(f"for _e in 0..{VW}")
            L(f"{dst}[_e:_e + 1] = {format_expr(self._tr(e, kk, cb, V('_e')))}")
            L.close()
        else:
            L(f"{dst}[0:{VW}] = {format_expr(self._tr(e, kk, cb, None))}")

    def _tr(self, e: ir.Expr, kk, cb, elem) -> ir.Expr:
        """Operator-layer expression → compute expression on register tiles."""
        VW = self.cfg.vec
        if isinstance(e, ir.Ref):
            if e.name.startswith("@a"):
                return tile(f"{self.px}a{e.name[2:]}", [(C(0), 1)])
            if e.name in self.rownames:
                return tile(f"{self.px}s_{e.name}", [(C(0), 1)])
            if e in self.rowrefs:
                return tile(f"{self.px}v{self.rowrefs.index(e)}", [(C(0), 1)])
            for i, c in enumerate(self.colrefs):
                if c.ref == e:
                    if c.mode == "inv":
                        return tile(f"{self.px}i{i}", [V("_k0") if self.cfg.inner else kk, (C(0), 1)])
                    return tile(f"{self.px}i{i}", [kk, (elem, 1) if elem is not None else (C(0), VW)])
            raise _Unsupported(f"unplanned reference {e.name}")
        if isinstance(e, ir.Var):
            if e.name == self.cin:
                return simplify(add(cb, elem if elem is not None else C(0)))
            if e.name.startswith("_c"):
                return V(f"_k{e.name[2:]}")
            if e.name.startswith("_r"):
                return simplify(self.rowenv[e.name])
            return e
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, self._tr(e.lhs, kk, cb, elem), self._tr(e.rhs, kk, cb, elem))
        if isinstance(e, ir.UnOp):
            return ir.UnOp(e.op, self._tr(e.operand, kk, cb, elem))
        if isinstance(e, ir.Call):
            return ir.Call(e.fn, tuple(self._tr(a, kk, cb, elem) for a in e.args))
        if isinstance(e, ir.Reduce):
            raise _Unsupported("reduction inside an element-wise value")
        return e

    def _exchange(self, L: Lines, slots: list[int], cfg: RowConfig, NW: int) -> None:
        px = self.px
        for s in slots:
            op = "sum" if self.slots[s][0] == "mean" else self.slots[s][0]
            L(f"allreduce {op} {px}a{s}[0:1] over _l")
        if cfg.rows_per_block == 1 and NW > 1 and slots:
            L.open("if _l == 0")
            for s in slots:
                L(f"copy _red{s}[_w:_w + 1] <- {px}a{s}[0:1]")
            L.close()
            L("sync @block")
            for s in slots:
                op = "sum" if self.slots[s][0] == "mean" else self.slots[s][0]
                L(f"copy {px}x{s}[0:{NW}] <- _red{s}[0:{NW}]")
                L(f"{px}a{s}[0:1] = {op}({px}x{s}[0:{NW}])")
        for s in slots:
            self._slot_done[s] = True


def subst_simplify(r: ir.Ref, env) -> ir.Ref:
    return ir.Ref(r.name, tuple(simplify(subst(i, env)) for i in r.index))
