"""`dense-staging`: GDRAM moves of padded NRAM tiles go through a dense staging run (explicit MLU GIR in and out).

A 2-D NRAM tile `[R, C]` has rows padded to 64 elements (layout.py), so a move between its rows and GDRAM is one
DMA segment per row even when the GDRAM rows are back to back: rows of 126 f32 (504 bytes) start off the 64-byte
granule grid and touch 8.75 granules on average (1.11x), and a store reads back the two granules it writes in part
(1.33x). When the GDRAM region is one contiguous run, the move goes through a dense 1-D buffer instead:

    load t[s, 0:R, 0:C] <- x[...]          load stg_[0:R*C] <- x[...]            (one segment)
                                     ->    copy t[s, 0:R, 0:C] <- stg_[0:R*C]     (on-core move to the padded rows)

and a store the other way round (a copy into the run, then one segment to GDRAM). Both keep the move's `async`.
In a `layout=dense` kernel 2-D tiles are unpadded, and a tile is staged the same way when its rows are longer than
the moved ones (a scan's tile of 448 positions for rows of 404, scan_size.py `row_units`).
One staging run per element type serves every such move of a kernel: all DMAs of a core (GDRAM and on-core)
run on its IO pipe in issue order (targets/mlu/timing.py), so a staged copy has read the run before the next
move writes it.

A move is staged when the GDRAM bytes it saves, at the task's share of the GDRAM bandwidth when all cores move
data, take longer than the on-core copy it adds (latency plus bytes at the move engine's rate): never for rows
whose bytes are a multiple of the granule, for short runs rarely, for rows of a few hundred bytes off the grid
always. The kernel keeps its moves when the staging runs would not fit in NRAM beside what it allocates
(tiles_nram.py counts them). The pass runs after `software-pipeline` (it rewrites the pipelined moves, whose
tiles carry slot indices); the MLU cost model (cost.py) and the NRAM count (tiles_nram.py) apply the same rewrite
to the kernels they are given, so the schedule is chosen and sized as it will run.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.affine import slice_extent
from gir.passes.base import ModulePass, PassContext
from gir.passes.machines import MLU370, MluMachine
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.cost_regions import segment_bytes
from gir.walk import walk_stmts


@dataclass(frozen=True)
class DenseStaging(ModulePass):
    """Move padded NRAM tiles to and from contiguous GDRAM runs through a dense staging buffer (one DMA segment)."""
    name: ClassVar[str] = "dense-staging"
    consumes: ClassVar[str] = "gir"
    produces: ClassVar[str] = "gir"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        funcs = []
        for f in module.funcs:
            g = stage_func(f)
            if g is not f:
                ctx.bump("dense-staging.moves", _count_moves(g) - _count_moves(f))
            funcs.append(g)
        return dataclasses.replace(module, funcs=tuple(funcs))


def stage_func(func: ir.Func, machine: MluMachine = MLU370) -> ir.Func:
    """`func` with the stageable moves of its MLU kernels staged (unchanged when there are none)."""
    if not func.kernels:
        return func
    types = gdram_types(func)
    body = tuple(stage_kernel(x, types, machine) if isinstance(x, ir.Kernel) else x for x in func.body)
    if all(a is b for a, b in zip(body, func.body)):
        return func
    return dataclasses.replace(func, body=body)


def gdram_types(func: ir.Func) -> dict:
    """The off-chip tensors a kernel of `func` may name: name -> TensorType."""
    out = {p.name: p.type for p in func.params + func.results}
    out.update((a.name, a.type) for a in func.body if isinstance(a, ir.Alloc))
    return out


def stage_kernel(k: ir.Kernel, gdram: dict, machine: MluMachine = MLU370, pays: bool = True) -> ir.Kernel:
    """`k` with its stageable moves staged, when the staging runs fit in NRAM beside the kernel's own buffers once
    pipelined (`k` may be pipelined or not: the cost model stages the scheduled kernels, the pass the pipelined
    ones). `pays=False` stages every move of the right shape whether or not it saves time (tests: the values of a
    staged kernel at sizes too small for the rule)."""
    from gir.passes.schedule_mlu.swpipe import pipeline_kernel
    from gir.passes.schedule_mlu.tiles_nram import pipelined_nram
    out = _stage(k, gdram, machine, pays)
    if out is k:
        return k
    piped = pipeline_kernel(k)
    fitted = out if piped is k else _stage(piped, gdram, machine, pays)
    return out if pipelined_nram(fitted) <= machine.nram_bytes else k


def _stage(k: ir.Kernel, gdram: dict, m: MluMachine, pays: bool) -> ir.Kernel:
    dense = dict(k.attrs).get("layout") == "dense"   # (2-D tiles unpadded: a row's pitch is its columns)
    tiles = _nram_tiles(k.body)
    tasks = int(dict(k.attrs).get("task_dim", m.clusters * m.cores_per_cluster))
    moves = [s for s in _moves(k.body) if _stageable(s, tiles, gdram, m, tasks, pays, dense)]
    if not moves:
        return k
    runs: dict[ir.DType, int] = {}
    for s in moves:
        t = tiles[_tile_ref(s).name]
        runs[t.dtype] = max(runs.get(t.dtype, 0), _tile_elems(_tile_ref(s), t))
    taken = {a.name for a in walk_stmts(k.body) if isinstance(a, ir.Alloc)} | set(gdram)
    names = {}
    for dt in runs:
        base = f"stg_{dt.value}" if len(runs) > 1 else "stg_"
        name, i = base, 0
        while name in taken:
            i += 1
            name = f"{base}{i}"
        names[dt] = name
    allocs = tuple(ir.Alloc(names[dt], ir.TensorType(dt, (n,)), ir.Level.nram) for dt, n in runs.items())
    body = _Rewrite({id(s) for s in moves}, tiles, names).block(k.body)
    body = _insert_allocs(body, allocs)
    declared = {a.name for a in walk_stmts(body) if isinstance(a, ir.Alloc)}
    if not set(names.values()) <= declared:   # (a staged move outside any @core scope: left as it was)
        return k
    return dataclasses.replace(k, body=body)


@dataclass(frozen=True)
class _Tile:
    name: str
    dtype: ir.DType
    shape: tuple      # without the pipeline slots
    slots: int


def _nram_tiles(stmts) -> dict[str, _Tile]:
    out = {}
    for s in walk_stmts(stmts):
        if isinstance(s, ir.Alloc) and s.level == ir.Level.nram:
            shape = tuple(s.type.shape)[1:] if s.slots > 1 else tuple(s.type.shape)
            out[s.name] = _Tile(s.name, s.type.dtype, shape, s.slots)
    return out


def _moves(stmts):
    return (s for s in walk_stmts(stmts) if isinstance(s, ir.Move))


def _tile_ref(s: ir.Move) -> ir.Ref:
    return s.dst if s.kind == "load" else s.src


def _gdram_ref(s: ir.Move) -> ir.Ref:
    return s.src if s.kind == "load" else s.dst


def _tile_index(r: ir.Ref, t: _Tile) -> tuple | None:
    """The tile region's index without its slot index (None when it is not one slot's region)."""
    idx = tuple(r.index)
    if t.slots > 1:
        if len(idx) != len(t.shape) + 1 or isinstance(idx[0], ir.Slice):
            return None
        idx = idx[1:]
    return idx if len(idx) == len(t.shape) else None


def _tile_elems(r: ir.Ref, t: _Tile) -> int:
    idx = _tile_index(r, t)
    return math.prod(_length(i) for i in idx)


def _length(i) -> int | None:
    if not isinstance(i, ir.Slice):
        return 1
    if i.step != 1:
        return None
    return slice_extent(i.start, i.stop)


def _stageable(s: ir.Move, tiles: dict, gdram: dict, m: MluMachine, tasks: int, pays: bool = True,
               dense: bool = False) -> bool:
    """A load or store between the padded rows of a 2-D NRAM tile and one contiguous GDRAM run, whose staging
    saves more GDRAM time than its on-core copy costs. The GDRAM rate is a task's share when as many tasks move
    such runs of the tensor at once as the kernel has tasks or the tensor has runs, whichever is fewer (a small
    tensor moved by three tasks is latency-bound: each has its core's whole DMA port)."""
    if s.kind not in ("load", "store") or s.other is not None:
        return False
    tr, gr = _tile_ref(s), _gdram_ref(s)
    t, g = tiles.get(tr.name), gdram.get(gr.name)
    if t is None or g is None or g.dtype != t.dtype or len(t.shape) != 2 or L.is_rowvec(t.shape):
        return False
    idx = _tile_index(tr, t)
    if idx is None or not all(isinstance(i, ir.Slice) for i in idx):
        return False
    rows, cols = (_length(i) for i in idx)
    if rows is None or cols is None or rows < 2 or cols == (t.shape[-1] if dense else L.pitch(t.shape)):
        return False   # (one row, or rows that are contiguous in NRAM too: the emitter merges them itself)
    run = contiguous_run(gr, g)
    if run != rows * cols:
        return False
    if not pays:
        return True
    esz = L.device_nbytes(t.dtype)
    gran = m.dma_granularity
    step = math.gcd(gran, cols * esz)   # the grid the rows' starts fall on (rows back to back)
    write = s.kind == "store"
    rowwise = segment_bytes(rows, cols * esz, step, gran, write)
    staged = segment_bytes(1, run * esz, step, gran, write)
    busy = max(1, min(tasks, -(-math.prod(g.shape) // run)))
    share = min(m.bytes_per_cycle(m.core_dma_bandwidth), m.bytes_per_cycle(m.gdram_bandwidth) / busy)
    copy = m.move_latency_cycles + run * esz / m.bytes_per_cycle(m.nram_move_bandwidth)
    copies = 2 if s.mask and s.kind == "load" else 1
    return (rowwise - staged) / share > copies * copy


def contiguous_run(r: ir.Ref, t: ir.TensorType) -> int | None:
    """The element count of the region `r` of the off-chip tensor (type `t`) when it is one contiguous run: every
    dimension after its first one of more than one element is whole (None otherwise, or when a length is not
    constant)."""
    shape = tuple(t.shape)
    if not r.index or len(r.index) != len(shape) or any(not isinstance(d, int) for d in shape):
        return None
    lengths = [_length(i) for i in r.index]
    if any(n is None for n in lengths):
        return None
    outer = next((d for d, n in enumerate(lengths) if n > 1), len(lengths))
    if any(lengths[d] != shape[d] for d in range(outer + 1, len(shape))):
        return None
    return math.prod(lengths)


class _Rewrite:
    def __init__(self, chosen: set, tiles: dict, names: dict):
        self.chosen, self.tiles, self.names = chosen, tiles, names

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, ir.Move) and id(s) in self.chosen:
                out += self.staged(s)
            elif isinstance(s, (ir.Parallel, ir.For)):
                out.append(dataclasses.replace(s, body=self.block(s.body)))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.block(s.then), orelse=self.block(s.orelse)))
            else:
                out.append(s)
        return tuple(out)

    def staged(self, s: ir.Move) -> list:
        tr = _tile_ref(s)
        t = self.tiles[tr.name]
        n = _tile_elems(tr, t)
        run = ir.Ref(self.names[t.dtype], (ir.Slice(ir.Const(0), ir.Const(n)),), loc=tr.loc)
        if s.kind == "load":
            keep = [ir.Move("copy", run, tr, loc=s.loc, async_=s.async_)] if s.mask else []
            return keep + [dataclasses.replace(s, dst=run), ir.Move("copy", tr, run, loc=s.loc, async_=s.async_)]
        return [ir.Move("copy", run, tr, loc=s.loc, async_=s.async_), dataclasses.replace(s, src=run)]


def _insert_allocs(body: tuple, allocs: tuple) -> tuple:
    """`allocs` at the start of every @core scope that moves through them (before any of its statements: tiles
    may be allocated later, or inside loops)."""
    names = {a.name for a in allocs}
    out = []
    for s in body:
        if isinstance(s, ir.Parallel):
            inner = _insert_allocs(s.body, allocs)
            if s.level == ir.ParLevel.core and _uses(inner, names):
                inner = allocs + inner
            s = dataclasses.replace(s, body=inner)
        out.append(s)
    return tuple(out)


def _uses(stmts, names: set) -> bool:
    return any(isinstance(s, ir.Move) and (s.src.name in names or s.dst.name in names) for s in _moves(stmts))


def _count_moves(f: ir.Func) -> int:
    """Moves of `f`'s kernels (staging a move adds one)."""
    return sum(1 for k in f.kernels for _ in _moves(k.body))
