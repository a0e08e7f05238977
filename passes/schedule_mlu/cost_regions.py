"""The MLU cost model's view of tasks, regions and index expressions (cost.py): a kernel's tasks, the index
variables a statement's cost depends on, the GDRAM bytes a move of a region costs as the simulator counts them, a
region's extents, and index values and conditions under a task's bound indices (None when they depend on something
unbound)."""
from __future__ import annotations

import math

from gir import ir
from gir.affine import eval_int, free_vars, slice_extent, to_affine
from gir.walk import walk
from gir.passes.schedule_mlu import layout as L


def gdram_bytes(r: ir.Ref, types: dict, env: dict, gran: int, write: bool, run: bool = False) -> float:
    """GDRAM bytes a move of the region `r` of an off-chip tensor costs, as the simulator counts them
    (targets/mlu/dma.py): every `gran`-byte granule a contiguous segment touches, plus one granule read again for
    each partially written one. Segments that repeat along a dimension whose byte stride is not a multiple of
    `gran` (rows of 300 f16: 600 bytes) start at varying offsets on the granule grid: the average over those
    offsets (a segment of 128 bytes touches 2.875 granules on average, not 2). `run`: the other side of the move is
    a contiguous 1-D run, so a region that is contiguous in GDRAM too moves as one segment (the emitter merges
    its rows; staging.py)."""
    t = types[r.name][0]
    counts = extents(r, t, env)
    nbytes = t.dtype.nbytes
    if not counts:
        return float(gran)
    shape = [d if isinstance(d, int) else 1 for d in t.shape]
    if len(shape) != len(counts):   # (a whole-tensor or reshaped reference: one run)
        counts, shape = [math.prod(counts)], [math.prod(counts)]
    seg, k = counts[-1], len(counts) - 1   # a segment per row of the region (as the emitter's moves run)
    nseg = math.prod(counts) // max(1, seg)
    size = seg * nbytes
    step = gran   # the grid the segments' starts fall on: the strides they repeat with
    for d in range(k):
        if counts[d] > 1:
            step = math.gcd(step, math.prod(shape[d + 1:]) * nbytes)
    if run and _contiguous(counts, shape):
        nseg, size = 1, math.prod(counts) * nbytes
    return segment_bytes(nseg, size, step, gran, write)


def onchip_run(r: ir.Ref, t: ir.TensorType, dense: bool, env: dict) -> bool:
    """Whether the on-chip region `r` (of a buffer of type `t`; `dense`: a `layout=dense` kernel, 2-D tiles
    unpadded) is one contiguous run, so that a move merges the rows of a GDRAM region that is contiguous too: a 1-D
    slice of step 1, one row of a tile, or whole rows of an unpadded one."""
    shape, idx = tuple(t.shape), tuple(r.index)
    if len(shape) == 3 and idx and not isinstance(idx[0], ir.Slice):   # one slot of a pipelined tile
        shape, idx = shape[1:], idx[1:]
    if idx and len(idx) != len(shape) or any(isinstance(i, ir.Slice) and i.step != 1 for i in idx) or \
            len(shape) > 2:
        return False
    lengths = extents(ir.Ref(r.name, idx), ir.TensorType(t.dtype, shape), env)
    if len(shape) < 2 or L.is_rowvec(shape) or lengths[0] <= 1:
        return True
    pitch = shape[-1] if dense else L.pitch(shape)
    return lengths[1] == shape[1] == pitch


def _contiguous(counts: list, shape: list) -> bool:
    """Whether a region of these per-dimension counts is one contiguous run of a row-major tensor of `shape`."""
    outer = next((d for d, n in enumerate(counts) if n > 1), len(counts))
    return all(counts[d] == shape[d] for d in range(outer + 1, len(shape)))


