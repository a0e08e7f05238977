"""Index values and rank > 2 row tensors for the MLU row model.

`rewrite_index_values` turns an operator function into a row-model function:
  * tensors `[*L, S, N]` / `[*L, S]` indexed `(*l, i, j)` / `(*l, i)` (the same leading index variables
    everywhere) are viewed as `[prod(L) * S, N]` / `[prod(L) * S]`; an `[S, N]` input indexed `(i, j)` only
    (the same for every leading index, e.g. `e[n, g, c] = gamma[g, c]`) is seen as a full `[prod(L) * S, N]`
    tensor whose tiles are read from the one `[S, N]` slab (`IndexInfo.shared`);
  * the column index used as a value (`j == target[i]`) becomes a synthetic per-column input `cj_[j]` (the iota
    0..N-1), the row index (`j <= i`) a synthetic row input `ri_[i]` holding `i mod S`.
`patch_kernel` then rewrites the lowered kernel: `cj_` is generated once per core in NRAM (one scalar write and
log2(N) doublings `tmp = iota + k; copy iota[k:2k] <- tmp[0:k]`), `ri_` per tile as `rio_ + (row0 mod S)` from a
per-core `0..R-1` vector built the same way (tiles never straddle a period), and GDRAM regions of viewed
tensors go back to their original rank with affine indices, `x[l0_, l1_, s:s + R, 0:N]` (`_unit_nest` rebuilds
the tile loop over (leading index, part of S) units so that the bounds checker sees in-range indices; a slab's
last tile is masked when R does not divide S, `slab_rows`), and `[*L, S]` row vectors move once per unit.

Why the last two matter (measured, sum over the last axis of 128 x 4096 x 4095 f32, timing-only): every DMA pays
the 500-cycle GDRAM latency on its core's serialised IO pipe, and the 32 cores run identical DMA sequences in
step, so the latencies coincide and GDRAM idles meanwhile (13% of the time with 4-row tiles and a 16-byte store
per tile: 1.153x the roofline). Row vectors per unit: 1.078x; 7-row tiles instead of the divisor 4: 1.090x; both:
1.047x. The older flat schedule (tiles it*32 + t over all rows, 1.042x) was not faster by design: 4095-float
rows gave the cores different 64-byte alignments, hence slightly different DMA times that drifted them out of
step (with 4096-float rows both schedules measure 1.074x).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.rowmodel import NotRowModel

F32 = ir.DType.f32
COLV, ROWV = "cj_", "ri_"
VEC_BYTES = 32 * 1024   # NRAM for one core's per-unit row vectors (inside the placement's 64 KiB slack)


@dataclasses.dataclass
class IndexInfo:
    period: int = 0                      # S: the row index value is (flat row) mod S
    col: bool = False                    # cj_ is used
    row: bool = False                    # ri_ is used
    lead: tuple = ()                     # leading dims L of viewed tensors
    viewed: frozenset = frozenset()      # names of tensors viewed with merged leading dims
    shared: frozenset = frozenset()      # [S, N] inputs indexed without the leading variables (one slab for all)
    part: int = 1                        # tiles per work unit (set by _unit_nest)
    row_bytes: int = 0                   # GDRAM bytes per row of the viewed [*L, S, N] params/results
    full_moves: int = 0                  # how many of them (one tile DMA each per tile)
    vec_bytes: int = 0                   # bytes per row of the viewed [*L, S] params/results (row vectors)

    @property
    def any(self) -> bool:
        return self.col or self.row or bool(self.lead)


def rewrite_index_values(func: ir.Func, info) -> tuple[ir.Func, IndexInfo]:
    from gir.walk import map_expr, walk

    if any(isinstance(x, ir.BinOp) and x.op in ("//", "%") for st in info.stmts for r in walk(st.stmt.value)
           if isinstance(r, ir.Ref) for i in r.index for x in walk(i)):
        raise NotRowModel("quasi-affine index (// or %)")  # (as values: rowmodel.py `floordiv`)
    types = dict(info.types)
    ranks = {len(t.shape) for t in types.values() if len(t.shape) > 0}
    lead: tuple = ()
    if max(ranks, default=0) > 2:
        full = [t.shape for t in types.values() if len(t.shape) == max(ranks)]
        lead = tuple(full[0][:-2])
        if any(tuple(s[:-2]) != lead for s in full):
            raise NotRowModel("viewed tensors with different leading dims")
    nlead = len(lead)
    shared = _shared(func, info, lead) if nlead else set()
    s_rows = None
    viewed = set()
    for name, t in types.items():
        if nlead and len(t.shape) > 1 and name not in shared:
            if tuple(t.shape[:nlead]) != lead or len(t.shape) - nlead not in (1, 2):
                raise NotRowModel(f"'{name}' does not share the leading dims")
            viewed.add(name)
            s_rows = t.shape[nlead]
    m_rows = None
    for t in types.values():
        if len(t.shape) >= 2 and len(t.shape) > nlead:  # tensors shared across the leading dims have no row axis
            m_rows = t.shape[-2] if not nlead else t.shape[nlead]
    ix = IndexInfo(period=s_rows or (m_rows or 1), lead=lead, viewed=frozenset(viewed), shared=frozenset(shared))
    for p in list(func.params) + list(func.results):
        if p.name in viewed or p.name in shared:
            t = p.type
            if len(t.shape) == nlead + 2 or p.name in shared:
                ix.row_bytes += int(t.shape[-1]) * t.dtype.nbytes
                ix.full_moves += 1
            else:
                ix.vec_bytes += t.dtype.nbytes
    body = []
    for st in info.stmts:
        out = list(st.out_vars)
        red = [v for vs in st.reduce_vars.values() for v in vs]
        lv = out[:nlead]
        rest = out[nlead:]
        row = rest[0] if rest else None
        col = rest[1] if len(rest) > 1 else (red[0] if len(red) == 1 else None)
        if nlead and (len(out) < nlead + 1):
            raise NotRowModel("statement without the row axis of viewed tensors")
        val = _rw(st.stmt.value, lv, row, col, ix)
        # index values are integers (`x[i, j] + j` into an i32 result, `j % 7`): the f32 iota read as i32
        val = map_expr(val, lambda x: ir.Call("i32", (x,)) if isinstance(x, ir.Ref) and x.name in (COLV, ROWV) else x)
        tgt = _rw(st.stmt.target, lv, row, col, ix)
        body.append(ir.Assign(tgt, val, loc=st.stmt.loc))
    params = [_view_param(p, nlead) if p.name not in shared else _view_shared(p, lead) for p in func.params]
    if (ix.col or ix.row) and all(len(t.shape) < 2 for t in types.values()):
        raise NotRowModel("index values without an [M, N] tensor")
    if ix.col:
        ncol = next(t.shape[-1] for t in types.values() if len(t.shape) >= 2)
        params.append(ir.Param(COLV, ir.TensorType(F32, (ncol,))))
    if ix.row:
        mflat = next(t.shape for t in types.values() if len(t.shape) >= 2)
        total = 1
        for d in mflat[:-1]:
            total *= d
        params.append(ir.Param(ROWV, ir.TensorType(F32, (total,))))
    results = [_view_param(p, nlead) for p in func.results]
    return ir.Func(func.name, tuple(params), tuple(results), tuple(body)), ix


def _shared(func: ir.Func, info, lead: tuple) -> set:
    """Inputs `[S, N]` (the trailing dims of the viewed tensors) read only as `t[i, j]`, i and j the row and
    column variables of every statement reading them: the same slab for every leading index."""
    from gir.shapes import _walk
    nlead = len(lead)
    full = next(t.shape for t in info.types.values() if len(t.shape) == nlead + 2)
    cands = {p.name for p in func.params if tuple(p.type.shape) == tuple(full[nlead:])}
    for st in info.stmts:
        out = list(st.out_vars)
        red = [v for vs in st.reduce_vars.values() for v in vs]
        rest = out[nlead:]
        want = (rest[0] if rest else None, rest[1] if len(rest) > 1 else (red[0] if len(red) == 1 else None))
        for x in _walk(st.stmt.value):
            if isinstance(x, ir.Ref) and x.name in cands and tuple(getattr(i, "name", None) for i in x.index) != want:
                cands.discard(x.name)
    return cands


def _view_shared(p: ir.Param, lead: tuple) -> ir.Param:
    s, n = p.type.shape
    return dataclasses.replace(p, type=ir.TensorType(p.type.dtype, (_prod(lead) * int(s), n)))


def _view_param(p: ir.Param, nlead: int) -> ir.Param:
    if not nlead or len(p.type.shape) <= 1:
        return p
    shape = p.type.shape
    total = 1
    for d in shape[:nlead + 1]:
        total *= d
    return dataclasses.replace(p, type=ir.TensorType(p.type.dtype, (total,) + tuple(shape[nlead + 1:])))


def _rw(e, lv, row, col, ix: IndexInfo):
    if isinstance(e, ir.Var):
        if e.name == col and col is not None:
            ix.col = True
            return ir.Ref(COLV, (ir.Var(col),))
        if e.name == row and row is not None:
            ix.row = True
            return ir.Ref(ROWV, (ir.Var(row),))
        if e.name in lv:
            raise NotRowModel("leading index used as a value")
        return e
    if isinstance(e, ir.Ref):
        idx = list(e.index)
        if lv and len(idx) > 1 and e.name not in ix.shared:
            if [i.name if isinstance(i, ir.Var) else None for i in idx[:len(lv)]] != list(lv):
                raise NotRowModel(f"'{e.name}' is not indexed by the leading variables")
            idx = idx[len(lv):]
            if not (isinstance(idx[0], ir.Var) and idx[0].name == row):   # the viewed axis must be the row axis
                raise NotRowModel(f"'{e.name}' is not indexed by the row variable after the leading ones")
        elif lv and idx and e.name not in ix.shared and isinstance(idx[0], ir.Var) and idx[0].name == row:
            # e.g. w[b] next to x[a, b, c]: an [S] vector repeated over the leading dims has no viewed form
            raise NotRowModel(f"'{e.name}' is indexed by the row variable without the leading ones")
        if any(isinstance(i, ir.Var) and i.name in lv for i in idx):   # e.g. u[a] next to x[a, b, c]
            raise NotRowModel(f"'{e.name}' is indexed by a leading variable only")
        return dataclasses.replace(e, index=tuple(idx))
    if isinstance(e, ir.BinOp):
        return dataclasses.replace(e, lhs=_rw(e.lhs, lv, row, col, ix), rhs=_rw(e.rhs, lv, row, col, ix))
    if isinstance(e, ir.UnOp):
        return dataclasses.replace(e, operand=_rw(e.operand, lv, row, col, ix))
    if isinstance(e, ir.Call):
        return dataclasses.replace(e, args=tuple(_rw(a, lv, row, col, ix) for a in e.args))
    if isinstance(e, ir.Reduce):
        return dataclasses.replace(e, arg=_rw(e.arg, lv, row, col, ix))
    return e


def pick_rows(rows: int, ix: IndexInfo, m: int, tasks: int = 32) -> int:
    """Tile height. Viewed tensors: `slab_rows`. Otherwise a divisor of the row-index period not above `rows`
    (flat tiles must not straddle a period)."""
    if ix.lead:
        return slab_rows(rows, ix, tasks)
    if not (ix.row and ix.period < m):
        return rows
    r = min(rows, ix.period)
    while ix.period % r:
        r -= 1
    return r


def slab_rows(rows: int, ix: IndexInfo, tasks: int) -> int:
    """Tile height for viewed tensors, at most `rows`. Tiles stay inside one `[S, N]` slab (`_unit_nest`), so any
    height works (a shorter last tile per slab is masked): among balanced heights ceil(S / t) for t tiles per
    slab, the one whose busiest core moves the fewest bytes, counting each tile DMA's latency as the bytes the
    core could have moved meanwhile (`latency_bytes`), and a unit's first load and last store as a tile that
    overlaps nothing (`_split`). A divisor of S is not required: S = 4096 rows of 4095
    floats with NRAM for 7 rows gets 7-row tiles (the largest divisor, 4, paid the latency 1.75x as often);
    small cases pick the height that balances the cores (3 x 5 slabs of 100 rows on 32 cores: 25, not 34)."""
    s_rows = ix.period
    nl = _prod(ix.lead)
    lat = latency_bytes(tasks)
    t0 = -(-s_rows // min(rows, s_rows))
    best, cost = None, None
    for t in range(t0, min(s_rows, t0 + min(3 * t0, 32)) + 1):
        r = -(-s_rows // t)
        if -(-s_rows // r) != t:   # the same height as a smaller t
            continue
        p, k = _split(nl, t, tasks, r, ix.vec_bytes)
        rounds = -(-nl * p // tasks)
        c = rounds * ((k + 1) * (r * ix.row_bytes + ix.full_moves * lat) + 2 * lat * (ix.vec_bytes > 0))
        if cost is None or c < cost:
            best, cost = r, c
    return best


def latency_bytes(tasks: int) -> float:
    """Bytes a core moves at its fair share of GDRAM bandwidth during one DMA latency (MLU370: ~4.8 KB)."""
    from gir.passes.machines import MLU370 as M
    return M.gdram_latency_cycles * M.bytes_per_cycle(M.gdram_bandwidth) / max(1, min(tasks, M.total_cores))


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _iota(buf: str, tmp: str, n: int, two_d: bool, row: bool = False) -> list:
    """Statements filling buf[0:n] (or buf[0:n, 0:1], or with `row` buf[0:1, 0:n]) with 0..n-1, using tmp of the
    same shape."""
    def reg(name, a, ln):
        if row:
            return B.ref(name, B.sl(0, 1), B.sl(a, ln))
        return B.ref(name, B.sl(a, ln), B.sl(0, 1)) if two_d else B.ref(name, B.sl(a, ln))
    out = [ir.Assign(B.ref("gs_", B.sl(0, 1)), B.c(0.0)), B.move("copy", reg(buf, 0, 1), B.ref("gs_", B.sl(0, 1)))]
    k = 1
    while k < n:
        ln = min(k, n - k)
        out.append(ir.Assign(reg(tmp, 0, n), ir.BinOp("+", reg(buf, 0, n), B.c(float(k)))))
        out.append(B.move("copy", reg(buf, k, ln), reg(tmp, 0, ln)))
        k *= 2
    return out


def patch_kernel(kernel: ir.Kernel, ix: IndexInfo, n: int, rows: int, orig_types: dict) -> ir.Kernel:
    """Generate cj_ / ri_ on chip instead of loading them; give viewed GDRAM regions their original rank."""
    dtypes = {a.name: a.type.dtype for a in _allocs(kernel.body)}
    unit_allocs: list = []   # per-unit row-vector buffers made by _unit_nest

    def walk(stmts, row0=None):
        out = []
        for s in stmts:
            if isinstance(s, ir.Parallel):
                body = list(walk(s.body))
                extra = []
                if s.level == ir.ParLevel.core and (ix.col or ix.row):
                    extra.append(B.alloc("gs_", F32, (1,), "nram"))
                    if ix.col:
                        extra.append(B.alloc("gc_", F32, (n,), "nram"))
                    if ix.row:
                        extra += [B.alloc("rio_", F32, (rows, 1), "nram"), B.alloc("gr_", F32, (rows, 1), "nram"),
                                  B.alloc("rs_", F32, (1,), "nram")]
                        k = max(i for i, x in enumerate(body) if isinstance(x, ir.Alloc)) + 1
                        body[k:k] = _iota("rio_", "gr_", rows, True)
                if s.level == ir.ParLevel.core:
                    extra += unit_allocs
                out.append(dataclasses.replace(s, body=tuple(extra + body)))
            elif isinstance(s, ir.For) and ix.lead and s.var == "it_":
                nest, allocs = _unit_nest(s, ix, rows, walk, dtypes)
                unit_allocs.extend(allocs)
                out.append(nest)
            elif isinstance(s, ir.For):
                out.append(dataclasses.replace(s, body=tuple(walk(s.body, s))))
            elif isinstance(s, ir.Move) and s.src.name == COLV:
                out += _iota(s.dst.name, "gc_", n, False)
            elif isinstance(s, ir.Move) and s.src.name == ROWV:
                rs = B.ref("rs_", B.sl(0, 1))
                if ix.lead:   # inside _unit_nest: the tile's first row within its [S, N] slab
                    out.append(ir.Assign(rs, B.mul(B.add(B.mul(B.v("p_"), ix.part), B.v("q_")), rows)))
                else:
                    out.append(ir.Assign(rs, ir.BinOp("%", s.src.index[0].start, B.c(ix.period))))
                out.append(ir.Assign(s.dst, ir.BinOp("+", B.ref("rio_", B.sl(0, rows), B.sl(0, 1)), rs)))
            elif isinstance(s, ir.Move) and ix.lead and (_gref(s).name in ix.viewed or _gref(s).name in ix.shared):
                out.append(_unview(s, ix, rows))
            else:
                out.append(s)
        return _order(out) if any(isinstance(x, ir.Assign) for x in out) else out
    return dataclasses.replace(kernel, body=tuple(walk(kernel.body)))


def patch_long_columns(kernel: ir.Kernel) -> ir.Kernel:
    """A chunked long-row kernel (longrows.py) whose column index is the iota input `cj_`: every chunk load
    `cj__t[0:w] <- cj_[c0:c0 + w]` becomes `cj__t[0:w] = io_[0:w] + c0` from a per-core iota `io_` of one chunk's
    width (built once, as `patch_kernel` builds `cj_`), so the index moves nothing (longrows_kernel's
    `extra_cols=2` keeps room for `io_` and its doubling buffer)."""
    width = next(a.type.shape[0] for a in _allocs(kernel.body) if a.name == f"{COLV}_t")
    rs = B.ref("rs_", B.sl(0, 1))

    def walk(stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.Parallel) and s.level == ir.ParLevel.core:
                body = list(walk(s.body))
                k = max((i for i, x in enumerate(body) if isinstance(x, ir.Alloc)), default=-1) + 1
                body[k:k] = _iota("io_", "gc_", width, False)
                extra = [B.alloc("gs_", F32, (1,), "nram"), B.alloc("rs_", F32, (1,), "nram"),
                         B.alloc("io_", F32, (width,), "nram"), B.alloc("gc_", F32, (width,), "nram")]
                out.append(dataclasses.replace(s, body=tuple(extra + body)))
            elif isinstance(s, (ir.For, ir.Parallel)):
                out.append(dataclasses.replace(s, body=tuple(walk(s.body))))
            elif isinstance(s, ir.Move) and s.src.name == COLV:
                w = s.src.index[0]
                out += [ir.Assign(rs, w.start),
                        ir.Assign(s.dst, ir.BinOp("+", ir.Ref("io_", s.dst.index), rs))]
            else:
                out.append(s)
        return _order(out) if any(isinstance(x, ir.Assign) for x in out) else out
    return dataclasses.replace(kernel, body=tuple(walk(kernel.body)))


def _allocs(stmts):
    for s in stmts:
        if isinstance(s, ir.Alloc):
            yield s
        for key in ("body", "then", "orelse"):
            yield from _allocs(getattr(s, key, ()) or ())


def _order(stmts):
    """Keep a loop body in pipelinable order: loads, computes, stores (generated computes move after the loads)."""
    if not any(isinstance(x, ir.Move) and x.kind == "store" for x in stmts):
        return stmts
    if any(not isinstance(x, (ir.Move, ir.Assign)) for x in stmts):
        return stmts
    loads = [x for x in stmts if isinstance(x, ir.Move) and x.kind == "load"]
    comps = [x for x in stmts if isinstance(x, ir.Assign)]
    stores = [x for x in stmts if isinstance(x, ir.Move) and x.kind == "store"]
    return loads + comps + stores


def _unit_nest(loop: ir.For, ix: IndexInfo, rows: int, walk, dtypes) -> tuple[ir.For, list]:
    """The flat tile loop `for it_` (tile it_*T + t on task t) of a kernel over viewed tensors, rebuilt so that
    every GDRAM region keeps its original rank with affine indices (the bounds checker sees real indices), and
    the allocs it adds. Work units are (leading index, part of the S axis): a slab of S rows is split into P parts
    of K tiles so that there are about T units (more when the part's row vectors would not fit VEC_BYTES); units
    go cyclically to the tasks, are decoded by one-trip loops (quasi-affine bounds), and the innermost loop
    `for q_ in 0..` over a part's tiles is the pipelined one.

    `[*L, S]` row vectors move once per unit, not once per tile (`_hoist_rows`): a per-tile DMA of R values pays
    the full GDRAM latency on the core's serialised IO pipe, and the cores' latencies coincide (module doc)."""
    trips = loop.hi   # (NT - tvar + T - 1) // T, built by lower_rows
    tvar, tasks = trips.lhs.lhs.rhs, trips.rhs.value
    lead = [int(d) for d in ix.lead]
    nl = _prod(lead)
    ts = -(-ix.period // rows)                  # tiles per slab (the last one masked if R does not divide S)
    p, k = _split(nl, ts, tasks, rows, ix.vec_bytes)
    ix.part = k
    units = nl * p
    u = B.add(B.mul(B.v("u_"), tasks), tvar)
    pre, body, post, allocs = _hoist_rows(list(walk(loop.body, loop)), ix, k * rows, p, dtypes)
    inner = ir.For("q_", B.c(0), ir.Call("min", (B.c(k), ir.BinOp("-", B.c(ts), B.mul(B.v("p_"), k)))),
                   tuple(body))
    nest: ir.Stmt = ir.For("p_", ir.BinOp("%", u, B.c(p)), B.add(ir.BinOp("%", u, B.c(p)), 1),
                           tuple(pre + [inner] + post))
    stride = p
    for d in reversed(range(len(lead))):
        lo = ir.BinOp("%", ir.BinOp("//", u, B.c(stride)), B.c(lead[d]))
        nest = ir.For(f"l{d}_", lo, B.add(lo, 1), (nest,))
        stride *= lead[d]
    hi = ir.BinOp("//", B.add(ir.BinOp("-", B.c(units), tvar), tasks - 1), B.c(tasks))
    return ir.For("u_", B.c(0), hi, (nest,)), allocs


FILL = 0.75  # tile times a unit's pipelined loop adds for its first load and last store, in `_split`: 1 kept 33
             # slabs of 3 tiles whole (B=11 H=3 S=65 causal softmax 6.85x -> 7.21x the roofline); 0.75 splits
             # them and still cuts 45 slabs of 32 tiles in two (slab_rows, which also picks the height, counts 1)


def _split(nl: int, ts: int, tasks: int, rows: int, vec_bytes: int) -> tuple[int, int]:
    """(P parts per slab, K tiles per part) for `nl` slabs of `ts` tiles: the fewest parts (at least enough for
    the part's row vectors to fit VEC_BYTES) that minimise the busiest core's time, ceil(units / tasks) * (K +
    FILL) tile times: a unit's K tiles run in one pipelined loop whose first load and last store overlap nothing (3
    slabs of 200 tiles on 32 cores: 10 parts of 20 tiles, where 11 parts of 19 would give one core two; 45 slabs
    of 32 tiles: 2 parts of 16, where 32 parts of one tile each balanced the cores but pipelined nothing: the
    causal softmax at B=3, H=15, S=1024 ran at 1.74x the DMA roofline)."""
    least = min(ts, max(1, -(-ts * rows * vec_bytes // VEC_BYTES)))
    best, cost = least, None
    for p in range(least, min(ts, least + 4 * tasks) + 1):
        c = -(-nl * p // tasks) * (-(-ts // p) + FILL)
        if cost is None or c < cost:
            best, cost = p, c
    k = -(-ts // best)
    return -(-ts // k), k


def _is_rowvec_move(s, ix: IndexInfo, rank: int) -> bool:
    """A tile move of a viewed `[*L, S]` tensor, a row vector (`rank` 1 before `_unview`, L + 1 after)."""
    if not isinstance(s, ir.Move) or s.kind not in ("load", "store"):
        return False
    g = _gref(s)
    return g.name in ix.viewed and len(g.index) == rank


def _tile(s: ir.Move) -> ir.Ref:
    return s.dst if s.kind == "load" else s.src


def _hoist_rows(body: list, ix: IndexInfo, span: int, parts: int, dtypes) -> tuple[list, list, list, list]:
    """(before the q_ loop, its body, after it, allocs): each row-vector tile move of the (walked) loop body
    becomes an `[R, 1]` copy to/from a `[K * R, 1]` unit buffer `NAME_u`, loaded before / stored after the loop
    over the unit's tiles (rows p_*K*R .. +K*R of the slab; masked when the parts overrun S)."""
    pre, post, allocs, ins, outs, rest = [], [], [], [], [], []
    nlead = len(ix.lead)
    for s in body:
        if not _is_rowvec_move(s, ix, nlead + 1):
            rest.append(s)
            continue
        g, t = _gref(s), _tile(s)
        r = _const(g.index[-1])
        buf = f"{g.name}_u"
        allocs.append(B.alloc(buf, dtypes[t.name], (span, 1), "nram"))
        start = B.mul(B.v("p_"), span)
        region = dataclasses.replace(g, index=tuple(g.index[:nlead]) + (ir.Slice(start, B.add(start, span)),))
        part = B.ref(buf, B.sl(B.mul(B.v("q_"), r), r), B.sl(0, 1))
        tile = B.ref(t.name, B.sl(0, r), B.sl(0, 1))
        mask = parts * span != ix.period
        if s.kind == "load":
            pre.append(B.move("load", B.ref(buf, B.sl(0, span), B.sl(0, 1)), region, mask=mask))
            ins.append(ir.Assign(tile, part))
        else:
            post.append(B.move("store", region, B.ref(buf, B.sl(0, span), B.c(0)), mask=mask))
            outs.append(ir.Assign(part, tile))
    if not allocs:
        return [], body, [], []
    loads = [x for x in rest if isinstance(x, ir.Move) and x.kind == "load"]
    comps = [x for x in rest if not isinstance(x, ir.Move)]
    stores = [x for x in rest if isinstance(x, ir.Move) and x.kind != "load"]
    return pre, loads + ins + comps + outs + stores, post, allocs


def _const(sl: ir.Slice) -> int:
    from gir.affine import to_affine
    return int((to_affine(sl.stop) - to_affine(sl.start)).const)


def _gref(s: ir.Move) -> ir.Ref:
    return s.src if s.kind == "load" else s.dst


def _unview(s: ir.Move, ix: IndexInfo, rows: int) -> ir.Move:
    """A tile move of a viewed tensor with its original rank: `x[l0_, .., s:s + R, ...]`, s the tile's first row
    within its slab (`_unit_nest`); masked when R does not divide S (the slab's last tile is shorter)."""
    g = _gref(s)
    nlead = len(ix.lead)
    ln = _const(g.index[0])
    start = B.mul(B.add(B.mul(B.v("p_"), ix.part), B.v("q_")), ln)   # row within the slab (_unit_nest)
    idx = [] if g.name in ix.shared else [B.v(f"l{d}_") for d in range(nlead)]
    idx.append(ir.Slice(start, B.add(start, ln)))
    idx += list(g.index[1:])
    new = dataclasses.replace(g, index=tuple(idx))
    mask = ix.period % rows != 0
    if s.kind == "load":
        return dataclasses.replace(s, src=new, mask=mask)
    return dataclasses.replace(s, dst=new, mask=mask)
