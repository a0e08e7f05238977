"""Tiled transpose through shared memory: a 32x33 tile (padding against bank conflicts).

For `y[..., b, ..., a'] = x[..., a, ..., b']` where the innermost dims differ: each block moves one
32x32 tile; threads read rows of x coalesced along x's innermost dim, write the tile, and after a
barrier read it transposed and write rows of y coalesced along y's innermost dim.
"""
from __future__ import annotations

from gir import ir
from gir.printer import format_expr
from gir.shapes import FuncInfo
from gir.passes.schedule.emit import C, Lines, V, add, alloc, dim_expr, fx, mul
from gir.passes.schedule.groups import Group

TILE, ROWS = 32, 8


class TransposeKernel:
    """`src` is the one tensor reference the value reads (default: the value itself); the value is applied to
    it element-wise on the way out of the tile (`y[j, i] = exp(x[i, j]) * 2.0`)."""

    def __init__(self, group: Group, info: FuncInfo, src: ir.Ref | None = None):
        st = group.stmts[0]
        self.st, self.info = st, info
        self.src: ir.Ref = src if src is not None else st.stmt.value
        self.xin = self.src.index[-1].name      # contiguous in x
        self.yin = st.out_vars[-1]               # contiguous in y
        self.others = [v for v in st.out_vars if v not in (self.xin, self.yin)]
        self.dtype = info.types[self.src.name].dtype
        self.odtype = info.types[st.stmt.target.name].dtype

    def emit(self, kname: str, warp: int) -> str:
        st, L = self.st, Lines()
        rng = st.ranges
        L.open(f"kernel {kname}")
        env: dict[str, ir.Expr] = {}
        blocks = self.others[-1:]
        loops = self.others[:-1]
        for k, v in enumerate(blocks):
            L.open(f"parallel _bo in 0..{format_expr(dim_expr(rng[v]))} @block")
            env[v] = V("_bo")
        L.open(f"parallel _by in 0..cdiv({format_expr(dim_expr(rng[self.yin]))}, {TILE}) @block")
        L.open(f"parallel _bx in 0..cdiv({format_expr(dim_expr(rng[self.xin]))}, {TILE}) @block")
        L(alloc("_tile", self.dtype, [TILE, TILE + 1], "shared"))
        L.open(f"parallel _ty in 0..{ROWS} @thread")
        L.open(f"parallel _tx in 0..{TILE} @thread")
        L(alloc("_v", self.dtype, [1], "reg"))
        computed = self.st.stmt.value != self.src
        if self.odtype != self.dtype or computed:
            L(alloc("_o", self.odtype, [1], "reg"))
        for v in loops:
            L.open(f"for _o_{v} in 0..{format_expr(dim_expr(rng[v]))}")
            env[v] = V(f"_o_{v}")
        xa, ya = dim_expr(rng[self.xin]), dim_expr(rng[self.yin])
        # read: tile row r = yin offset, column tx = xin offset (coalesced in x)
        L.open(f"for _k in 0..{TILE // ROWS}")
        r = add(V("_ty"), mul(V("_k"), C(ROWS)))
        e = dict(env)
        e[self.xin] = add(mul(V("_bx"), C(TILE)), V("_tx"))
        e[self.yin] = add(mul(V("_by"), C(TILE)), r)
        L.open(f"if {fx(e[self.xin])} < {format_expr(xa)} and {fx(e[self.yin])} < {format_expr(ya)}")
        L(f"load _v[0:1] <- {_ref(self.src.name, self.src.index, e)}")
        L(f"copy _tile[{fx(r)}, _tx:_tx + 1] <- _v[0:1]")
        L.close()
        L.close()
        L("sync @block")
        L.open(f"for _k in 0..{TILE // ROWS}")
        e = dict(env)
        e[self.yin] = add(mul(V("_by"), C(TILE)), V("_tx"))
        e[self.xin] = add(mul(V("_bx"), C(TILE)), r)
        L.open(f"if {fx(e[self.xin])} < {format_expr(xa)} and {fx(e[self.yin])} < {format_expr(ya)}")
        L(f"copy _v[0:1] <- _tile[_tx, {fx(r)}:{fx(add(r, C(1)))}]")
        src = "_v[0:1]"
        if self.odtype != self.dtype or computed:
            L(f"_o[0:1] = {format_expr(self._apply())}")
            src = "_o[0:1]"
        L(f"store {_ref(st.stmt.target.name, [ir.Var(v) for v in st.out_vars], e)} <- {src}")
        L.close()
        L.close()
        if loops:
            # the tile is reused by the next iteration: wait until everyone has read it
            L("sync @block")
        while L.depth:
            L.close()
        return L.text()


    def _apply(self) -> ir.Expr:
        """The statement's value with its tensor reference replaced by the register `_v`."""
        from gir.passes.builtin.exprs import map_expr
        reg = ir.Ref("_v", (ir.Slice(C(0), C(1)),))
        return map_expr(self.st.stmt.value, lambda x: reg if isinstance(x, ir.Ref) and x == self.src else x)


def _ref(name, index, env) -> str:
    from gir.passes.schedule.emit import subst
    return f"{name}[{', '.join(fx(subst(i, env)) for i in index)}]"