def segment_bytes(nseg: int, size: int, step: int, gran: int, write: bool) -> float:
    """GDRAM bytes of `nseg` segments of `size` bytes whose starts fall on a grid of `step` bytes (a divisor of
    `gran`), averaged over the offsets on the granule grid: the granules each touches, plus (`write`) one read
    again per partially written granule."""
    offsets = range(0, gran, step)
    touched = sum(-(-(o + size) // gran) for o in offsets) / len(offsets)
    extra = 0.0
    if write:
        extra = sum(((o % gran != 0) + ((o + size) % gran != 0)) if -(-(o + size) // gran) > 1 else
                    ((o % gran != 0) or ((o + size) % gran != 0)) for o in offsets) / len(offsets)
    return nseg * (touched + extra) * gran


def extents(r: ir.Ref, t: ir.TensorType, env: dict) -> list[int]:
    """Elements per dimension of the region `r` (an index: 1; a full tensor reference: its shape)."""
    if not r.index:
        return [d if isinstance(d, int) else 1 for d in t.shape]
    out = []
    for i in r.index:
        if isinstance(i, ir.Slice):
            a, b = int_value(i.start, env), int_value(i.stop, env)
            out.append(0 if a is None or b is None else max(0, -(-(b - a) // max(1, i.step))))
        else:
            out.append(1)
    return out


def int_value(e, env: dict) -> int | None:
    try:
        return eval_int(e, env)
    except (KeyError, ValueError, TypeError):
        return None


_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def truth(e, env: dict) -> bool | None:
    if isinstance(e, ir.BinOp) and e.op in _CMP:
        a, b = int_value(e.lhs, env), int_value(e.rhs, env)
        return None if a is None or b is None else _CMP[e.op](a, b)
    if isinstance(e, ir.BinOp) and e.op in ("and", "or"):
        a, b = truth(e.lhs, env), truth(e.rhs, env)
        if a is None or b is None:
            return None
        return (a and b) if e.op == "and" else (a or b)
    if isinstance(e, ir.UnOp) and e.op == "not":
        a = truth(e.operand, env)
        return None if a is None else not a
    v = int_value(e, env)
    return None if v is None else v != 0


def extent_vars(s) -> set[str]:
    """The index variables the extents of the regions of a compute or a move depend on: those of slices whose
    length is not a constant, of a compute's value outside its regions, none of a slice `a .. a + n` or a point."""
    out: set[str] = set()
    refs = [s.dst, s.src] if isinstance(s, ir.Move) else \
        [s.target] + [x for x in walk(s.value) if isinstance(x, ir.Ref)]
    for r in refs:
        for i in r.index:
            if isinstance(i, ir.Slice) and not _const_length(i) and slice_extent(i.start, i.stop) is None:
                out |= free_vars(i.start) | free_vars(i.stop)
    if isinstance(s, ir.Assign):   # (values outside the regions: scalars of the control thread)
        out |= {x.name for x in walk(s.value) if isinstance(x, ir.Var)} - \
            {v for r in refs[1:] for i in r.index for v in free_vars(i)}
    return out


def _const_length(i: ir.Slice) -> bool:
    a, b = to_affine(i.start), to_affine(i.stop)
    return a is not None and b is not None and (b - a).is_const


def tasks_of(body: tuple, env: dict, out: list, outer: tuple = ()) -> None:
    """(index environment, body) of every task: the points of the @cluster / @core parallel loops. Statements of
    an outer level (a cluster's SRAM loads before its cores start) are counted in each task under it: its cores
    wait for them."""
    pars = [s for s in body if isinstance(s, ir.Parallel) and s.level in (ir.ParLevel.cluster, ir.ParLevel.core)]
    rest = outer + tuple(s for s in body if not isinstance(s, ir.Alloc) and s not in pars)
    if not pars:
        if rest:
            out.append((env, rest))
        return
    for p in pars:
        for v in range(eval_int(p.lo, env), eval_int(p.hi, env)):
            tasks_of(p.body, {**env, p.var: v}, out, rest)
