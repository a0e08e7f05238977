"""Physical NRAM layout rules shared by the MLU scheduler (capacity budgeting) and the BANG-C emitter.

A 2-D tile `[R, C]` is stored row-major with a pitch of `C` rounded up to 64 elements, so every row spans whole
128-byte vector units for 16- and 32-bit types. When `C` is not a multiple of 64, the rows are padded to a multiple
of 64 elements and row reductions give the pad columns the reduction's identity first: in place, one select per row
over the 128-byte units that hold the pads (`tail_start`), or, where that costs more (many short rows), a select of
the whole tile through a kernel-wide column mask into a scratch tile. A `[R, 1]` tile is a per-row vector of `R`
values. 1-D tiles are padded to 64 elements.
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


def tail_start(rows: int, span: int, cols: int, length: int, dtype: str, whole: bool) -> int | None:
    """Where a reduction over `rows` rows of `span` elements, of which the first `cols` are real, gives the pads
    its identity in place: the first element of the 128-byte unit holding the first pad (one select per row from
    there to the row's end, through two small constant vectors); None where the emitter selects the whole tile of
    `length` elements instead (a fill and a select into scratch tiles): when that is cheaper at the machine's
    per-instruction cost, or when the pads are not free to overwrite (`whole`: the region covers every column of
    its buffer, so the columns past it are padding no one reads) or the tile is not f32. A 1-D vector is one row
    (in place always pays there). The costs are MLU370's: the emitter knows no other machine, and the cost model
    mirrors the emitter's choice."""
    if cols >= span or not whole or str(dtype) != "f32":
        return None
    from gir.passes.machines import MLU370
    unit = VECTOR_ALIGN // 4
    start = cols // unit * unit
    per_op, per_unit = MLU370.vector_op_cycles, MLU370.op_class_cycles("simple")
    in_place = rows * (per_op + (span - start) // unit * per_unit)
    whole_tile = 2 * (per_op + round_up(length, unit) // unit * per_unit)
    return start if in_place < whole_tile else None


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
