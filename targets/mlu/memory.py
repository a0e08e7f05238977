"""Memory of the simulated chip: regions (one per GDRAM argument or on-chip buffer), typed pointers into them,
static allocation of on-chip buffers, and the checked views every access goes through.

A region owns a numpy ``uint8`` array; a pointer is (region, byte offset, element type). Reinterpreting casts
(``(half*)buf``) only change the element type. Every access is checked against the region the pointer was derived
from, so running off the end of one buffer into the next is an error even though the addresses are contiguous.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import MluError, Span
from .lang import GDRAM, SPACE_NAMES, ElemType


class Region:
    """A contiguous piece of one memory space. ``addr`` is its (virtual) address, used for alignment checks."""

    __slots__ = ("name", "space", "data", "addr", "uid", "size")
    _next_uid = 0

    def __init__(self, name: str, space: str, data: np.ndarray | None, addr: int, size: int | None = None):
        self.name = name
        self.space = space
        self.data = data  # None in timing-only mode (``size`` bytes, no values)
        self.addr = addr
        self.size = data.size if size is None else size
        Region._next_uid += 1
        self.uid = Region._next_uid

    def describe(self) -> str:
        kind = "argument" if self.space == GDRAM else "buffer"
        return f"{SPACE_NAMES[self.space]} {kind} '{self.name}' ({self.size} bytes)"


class Ptr:
    """A typed pointer: ``off`` is in bytes from the start of ``region``."""

    __slots__ = ("region", "off", "elem")

    def __init__(self, region: Region, off: int, elem: ElemType):
        self.region = region
        self.off = off
        self.elem = elem

    def add(self, elements: int) -> "Ptr":
        return Ptr(self.region, self.off + elements * self.elem.itemsize, self.elem)

    def cast(self, elem: ElemType) -> "Ptr":
        return Ptr(self.region, self.off, elem)

    @property
    def space(self) -> str:
        return self.region.space

    def describe(self) -> str:
        return f"{self.region.name}+{self.off}B"


def check_range(ptr: Ptr, nbytes: int, what: str) -> None:
    """Raise unless bytes [off, off+nbytes) lie inside the pointer's region."""
    region = ptr.region
    if ptr.off < 0 or ptr.off + nbytes > region.size:
        raise MluError(f"{what} accesses bytes [{ptr.off}, {ptr.off + nbytes}) of {region.describe()}: "
                       f"out of bounds")


def view(ptr: Ptr, count: int, what: str, elem: ElemType | None = None) -> np.ndarray:
    """A checked numpy view of ``count`` elements at ``ptr`` (as ``elem``, default the pointer's type)."""
    elem = ptr.elem if elem is None else elem
    nbytes = count * elem.itemsize
    if count < 0:
        raise MluError(f"{what}: negative element count {count}")
    check_range(ptr, nbytes, what)
    return ptr.region.data[ptr.off:ptr.off + nbytes].view(elem.dtype)


@dataclass(frozen=True)
class BufferDecl:
    """One on-chip buffer of a kernel: where it was declared, its size, and its offset in its space."""

    name: str
    space: str
    elem: ElemType
    count: int
    offset: int
    span: Span

    @property
    def nbytes(self) -> int:
        return self.count * self.elem.itemsize


def layout(decls: list[tuple[str, str, ElemType, int, Span]], align: int) -> list[BufferDecl]:
    """Give each declared buffer an offset in its space: in declaration order, each at a multiple of ``align``."""
    next_free: dict[str, int] = {}
    out = []
    for name, space, elem, count, span in decls:
        offset = _round_up(next_free.get(space, 0), align)
        out.append(BufferDecl(name, space, elem, count, offset, span))
        next_free[space] = offset + count * elem.itemsize
    return out


def check_capacity(buffers: list[BufferDecl], capacities: dict[str, int]) -> None:
    """Raise at the first declaration that does not fit in its space."""
    for buf in buffers:
        end = buf.offset + buf.nbytes
        capacity = capacities[buf.space]
        if end > capacity:
            used = [b for b in buffers if b.space == buf.space and b.offset <= buf.offset]
            listing = ", ".join(f"{b.name}={b.nbytes}" for b in used)
            raise MluError(
                f"{SPACE_NAMES[buf.space]} overflow: buffer '{buf.name}' ends at byte {end} but "
                f"{SPACE_NAMES[buf.space]} has {capacity} bytes",
                buf.span, (f"buffers so far (bytes, each aligned): {listing}",))


def _round_up(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def gdram_region(name: str, array: np.ndarray, addr: int) -> Region:
    """A GDRAM region holding a private copy of ``array``'s bytes."""
    data = np.ascontiguousarray(array).reshape(-1).copy().view(np.uint8)
    return Region(name, GDRAM, data, addr)


def gdram_region_shape(name: str, nbytes: int, addr: int) -> Region:
    """A GDRAM region of ``nbytes`` bytes without values (timing-only mode)."""
    return Region(name, GDRAM, None, addr, nbytes)


def onchip_region(buf: BufferDecl, base_addr: int, fill: int = 0xA5, values: bool = True) -> Region:
    """A fresh on-chip buffer; its bytes start as garbage (0xA5), not zeros, as on hardware.
    With ``values=False`` (timing-only mode) it has a size but no bytes."""
    if not values:
        return Region(buf.name, buf.space, None, base_addr + buf.offset, buf.nbytes)
    data = np.full(buf.nbytes, fill, dtype=np.uint8)
    return Region(buf.name, buf.space, data, base_addr + buf.offset)
