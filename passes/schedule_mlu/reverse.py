"""Axis reversals → explicit MLU GIR: `y[i, j] = x[i, N-1-j]` (reverse_rows), `y[i, j] = x[M-1-i, j]`, both at once,
and the 1-D `y[j] = x[N-1-j]`, as row tiles on NRAM reversed with the kernel-only `reverse()` (`__bang_mirror`).

A row of N elements is loaded into a tile of pitch P (N rounded up to whole 128-byte units, at least 64 elements,
the NRAM layout's pitch) and mirrored over the whole pitch, so its P - N pad elements land at the *front* of the
reversed row: the store reads `ra[0:R, P-N:P]`. A leading-axis reversal needs no extra DMA: tile `it` of y (rows
r0..r0+R) is loaded from x rows M-r0-R..M-r0 and its row order flipped on chip with `reverse(xa, 0)` (one-row
tiles of a leading-axis-only reversal compute nothing and are single GDRAM->GDRAM copies instead):

    parallel task_ in 0..32 @core {
      for it_ in 0..(NT - task_ + 31) // 32 {           # full row tiles, cyclic over the cores (pipelined)
        load  xa[0:R, 0:N] <- x[r0 : r0+R, 0:N]         # (reversed rows: x[M-r0-R : M-r0, 0:N])
        ta[0:R, 0:P] = reverse(xa[0:R, 0:P], 0)          # reversed rows only
        ra[0:R, 0:P] = reverse(ta[0:R, 0:P])             # reversed columns only
        store y[r0 : r0+R, 0:N] <- ra[0:R, P-N:P]
      }
      if task_ == NT % 32 { (the M % R tail rows, the same with an exact-size tile region) }
    }

Rows longer than a tile (`nram` bytes shared by the double-buffered load and store tiles and the scratch of the
row flip) are walked in column chunks of L elements (balanced, whole units) with one-row tiles: input chunk
[s, s+len) of a row lands at output columns [N-s-len, N-s). With at least as many rows as cores the rows are cyclic
and each core pipelines its row's chunks; with fewer rows the full chunks of each row are cyclic over the cores and
the tail chunks are spread over the cores that follow. Traffic is compulsory: x read once, y written once.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.affine import to_affine
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.rowmodel import NotRowModel
from gir.passes.machines import MLU370

UNIT = MLU370.vector_unit_bytes    # every mirrored row spans whole units


@dataclass(frozen=True)
class Reversal:
    x: str
    y: str
    m: int            # rows (1 for a 1-D tensor)
    n: int            # row length
    rank: int
    rev_rows: bool
    rev_cols: bool
    dtype: ir.DType


def _axis_map(src, var: str, extent: int) -> str | None:
    """'id' when `src` is `var`, 'rev' when it is `extent - 1 - var`, else None."""
    a = to_affine(src)
    if a is None or set(a.coeffs) != {var}:
        return None
    if a.coeffs[var] == 1 and a.const == 0:
        return "id"
    if a.coeffs[var] == -1 and a.const == extent - 1:
        return "rev"
    return None


def match_reverse(spec: ir.Func, info) -> Reversal | None:
    """The reversal when `spec` is one statement `y[v...] = x[w...]` (rank 1 or 2, same shapes and element type) with
    every w_k either v_k or extent-1-v_k and at least one axis reversed."""
    if len(info.stmts) != 1 or len(spec.results) != 1:
        return None
    st = info.stmts[0].stmt
    x, y = st.value, st.target
    params = {p.name: p for p in spec.params}
    if not isinstance(x, ir.Ref) or y.name != spec.results[0].name or x.name not in params:
        return None
    xt, yt = params[x.name].type, spec.results[0].type
    if xt != yt or len(yt.shape) not in (1, 2) or not all(isinstance(d, int) for d in yt.shape):
        return None
    if len(x.index) != len(yt.shape) or any(not isinstance(i, ir.Var) for i in y.index):
        return None
    names = [i.name for i in y.index]
    if len(set(names)) != len(names):
        return None
    maps = [_axis_map(src, v, ext) for src, v, ext in zip(x.index, names, yt.shape)]
    if None in maps or "rev" not in maps:
        return None
    m, n = (1, yt.shape[0]) if len(yt.shape) == 1 else yt.shape
    return Reversal(x.name, y.name, m, n, len(yt.shape), len(maps) == 2 and maps[0] == "rev", maps[-1] == "rev",
                    yt.dtype)


def reverse_func(spec: ir.Func, info, tasks: int = 32, nram: int = 768 * 1024, allow_sram: bool = True,
                 max_rows: int = 64) -> list:
    """Kernels for an axis reversal, or for element-wise compute on column reversals (reverse_compute.py); raises
    NotRowModel when `spec` is neither."""
    rv = match_reverse(spec, info)
    if rv is None:
        from gir.passes.schedule_mlu.reverse_compute import reverse_compute_kernel
        return [reverse_compute_kernel(spec, f"{spec.name}_mlu", tasks, nram, allow_sram, max_rows)]
    return [reverse_kernel(rv, f"{spec.name}_mlu", tasks, nram)]


@dataclass(frozen=True)
class _Plan:
    rows: int         # R: rows per tile
    pitch: int        # P: tile pitch (elements), whole units
    chunk: int        # elements per full column chunk (n when rows are not chunked)


def _unit_elems(dt: ir.DType) -> int:
    return max(L.PITCH, UNIT // L.device_nbytes(dt))


def _busiest_cycles(rv: Reversal, r: int, tasks: int, pitch: int) -> float:
    """Estimated cycles of the busiest core, full tiles cyclic and the tail tile on the core after the last full one.
    A reversal is data movement and a core's copies are serialised on its IO pipe, so a core's time is the sum of
    its copies (each one GDRAM latency plus its bytes at the core's fair share of GDRAM bandwidth; the cores run in
    lockstep, so their latencies coincide instead of hiding behind each other) plus the mirrors of its last tile,
    which no copy overlaps. So: few, large tiles, but not so large that the last tile's mirrors show."""
    es, mc = L.device_nbytes(rv.dtype), MLU370
    nt, rt = divmod(rv.m, r)
    base, extra = divmod(nt, tasks)
    share = mc.gdram_bandwidth / tasks / mc.clock_hz
    mirrors = (2 if rv.rev_rows and r > 1 else 0) + (1 if rv.rev_cols else 0)
    last = mirrors * (mc.vector_op_cycles + r * pitch * es / mc.vector_unit_bytes * mc.cycles_transpose)

    def cost(rows: int, tiles: int) -> float:
        return 2 * rows * rv.n * es / share + 2 * tiles * mc.gdram_latency_cycles + last
    return max(cost((base + (extra > 0)) * r, base + (extra > 0)), cost(base * r + rt, base + (rt > 0)))


