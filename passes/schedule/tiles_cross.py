"""Cross-team reductions of the tile kernel (a mixin of TileKernel, tiles.py): per-thread accumulators, per-block
partials in @global (read-modify-written in place on the streaming path), and the combine kernel."""
from __future__ import annotations

from gir import ir
from gir.passes.schedule.emit import C, V, alloc, combine, fx, identity, prod_expr
from gir.passes.schedule.tiles_io import translate
from gir.passes.schedule.tiles_plan import Unsupported


def _update(op: str, acc: str, val: str) -> str:
    return {"sum": f"{acc} + {val}", "prod": f"{acc} * {val}"}.get(op) or f"{op}({acc}, {val})"


class TileCross:
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
        from gir.passes.middle.graph import Stmt
        from gir.passes.middle.printer import standalone_kernel
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
