"""Physical NRAM layout rules shared by the MLU scheduler (capacity budgeting) and the BANG-C emitter.

A 2-D tile `[R, C]` is stored row-major with a pitch of `C` rounded up to 64 elements, so every row spans whole
128-byte vector units for 16- and 32-bit types. When `C` is not a multiple of 64, the rows are padded to a multiple
of 64 elements and row reductions first select the real columns with a kernel-wide column mask tile (pads get the
reduction's identity). A `[R, 1]` tile is a per-row vector of `R` values. 1-D tiles are padded to 64 elements.
"""
from __future__ import annotations

from gir import ir

PITCH = 64
ROW_ALIGN = 32
VECTOR_ALIGN = 128   # bytes: every on-chip buffer starts at a multiple of this (machine.vector_align_bytes)


def device_nbytes(dt: ir.DType | str) -> int:
    """Bytes of one element on the device: i64 tensors are `int` there (codegen/mlu/emit.py, targets/mlu/run.py)."""
    dt = ir.DType(dt)
    return 4 if dt == ir.DType.i64 else dt.nbytes


def round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def is_rowvec(shape: tuple[int, ...]) -> bool:
    return len(shape) == 2 and shape[1] == 1


def pitch(shape: tuple[int, ...]) -> int:
    return round_up(shape[-1], PITCH)


def phys_rows(shape: tuple[int, ...]) -> int:
    if len(shape) != 2 or is_rowvec(shape):
        return 1
    return shape[0]


def phys_elems(shape: tuple[int, ...]) -> int:
    """Elements the emitter allocates for an on-chip buffer of this logical shape."""
    if len(shape) == 0:
        return PITCH
    if is_rowvec(shape):
        return round_up(max(shape[0], ROW_ALIGN), PITCH)
    if len(shape) == 1:
        return round_up(shape[0], PITCH)
    if len(shape) == 2:
        return phys_rows(shape) * pitch(shape)
    from gir.errors import GirError
    raise GirError(f"on-chip tiles have rank <= 2, got {shape}")