def plan_reverse(rv: Reversal, tasks: int, nram: int) -> _Plan:
    """Tile rows and pitch under the NRAM budget: load and store tiles double-buffered (4 tiles), plus the
    row-flip's intermediate tile and its f32 scratch when the leading axis is reversed."""
    es = L.device_nbytes(rv.dtype)
    flip = (4 // es + (1 if rv.rev_cols else 0)) if rv.rev_rows else 0   # f32 scratch + ta, in tiles of es bytes
    tile_max = nram // (4 + flip)
    unit = _unit_elems(rv.dtype)
    pitch = L.round_up(rv.n, unit)
    if pitch * es <= tile_max:
        cap = min(rv.m, tile_max // (pitch * es))
        best = min(range(1, cap + 1), key=lambda r: (_busiest_cycles(rv, r, tasks, pitch), -r))
        return _Plan(best, pitch, rv.n)
    longest = tile_max // es // unit * unit
    if longest < unit:
        raise NotRowModel("not even one vector unit of a row fits the NRAM budget")
    pieces = -(-rv.n // longest)
    chunk = min(longest, L.round_up(-(-rv.n // pieces), unit))
    return _Plan(1, chunk, chunk)


class _Builder:
    """Tile statements of one reversal kernel."""

    def __init__(self, rv: Reversal, plan: _Plan):
        self.rv, self.plan = rv, plan
        self.flip = rv.rev_rows and plan.rows > 1   # one-row tiles need no on-chip row flip
        # nothing to compute (one-row tiles of a leading-axis reversal): a GDRAM->GDRAM copy per tile. Staging it
        # through NRAM would leave the pipeliner's load of tile t+1 and store of tile t-1 on the same buffer slot.
        self.direct = not self.flip and not rv.rev_cols

    def allocs(self) -> list:
        if self.direct:
            return []
        shape = (self.plan.rows, self.plan.pitch)
        out = [B.alloc("xa", self.rv.dtype, shape, "nram")]
        if self.flip:
            out.append(B.alloc("ta", self.rv.dtype, shape, "nram"))
        if self.rv.rev_cols:
            out.append(B.alloc("ra", self.rv.dtype, shape, "nram"))
        return out

    def _gref(self, name: str, r0, rows: int, c0, length: int) -> ir.Ref:
        cols = B.sl(c0, length)
        return B.ref(name, cols) if self.rv.rank == 1 else B.ref(name, B.sl(r0, rows), cols)

    def tile(self, yr0, rows: int, xc0, length: int) -> list:
        """y rows [yr0, yr0+rows) x the columns that x columns [xc0, xc0+length) map to."""
        rv, p = self.rv, self.plan.pitch
        xr0 = _minus(rv.m - rows, yr0) if rv.rev_rows else yr0
        yc0 = _minus(rv.n - length, xc0) if rv.rev_cols else xc0
        if self.direct:
            return [B.move("copy", self._gref(rv.y, yr0, rows, yc0, length), self._gref(rv.x, xr0, rows, xc0, length))]
        out: list = [B.move("load", B.ref("xa", B.sl(0, rows), B.sl(0, length)),
                            self._gref(rv.x, xr0, rows, xc0, length))]
        cur = "xa"
        if self.flip:
            out.append(ir.Assign(B.ref("ta", B.sl(0, rows), B.sl(0, p)),
                                 ir.Call("reverse", (B.ref(cur, B.sl(0, rows), B.sl(0, p)), B.c(0)))))
            cur = "ta"
        off = 0
        if rv.rev_cols:
            out.append(ir.Assign(B.ref("ra", B.sl(0, rows), B.sl(0, p)),
                                 ir.Call("reverse", (B.ref(cur, B.sl(0, rows), B.sl(0, p)),))))
            cur, off = "ra", p - length
        out.append(B.move("store", self._gref(rv.y, yr0, rows, yc0, length), B.ref(cur, B.sl(0, rows),
                                                                                   B.sl(off, length))))
        return out


def _minus(k: int, e) -> ir.Expr:
    """k - e, folded when e is a constant."""
    return B.c(k - e.value) if isinstance(e, ir.Const) else ir.BinOp("-", B.c(k), e)


def _trips(n: int, tvar, tasks: int) -> ir.Expr:
    """Iterations of `for it in 0..` covering units task, task + tasks, ... < n."""
    return ir.BinOp("//", B.add(ir.BinOp("-", B.c(n), tvar), tasks - 1), B.c(tasks))


def _on(core: int, stmts: list) -> ir.If:
    return ir.If(ir.BinOp("==", B.v("task_"), B.c(core)), tuple(stmts), ())


def reverse_kernel(rv: Reversal, name: str, tasks: int = 32, nram: int = 768 * 1024) -> ir.Kernel:
    plan = plan_reverse(rv, tasks, nram)
    bld = _Builder(rv, plan)
    t = B.v("task_")
    body: list = bld.allocs()
    if plan.chunk == rv.n:            # whole rows: tiles of R rows, cyclic
        r = plan.rows
        nt, rt = divmod(rv.m, r)
        if nt:
            r0 = B.mul(B.add(B.mul(B.v("it_"), tasks), t), r)
            body.append(ir.For("it_", B.c(0), _trips(nt, t, tasks), tuple(bld.tile(r0, r, B.c(0), rv.n))))
        if rt:
            body.append(_on(nt % tasks, bld.tile(B.c(nt * r), rt, B.c(0), rv.n)))
    else:                             # chunked one-row tiles
        lc = plan.chunk
        nc, lt = divmod(rv.n, lc)
        if rv.m >= tasks:             # rows cyclic, each row's chunks pipelined on its core
            row = B.add(B.mul(B.v("it_"), tasks), t)
            inner: list = []
            if nc:
                inner.append(ir.For("c_", B.c(0), B.c(nc), tuple(bld.tile(row, 1, B.mul(B.v("c_"), lc), lc))))
            if lt:
                inner += bld.tile(row, 1, B.c(nc * lc), lt)
            body.append(ir.For("it_", B.c(0), _trips(rv.m, t, tasks), tuple(inner)))
        else:                         # few rows: each row's full chunks cyclic over the cores, tails after them
            for k in range(rv.m):
                if nc:
                    cv = f"cc{k}_"    # one loop per row: distinct names (the pipeliner declares T_<var>)
                    c0 = B.mul(B.add(B.mul(B.v(cv), tasks), t), lc)
                    body.append(ir.For(cv, B.c(0), _trips(nc, t, tasks), tuple(bld.tile(B.c(k), 1, c0, lc))))
                if lt:
                    body.append(_on((nc + k) % tasks, bld.tile(B.c(k), 1, B.c(nc * lc), lt)))
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(body))
    return ir.Kernel(name, (top,), (("task_dim", str(tasks)),))
