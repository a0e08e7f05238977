"""Permutations that keep the last axis on the MLU (`y[b, h, s, d] = x[b, s, h, d]`, transpose.py matches them):
strided copies of slabs, one work unit per point of y's other axes and part of S, cyclic over the cores (one-trip
loops decode them); GDRAM to GDRAM, or through NRAM to convert the element type or to store short rows off the
64-byte DMA granule as one segment."""
from __future__ import annotations

import math

import numpy as np

from gir import ir
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.rowmodel import NotRowModel
from gir.passes.schedule_mlu.transpose import _one_trip, _trips

CONVERT_BYTES = 192 * 1024   # NRAM for a converting slab copy's part (in + out; double-buffered by the pipeline)
STAGE_BYTES = 256 * 1024     # NRAM for a staged slab copy's part (rows off the DMA granule)
STAGE_ROW = 512              # ... whose rows are shorter than this many bytes


def slab_copy_kernel(x: str, y: str, perm: tuple, yshape: tuple, name: str, tasks: int = 32,
                     dt: ir.DType = ir.DType.f32, out_dt: ir.DType | None = None) -> ir.Kernel:
    """y[u..., s0:+R, 0:D] <- x[(the same indices, permuted)] per unit (u over y's other axes, part s0 of S). S is
    y's longest axis before the last (its second-to-last on ties: fewer, longer copies; `y[b, s, h, d] = x[b, h, s,
    d]` with H = 16, S = 512 copied 16 rows at a time ran at 1.59x the DMA roofline). With `out_dt` (y's element
    type, when it differs from x's `dt`) each part is loaded into NRAM, converted and stored (parts of at most
    CONVERT_BYTES of x and y together)."""
    ra = max(range(len(yshape) - 1), key=lambda k: (yshape[k], k))
    order = [k for k in range(len(yshape) - 1) if k != ra]      # y's axes of the units, outermost first
    lead, (s, d) = tuple(yshape[k] for k in order), (yshape[ra], yshape[-1])
    units = 1
    for n in lead:
        units *= n
    conv = out_dt if out_dt is not None and out_dt != dt else None
    es = L.device_nbytes(dt)
    rows = slab_rows(units, s, d * es, tasks)
    # short rows off the 64-byte granule: a strided copy pays a partial granule at each end of every row on both
    # sides, and reads every partially written one again; staged through a dense NRAM run, a part whose y region
    # is contiguous is stored as one segment, for a second DMA latency: not for parts under twice the bytes a core
    # moves during one (B=2 S=100 H=3 D=5: 12.5x -> 15.5x the DMA roofline when staged), rows of STAGE_ROW bytes
    # and more (1260-byte rows: 1.255x -> 1.289x), nor where only x's region is contiguous (the strided stores
    # keep their read-modify-writes: [3, 257, 315] bool 1.721x -> 1.939x)
    from gir.passes.schedule_mlu.indexops import latency_bytes
    staged = not conv and (d * es) % 64 != 0 and d * es < STAGE_ROW and ra == len(yshape) - 2 and \
        rows * d * es >= 2 * latency_bytes(tasks)
    if staged and rows * d * es > STAGE_BYTES:
        rows = -(-s // -(-s // (STAGE_BYTES // (d * es))))
    if conv:   # (NRAM tiles lay rows out at the 64-element pitch)
        row = L.round_up(d, L.PITCH) * (L.device_nbytes(dt) + L.device_nbytes(conv))
        if row > CONVERT_BYTES:
            raise NotRowModel(f"rows of {d} elements do not fit NRAM to be converted")
        rows = min(rows, CONVERT_BYTES // row)
    parts, last = -(-s // rows), s - (s - 1) // rows * rows
    t = B.v("task_")
    u = B.add(B.mul(B.v("it_"), tasks), t)
    names = [f"u{k}_" for k in range(len(lead))]

    def copy(s0, length: int) -> tuple:
        yidx: list = [None] * len(yshape)
        for k, v in zip(order, names):
            yidx[k] = B.v(v)
        yidx[ra], yidx[-1] = B.sl(s0, length), B.sl(0, d)
        xidx: list = [None] * len(perm)
        for k, ax in enumerate(perm):
            xidx[ax] = yidx[k]
        if staged:
            run = B.ref("xs", B.sl(0, length * d))
            return (B.move("load", run, B.ref(x, *xidx)), B.move("store", B.ref(y, *yidx), run))
        if not conv:
            return (B.move("copy", B.ref(y, *yidx), B.ref(x, *xidx)),)
        tile = (B.sl(0, length), B.sl(0, d))
        return (B.move("load", B.ref("xa", *tile), B.ref(x, *xidx)),
                ir.Assign(B.ref("tc", *tile), ir.Call(conv.value, (B.ref("xa", *tile),))),
                B.move("store", B.ref(y, *yidx), B.ref("tc", *tile)))

    if parts == 1:
        stmt: tuple = copy(B.c(0), s)
    else:   # the innermost one-trip loop decodes the part; the last part's rows are static too
        full = copy(B.mul(B.v("p_"), rows), rows)
        tail = ir.If(ir.BinOp("==", B.v("p_"), B.c(parts - 1)), copy(B.c((parts - 1) * rows), last), full)
        stmt = (_one_trip("p_", ir.BinOp("%", u, B.c(parts)), [tail] if last != rows else list(full)),)
    inner = parts
    for k in reversed(range(len(lead))):      # u = (((u0 * L1 + u1) * L2 + u2) ...) * P + p: one-trip decoding
        lo = ir.BinOp("%", ir.BinOp("//", u, B.c(inner)), B.c(lead[k])) if k else ir.BinOp("//", u, B.c(inner))
        stmt = (ir.For(names[k], lo, B.add(lo, 1), stmt),)
        inner *= lead[k]
    loop = ir.For("it_", B.c(0), _trips(units * parts, t, tasks), stmt)
    allocs = (B.alloc("xa", dt, (rows, d), "nram"), B.alloc("tc", conv, (rows, d), "nram")) if conv else \
        (B.alloc("xs", dt, (rows * d,), "nram"),) if staged else ()
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, allocs + (loop,))
    return ir.Kernel(name, (top,), (("task_dim", str(tasks)),))


def slab_rows(units: int, s: int, row_bytes: int, tasks: int = 32) -> int:
    """Rows of S per copy: the whole slab when the slabs alone keep the chip's GDRAM busy, else parts of S so that
    enough cores copy at once (one core's DMA port carries a fifth of the chip's bandwidth). Estimated time of P
    parts: the copies' bytes at the chip's bandwidth or the busiest core's port, plus its copies' start-up
    latencies; P grows only for a gain of more than 1%. Parts are whole 64-byte segments of y where possible."""
    mc = MLU370
    step = 64 // math.gcd(64, row_bytes)
    best = None
    for p in range(1, min(s, -(-4 * tasks // units)) + 1):
        rows = min(s, L.round_up(-(-s // p), step))
        parts = -(-s // rows)
        size = np.full(units * parts, 2.0 * rows * row_bytes)
        size[parts - 1::parts] = 2.0 * (s - (parts - 1) * rows) * row_bytes
        core = np.arange(units * parts) % tasks
        work = np.bincount(core, size, tasks)
        copies = np.bincount(core, None, tasks)
        t = (max(work.sum() / mc.gdram_bandwidth, work.max() / mc.core_dma_bandwidth)
             + copies.max() * mc.gdram_latency_cycles / mc.clock_hz)
        if best is None or t < best[0] * 0.99:
            best = (t, rows)
    return best[1]
