"""``__memcpy`` / ``__memcpy_async``: checks, the byte copy, GDRAM traffic at segment granularity, and the DMA
event (bytes, resources, latency) handed to the timing model.

Shapes: plain ``(dst, src, size, DIR)`` copies ``size`` bytes. The strided forms add one or two levels
``(dst_stride, src_stride, segnum)`` (strides in bytes): level 0 repeats the ``size``-byte segment ``segnum0+1``
times, level 1 repeats that whole pattern ``segnum1+1`` times (BANG semantics).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .core import CoreCtx
from .errors import MluError, Span
from .lang import DIRECTIONS, GDRAM, SPACE_NAMES, SRAM
from .memory import Ptr, check_range

Level = tuple[int, int, int]  # dst_stride, src_stride, segnum


def memcpy(c: CoreCtx, dst: Ptr, src: Ptr, size: int, direction: str, levels: tuple[Level, ...],
           is_async: bool, span: Span) -> None:
    name = "__memcpy_async" if is_async else "__memcpy"
    dst_space, src_space = DIRECTIONS[direction]
    for ptr, space, role in ((dst, dst_space, "destination"), (src, src_space, "source")):
        if ptr.region.space != space:
            raise MluError(f"{name} {direction}: {role} must point to {SPACE_NAMES[space]}, but "
                           f"'{ptr.region.name}' is in {SPACE_NAMES[ptr.region.space]}")
    if size < 0:
        raise MluError(f"{name}: negative size {size}")
    for dst_stride, src_stride, segnum in levels:
        if dst_stride < 0 or src_stride < 0 or segnum < 0:
            raise MluError(f"{name}: strides and segnum must be non-negative "
                           f"(dst_stride={dst_stride}, src_stride={src_stride}, segnum={segnum})")
    counts = tuple(lv[2] + 1 for lv in reversed(levels)) + (size,)
    dst_strides = tuple(lv[0] for lv in reversed(levels)) + (1,)
    src_strides = tuple(lv[1] for lv in reversed(levels)) + (1,)
    dst_extent = _extent(counts, dst_strides)
    src_extent = _extent(counts, src_strides)
    check_range(dst, dst_extent, f"{name} destination")
    check_range(src, src_extent, f"{name} source")
    if size and c.values:  # timing-only mode (values=False) moves no data
        _copy(dst, src, counts, dst_strides, src_strides, dst_extent, src_extent)

    m = c.machine
    nseg = math.prod(counts[:-1])
    useful = nseg * size
    stats = c.stats
    stats[f"{src_space}_read_bytes"] += useful
    stats[f"{dst_space}_write_bytes"] += useful
    gran = m.dma_granularity
    flow = 0.0
    if src_space == GDRAM:
        traffic, _ = _gdram_traffic(src, counts, src_strides, nseg, gran, write=False)
        flow += traffic
    if dst_space == GDRAM:
        traffic, rmw = _gdram_traffic(dst, counts, dst_strides, nseg, gran, write=True)
        stats["gdram_rmw_bytes"] += rmw
        flow += traffic + rmw
    if GDRAM in (src_space, dst_space):
        stats["gdram_traffic_bytes"] += flow
        other = dst_space if src_space == GDRAM else src_space
        port = ("m", c.cluster_id) if other == SRAM else ("p", c.task_id)
        resources, latency = (("g",), port), m.gdram_latency_cycles
    elif SRAM in (src_space, dst_space):
        flow = float(useful)
        resources, latency = (("s", c.cluster_id),), m.sram_latency_cycles
    else:
        flow = float(useful)
        resources, latency = (("v", c.task_id),), m.move_latency_cycles
    read = (src.region, src.off, src.off + src_extent)
    write = (dst.region, dst.off, dst.off + dst_extent)
    c.dma(is_async, flow, resources, latency, read, write, f"{name}({direction})", span)


def _extent(counts: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Bytes from the first byte touched to one past the last one."""
    if counts[-1] == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(counts[:-1], strides[:-1])) + counts[-1]


def _strided(ptr: Ptr, counts, strides, extent: int) -> np.ndarray:
    base = ptr.region.data[ptr.off:ptr.off + extent]
    return as_strided(base, shape=counts, strides=strides, writeable=True)


def _copy(dst: Ptr, src: Ptr, counts, dst_strides, src_strides, dst_extent: int, src_extent: int) -> None:
    if len(counts) == 1:
        dst.region.data[dst.off:dst.off + dst_extent] = src.region.data[src.off:src.off + src_extent]
        return
    source = _strided(src, counts, src_strides, src_extent)
    if src.region is dst.region:
        source = source.copy()
    _strided(dst, counts, dst_strides, dst_extent)[...] = source


def _gdram_traffic(ptr: Ptr, counts, strides, nseg: int, gran: int, write: bool) -> tuple[float, float]:
    """``_traffic`` of all segments of a copy. Fast path: when every stride that repeats a segment is a multiple of
    ``gran``, all segments sit alike on the ``gran`` grid, so one segment's traffic times ``nseg`` (exact)."""
    size = counts[-1]
    if size == 0:
        return 0.0, 0.0
    if all(s % gran == 0 or n == 1 for n, s in zip(counts[:-1], strides[:-1])):
        start = ptr.region.addr + ptr.off
        end = start + size
        first, last = start // gran, (end - 1) // gran
        covered = (last - first + 1) * gran * nseg
        if not write:
            return float(covered), 0.0
        head, tail = start % gran != 0, end % gran != 0
        partial = (head or tail) if first == last else head + tail
        return float(covered), float(partial * gran * nseg)
    return _traffic(_segment_starts(ptr, counts, strides), size, gran, write)


def _segment_starts(ptr: Ptr, counts, strides) -> np.ndarray:
    """Absolute start address of every segment."""
    starts = np.array([ptr.region.addr + ptr.off], dtype=np.int64)
    for n, s in zip(counts[:-1], strides[:-1]):
        starts = (starts[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).reshape(-1)
    return starts


def _traffic(starts: np.ndarray, size: int, gran: int, write: bool) -> tuple[float, float]:
    """(bytes moved at ``gran`` granularity, extra read-modify-write bytes) of segments of ``size`` bytes."""
    if size == 0:
        return 0.0, 0.0
    ends = starts + size
    first = starts // gran
    last = (ends - 1) // gran
    covered = float((last - first + 1).sum() * gran)
    if not write:
        return covered, 0.0
    head = (starts % gran) != 0
    tail = (ends % gran) != 0
    partial = np.where(first == last, head | tail, head.astype(np.int64) + tail.astype(np.int64))
    return covered, float(partial.sum() * gran)
