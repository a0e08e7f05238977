"""Permutations → explicit MLU GIR: 2-D transposes via NRAM tiles + `transpose()`, last-axis-preserving
permutations (e.g. permute0213) as strided GDRAM→GDRAM copies.

2-D transpose `y[j, i] = x[i, j]` (x: [M, N]) with tiles of Rb rows x Cb columns of x (both multiples of 64, so
the NRAM tiles are dense and `__bang_transpose` maps the whole buffer). Any element type is moved as is: a transpose
is pure data movement, so 16-bit (and i32 / bool) tiles are never widened to f32. `__bang_transpose` needs only that
each operand spans whole 128-byte units (rows*cols*sizeof % 128 == 0), which 64-multiples give for every element
size (a 64-element 16-bit row is exactly one unit). Cb is 128 columns for every type; Rb is at most 128 KiB / Cb
(f32 256 rows, 16-bit 512, bool 1024: same NRAM budget and bytes per DMA transfer for every type).

Work units are (column chunk, row part) pairs: the row tiles of a column chunk are cut into parts of K consecutive
tiles, the units go cyclically to the cores, and each core pipelines the row tiles of its part. Spreading column
chunks alone left N / Cb < 32 cores busy (1000 x 777 f16 was 2.18x the DMA roofline); `choose_plan` picks Rb
(the largest, or a smaller power of two when M has too few row tiles) and K from a cost model of the cyclic
assignment (K = all row tiles, one unit per chunk, when the chunks alone fill the cores, e.g. 8192 x 8192).

    parallel task_ in 0..32 @core {
      for ut_ in 0..(NC*P - task_ + 31) // 32 {             # units u = ut_*32 + task_, cyclic over the cores
        for c_ in u // P .. +1 { for p_ in u % P .. +1 {    # one-trip loops: region starts stay affine
          for it_ in 0..min(K, NR - p_*K) {                 # the part's full row tiles: pipelined by codegen
            load xa[0:Rb, 0:Cb] <- x[(p_*K + it_)*Rb : +Rb, c_*Cb : +Cb]
            ta[0:Cb, 0:Rb] = transpose(xa[0:Rb, 0:Cb])
            store y[c_*Cb : +Cb, (p_*K + it_)*Rb : +Rb] <- ta[0:Cb, 0:Rb]
          }
          if p_ == P - 1 { (row tail: the same with an exact-size load/store of M % Rb rows) }
        } }
      }
      (column tail N % Cb: its own parts of Kt tiles, numbered on after the NC*P units, so they start on the
       cores the full chunks leave least loaded)
    }

Tail tiles transpose the whole buffer (pad elements hold garbage and are never stored), so every transpose has
the same dense shape. Traffic is compulsory: x read once, y written once.

Permutations that keep the last axis (`y[b, h, s, d] = x[b, s, h, d]`): a work unit is every index of y except
its last two, and a part of the second-to-last (S) axis (assigned cyclically to the cores, decoded with one-trip
loops so region starts stay affine); a unit is one 2-D strided `GDRAM2GDRAM` copy of [S / P, D] rows (no compute,
no on-chip staging, except for rows shorter than 512 bytes off the 64-byte DMA granule whose y part is
contiguous: loaded into a dense NRAM run and stored as one segment). P = 1 (whole slabs) unless the slabs are too
few to keep the chip's GDRAM busy. Those kernels are built in slab_copy.py.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.rowmodel import NotRowModel
from gir.passes.machines import MLU370

TILE_BYTES, TILE_COLS = 128 * 1024, 128   # in + out double-buffered = 512 KiB of NRAM
CONVERTIBLE = (ir.DType.f32, ir.DType.f16, ir.DType.bf16)   # a permutation may convert f32 <-> f16 / bf16
PACKED_ROW = 64    # bytes: shorter tile rows of a contiguous tile region move packed (one transfer per tile)


def match_permute(spec: ir.Func, info) -> tuple | None:
    """(x, y, perm) when `spec` is one statement `y[v...] = x[w...]` with w a permutation of v
    (perm[k] = the axis of x that y's axis k reads)."""
    if len(info.stmts) != 1 or len(spec.results) != 1:
        return None
    st = info.stmts[0].stmt
    x, y = st.value, st.target
    if not isinstance(x, ir.Ref) or y.name != spec.results[0].name:
        return None
    params = {p.name: p for p in spec.params}
    if x.name not in params:
        return None
    src, dst = params[x.name].type.dtype, spec.results[0].type.dtype
    if src != dst and not (src in CONVERTIBLE and dst in CONVERTIBLE and ir.DType.f32 in (src, dst)):
        return None     # (the vector unit converts between f32 and a 16-bit type only)
    if any(not isinstance(i, ir.Var) for i in x.index + y.index):
        return None
    xv, yv = [i.name for i in x.index], [i.name for i in y.index]
    if len(set(xv)) != len(xv) or sorted(xv) != sorted(yv) or xv == yv:
        return None
    return x.name, y.name, tuple(xv.index(v) for v in yv)


def permute_func(spec: ir.Func, info, tasks: int = 32, views: bool = False):
    """Kernels for a permutation (raises NotRowModel when `spec` is not one this module schedules). With `views`,
    axes that x and y both hold together, adjacent and in order, are merged first through reshape views (the
    scheduled function is returned then): `y[i, j, k] = x[j, k, i]` is the 2-D transpose of x as [J * K, I]."""
    if match_permute(spec, info) is None:
        raise NotRowModel("not a permutation")
    if views:
        flat = _merged(spec, info)
        if flat is not None:
            from gir.shapes import func_info
            return dataclasses.replace(flat, body=tuple(_permute_kernels(flat, func_info(flat), tasks)))
    return _permute_kernels(spec, info, tasks)


def _merged(spec: ir.Func, info) -> ir.Func | None:
    """`spec` with every run of y's axes that reads consecutive axes of x, in order, merged into one axis through
    reshape views of x and y (references keep the run's first index); None when no run has two axes."""
    x, y, perm = match_permute(spec, info)
    runs = [[0]]
    for k in range(1, len(perm)):
        if perm[k] == perm[k - 1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    if len(runs) == len(perm):
        return None
    st = info.stmts[0].stmt
    inner = {st.target.index[k].name for r in runs for k in r[1:]}

    def retype(p: ir.Param, ref: ir.Ref) -> ir.Param:
        shape = _run_extents(ref, p.type.shape, inner)
        outer = p.view.outer if p.view is not None else p.type
        return dataclasses.replace(p, type=ir.TensorType(p.type.dtype, shape),
                                   view=ir.View(outer, tuple(ir.Const(v) for v in shape)))

    def drop(ref: ir.Ref) -> ir.Ref:
        return dataclasses.replace(ref, index=tuple(i for i in ref.index if i.name not in inner))

    params = tuple(retype(p, st.value) if p.name == x else p for p in spec.params)
    results = (retype(spec.results[0], st.target),)
    body = tuple(dataclasses.replace(s, target=drop(s.target), value=drop(s.value)) if isinstance(s, ir.Assign)
                 else s for s in spec.body)
    return dataclasses.replace(spec, params=params, results=results, body=body)


def _run_extents(ref: ir.Ref, shape: tuple, inner: set) -> tuple:
    """The extents of `ref`'s tensor with each merged run (a kept index followed by inner ones) as one axis."""
    out: list = []
    for i, d in zip(ref.index, shape):
        if i.name in inner:
            out[-1] *= d
        else:
            out.append(d)
    return tuple(out)


def _permute_kernels(spec: ir.Func, info, tasks: int) -> list:
    x, y, perm = match_permute(spec, info)
    xshape = next(p.type.shape for p in spec.params if p.name == x)
    yshape = spec.results[0].type.shape
    n, dt = len(perm), spec.results[0].type.dtype
    src = next(p.type.dtype for p in spec.params if p.name == x)
    if perm[-1] == n - 1:   # the last axis kept: strided copies of slabs
        from gir.passes.schedule_mlu.slab_copy import slab_copy_kernel
        return [slab_copy_kernel(x, y, perm, yshape, f"{spec.name}_mlu", tasks, src, dt)]
    # x's axis perm[-1] becomes y's last: a 2-D transpose of (that axis, x's last) per slab of the other axes
    ycol = perm.index(n - 1)
    yaxes = tuple(k for k in range(n - 1) if k != ycol)
    batch = Batch(n, perm[-1], ycol, yaxes, tuple(perm[k] for k in yaxes))
    return [transpose2d_kernel(x, y, xshape[perm[-1]], xshape[-1], f"{spec.name}_mlu", tasks, src,
                               tuple(yshape[k] for k in yaxes), batch=batch, out_dt=dt,
                               pitches=(math.prod(xshape[perm[-1] + 1:]), math.prod(yshape[ycol + 1:])))]


@dataclass(frozen=True)
class Batch:
    """Where a batched transpose's axes lie: x's tile rows run along its axis `xrow` (y's last axis), its tile
    columns along its last axis (y's axis `ycol`); y's other axes `yaxes` (in y's order) read x's axes `xaxes`."""
    rank: int
    xrow: int
    ycol: int
    yaxes: tuple
    xaxes: tuple

    @staticmethod
    def leading(lead_perm: tuple) -> "Batch":
        """The last two axes swapped, y's leading axis k reading x's axis lead_perm[k]."""
        n = len(lead_perm) + 2
        return Batch(n, n - 2, n - 2, tuple(range(n - 2)), tuple(lead_perm))


def _trips(n: int, tvar, tasks: int) -> ir.Expr:
    """Iterations of `for it in 0..` covering units task, task + tasks, ... < n."""
    return ir.BinOp("//", B.add(ir.BinOp("-", B.c(n), tvar), tasks - 1), B.c(tasks))


@dataclass(frozen=True)
class _Tiles:
    """What every tile of a transpose does: load x[r0:+rlen, c0:+clen] into `xa`, transpose the whole [rb, cb]
    buffer into `ta`, store y[c0:+clen, r0:+rlen]. `conv`: y's element type when it differs from x's (the
    transposed tile is converted into `tc` first). `packed_in` / `packed_out`: x's / y's tile rows are short
    (under PACKED_ROW bytes) and its tile region is one contiguous run of GDRAM (the tile spans the whole last
    axis): the region moves as one transfer through a dense 1-D NRAM run (`xp` / `tp`), spread into / packed from
    the tile's rows by an on-chip copy. (A [3, N] transpose stored 12-byte rows, each a DMA of its own: 9.6x the
    DMA roofline.)"""
    x: str
    y: str
    rb: int
    cb: int
    conv: ir.DType | None = None
    packed_in: bool = False
    packed_out: bool = False

    def tile(self, r0, rlen: int, c0, clen: int, xl=(None, None), yl=(None, None)) -> list:
        """xl, yl: the indices of x and y in a batched transpose, None where the tile's two slices go (x: rows,
        then columns; y: columns, then rows)."""
        rb, cb = self.rb, self.cb
        src = B.ref(self.x, *_fill(xl, B.sl(r0, rlen), B.sl(c0, clen)))
        dst = B.ref(self.y, *_fill(yl, B.sl(c0, clen), B.sl(r0, rlen)))
        xa = B.ref("xa", B.sl(0, rlen), B.sl(0, clen))
        if self.packed_in:
            load = [B.move("load", B.ref("xp", B.sl(0, rlen * clen)), src),
                    B.move("copy", xa, B.ref("xp", B.sl(0, rlen * clen)))]
        else:
            load = [B.move("load", xa, src)]
        out = "tc" if self.conv else "ta"
        convert = [ir.Assign(B.ref("tc", B.sl(0, cb), B.sl(0, rb)),
                             ir.Call(self.conv.value, (B.ref("ta", B.sl(0, cb), B.sl(0, rb)),)))] if self.conv else []
        done = B.ref(out, B.sl(0, clen), B.sl(0, rlen))
        if self.packed_out:
            store = [B.move("copy", B.ref("tp", B.sl(0, clen * rlen)), done),
                     B.move("store", dst, B.ref("tp", B.sl(0, clen * rlen)))]
        else:
            store = [B.move("store", dst, done)]
        return load + [ir.Assign(B.ref("ta", B.sl(0, cb), B.sl(0, rb)),
                                 ir.Call("transpose", (B.ref("xa", B.sl(0, rb), B.sl(0, cb)),)))] + convert + store


def _fill(index: tuple, first, second) -> list:
    """`index` with its two None entries replaced by `first` and `second`, in that order."""
    slices = iter((first, second))
    return [next(slices) if i is None else i for i in index]


@dataclass(frozen=True)
class Plan:
    """A 2-D transpose's decomposition: tiles of rb x cb; the row tiles of each column chunk go in parts of k
    (full column chunks) or kt (the column tail) consecutive tiles, the row tail tile ending the last part."""
    rb: int
    cb: int
    k: int
    kt: int


def _cyclic(nunits: int, first: int, tasks: int, body) -> list:
    """Units u in 0..nunits, unit u on core (first + u) % tasks: `body(u)` with u affine in loop variables (a
    one-trip loop decodes the core's first unit when first % tasks != 0)."""
    t = B.v("task_")
    if first % tasks == 0:
        return [ir.For("ut_", B.c(0), _trips(nunits, t, tasks), tuple(body(B.add(B.mul(B.v("ut_"), tasks), t))))]
    q = ir.BinOp("%", B.add(t, tasks - first % tasks), B.c(tasks))
    u = B.add(B.mul(B.v("ut_"), tasks), B.v("q_"))
    loop = ir.For("ut_", B.c(0), _trips(nunits, B.v("q_"), tasks), tuple(body(u)))
    return [ir.For("q_", q, B.add(q, 1), (loop,))]


def _part(t: _Tiles, c0, clen: int, p, parts: int, k: int, nr: int, rt: int, xl=(None, None),
          yl=(None, None)) -> list:
    """Part p (affine) of a column chunk: its full row tiles p*k ... (a software-pipelined loop), then the row tail
    tile (exact size) when p is the last part."""
    out: list = []
    rb = t.rb
    trips = B.c(nr) if parts == 1 else ir.Call("min", (B.c(k), ir.BinOp("-", B.c(nr), B.mul(p, k))))
    if nr:
        r0 = B.mul(B.add(B.mul(p, k), B.v("it_")), rb) if parts > 1 else B.mul(B.v("it_"), rb)
        out.append(ir.For("it_", B.c(0), trips, tuple(t.tile(r0, rb, c0, clen, xl, yl))))
    if rt:
        tail = t.tile(B.c(nr * rb), rt, c0, clen, xl, yl)
        out += tail if parts == 1 else [ir.If(ir.BinOp("==", p, B.c(parts - 1)), tuple(tail), ())]
    return out


def _one_trip(name: str, lo: ir.Expr, body: list) -> ir.For:
    return ir.For(name, lo, B.add(lo, 1), tuple(body))


def transpose2d_kernel(x: str, y: str, m: int, n: int, name: str, tasks: int = 32,
                       dt: ir.DType = ir.DType.f32, lead: tuple = (), lead_perm: tuple = (),
                       batch: Batch | None = None, pitches: tuple | None = None,
                       out_dt: ir.DType | None = None) -> ir.Kernel:
    """y = x^T for x: [m, n], on the decomposition `choose_plan` picks (see the module docstring). With `lead`
    (the extents of y's other axes; by default its leading ones, y's leading axis k reading x's axis
    lead_perm[k]; `batch` places them anywhere), every slab y[l, :, :] = x[l', :, :]^T: the units of all slabs,
    slab-major, go cyclically to the cores. `pitches`: the elements between consecutive tile rows of x and of y
    (by default n and m). `out_dt`: y's element type when it differs from x's (each transposed tile converted;
    the tiles sized for the wider type)."""
    nb = math.prod(lead)
    batch = batch or Batch.leading(lead_perm)
    conv = out_dt if out_dt is not None and out_dt != dt else None
    es = L.device_nbytes(dt)
    plan = choose_plan(m, n, max(es, L.device_nbytes(conv)) if conv else es, tasks, nb, pitches)
    rb, cb = plan.rb, plan.cb
    nr, rt = divmod(m, rb)
    nc, ct = divmod(n, cb)
    parts, parts_t = _parts(nr, rt, plan.k), _parts(nr, rt, plan.kt)
    xpitch, ypitch = pitches or (n, m)
    out_es = L.device_nbytes(conv) if conv else es
    t = _Tiles(x, y, rb, cb, conv, n <= cb and xpitch == n and n * es < PACKED_ROW,
               m <= rb and ypitch == m and m * out_es < PACKED_ROW)
    body: list = [B.alloc("xa", dt, (rb, cb), "nram"), B.alloc("ta", dt, (cb, rb), "nram")]
    body += [B.alloc("tc", conv, (cb, rb), "nram")] if conv else []
    body += [B.alloc("xp", dt, (rb * n,), "nram")] if t.packed_in else []
    body += [B.alloc("tp", conv or dt, (cb * m,), "nram")] if t.packed_out else []
    if nc:
        def main_unit(u, xl, yl):   # unit u = (column chunk u // parts, part u % parts)
            if parts == 1:
                return _part(t, B.mul(u, cb), cb, B.c(0), 1, plan.k, nr, rt, xl, yl)
            inner = _part(t, B.mul(B.v("c_"), cb), cb, B.v("p_"), parts, plan.k, nr, rt, xl, yl)
            part = _one_trip("p_", ir.BinOp("%", u, B.c(parts)), inner)
            return [_one_trip("c_", ir.BinOp("//", u, B.c(parts)), [part])]
        body += _cyclic(nb * nc * parts, 0, tasks, lambda u: _slab(u, nc * parts, lead, batch, main_unit))
    if ct:
        body += _cyclic(nb * parts_t, nb * nc * parts, tasks, lambda u: _slab(
            u, parts_t, lead, batch,
            lambda r, xl, yl: _part(t, B.c(nc * cb), ct, r, parts_t, plan.kt, nr, rt, xl, yl)))
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(body))
    return ir.Kernel(name, (top,), (("task_dim", str(tasks)),))


def _slab(u, per: int, lead: tuple, batch: Batch, body) -> list:
    """`body(r, xl, yl)` for unit u of a batched transpose: slab u // per (its indices yl of y, decoded by
    one-trip loops so that regions stay affine, and xl of x; None where the tile's slices go) and unit r = u % per
    within the slab."""
    if not lead:
        return body(u, (None, None), (None, None))
    names = [f"l{k}_" for k in range(len(lead))]
    yl: list = [None] * batch.rank
    xl: list = [None] * batch.rank
    for k, (ya, xa) in enumerate(zip(batch.yaxes, batch.xaxes)):
        yl[ya] = xl[xa] = B.v(names[k])
    stmt = [_one_trip("r_", ir.BinOp("%", u, B.c(per)), body(B.v("r_"), tuple(xl), tuple(yl)))]
    slab, span = ir.BinOp("//", u, B.c(per)), 1
    for k in reversed(range(len(lead))):
        q = ir.BinOp("//", slab, B.c(span)) if span > 1 else slab
        stmt = [_one_trip(names[k], ir.BinOp("%", q, B.c(lead[k])) if k else q, stmt)]
        span *= lead[k]
    return stmt


def choose_plan(m: int, n: int, es: int, tasks: int = 32, slabs: int = 1, pitches: tuple | None = None) -> Plan:
    """The decomposition with the least estimated time (`_CostModel`; ties: taller tiles, then fewer and longer
    parts). Tiles are rb x 128 with rb = 128 KiB / 128 elements, or a smaller power of two down to 64 rows (more
    row tiles to spread when M is small); the part size k trades filling the cores (k small) against more DMA
    start-ups and less pipelining (k large); the column tail's kt is chosen after k, for the cores k leaves least
    loaded."""
    base = min(TILE_COLS, L.round_up(n, L.PITCH))
    best = None
    for rb in _tile_heights(m, es, base):
        cb = base   # y's rows shorter than a tile's 64: wider tiles, the same NRAM, fewer DMAs of packed rows
        if m < L.PITCH:
            cb = min(L.round_up(n, L.PITCH), max(base, TILE_BYTES // (rb * es) // L.PITCH * L.PITCH))
        nc, ct = divmod(n, cb)
        model = _CostModel(m, n, es, rb, cb, tasks, pitches)
        k = min(model.part_sizes(), key=lambda k: model.time([(nc * slabs, cb, k)]))
        kt = min(model.part_sizes(), key=lambda kt: model.time([(nc * slabs, cb, k), (slabs, ct, kt)])) if ct else k
        t = model.time([(nc * slabs, cb, k)] + ([(slabs, ct, kt)] if ct else []))
        if best is None or t < best[0]:
            best = (t, Plan(rb, cb, k, kt))
    return best[1]


def _tile_heights(m: int, es: int, cb: int = TILE_COLS) -> list[int]:
    """Candidate rb, tallest first: 128 KiB / 128 elements capped by M (rounded up to 64 rows; 128 KiB / 64
    elements when x's rows are a tile's 64 columns or fewer), then the smaller powers of two down to 64 (multiples
    of 64, so tiles stay dense)."""
    top = min(TILE_BYTES // (max(cb, L.PITCH) if cb <= L.PITCH else TILE_COLS) // es, L.round_up(m, L.PITCH))
    return [top] + [h for h in (1024, 512, 256, 128, 64) if h < top]


class _CostModel:
    """Estimated time of a decomposition, from the per-core work of the cyclic unit assignment: the GDRAM time of
    all segments moved (at the chip's bandwidth, or the busiest core's DMA port) plus the busiest core's time that
    no transfer overlaps: every DMA's start-up latency (a core's DMAs run one after another on its IO pipe) and the
    `__bang_transpose` of a tile no DMA hides (a part of one full tile, and the row tail tile, run unpipelined)."""

    def __init__(self, m: int, n: int, es: int, rb: int, cb: int, tasks: int, pitches: tuple | None = None):
        mc = MLU370
        self.m, self.n, self.es, self.rb, self.cb, self.tasks = m, n, es, rb, cb, tasks
        self.xpitch, self.ypitch = pitches or (n, m)   # elements between tile rows of x and of y
        self.nr, self.rt = divmod(m, rb)
        self.lat = mc.gdram_latency_cycles / mc.clock_hz
        self.comp = rb * cb * es // mc.vector_unit_bytes * mc.cycles_transpose / mc.clock_hz
        self.gbw, self.pbw = mc.gdram_bandwidth, mc.core_dma_bandwidth

    def part_sizes(self) -> list[int]:
        """One part size per distinct part count, longest first."""
        slots = self.nr + (self.rt > 0)
        return sorted({-(-slots // p) for p in range(1, slots + 1)}, reverse=True)

    def tile_bytes(self, rows: int, cols: int) -> int:
        """GDRAM bytes moved for one tile: segments of 64 B; a row piece off the segment grid straddles one more,
        and a partial write also reads back its two end segments."""
        def seg(nbytes: int, pitch: int, extra: int) -> int:
            return 64 * (-(-nbytes // 64) + extra * (pitch % 64 != 0))
        es = self.es
        return rows * seg(cols * es, self.xpitch * es, 1) + cols * seg(rows * es, self.ypitch * es, 3)

    def time(self, groups) -> float:
        """groups: (column chunks, chunk width, k) in unit order; unit g runs on core g % tasks."""
        nr, rt, tasks = self.nr, self.rt, self.tasks
        work, exposed = np.zeros(tasks), np.zeros(tasks)
        g0 = 0
        for chunks, width, k in groups:
            nparts = _parts(nr, rt, k)
            p = np.arange(chunks * nparts) % nparts
            core = (g0 + np.arange(chunks * nparts)) % tasks
            tiles = np.clip(nr - p * k, 0, k)
            tail = (p == nparts - 1) & (rt > 0)
            nbytes = tiles * self.tile_bytes(self.rb, width) + tail * (self.tile_bytes(rt, width) if rt else 0)
            work += np.bincount(core, nbytes, tasks)
            exposed += np.bincount(core, 2 * (tiles + tail) * self.lat + ((tiles == 1) + tail) * self.comp, tasks)
            g0 += chunks * nparts
        return max(work.sum() / self.gbw, work.max() / self.pbw) + float(exposed.max())


def _parts(nr: int, rt: int, k: int) -> int:
    """Parts of k row tiles in a column chunk of nr full row tiles and (rt > 0) a row tail tile."""
    return max(1, -(-(nr + (rt > 0)) // k))
