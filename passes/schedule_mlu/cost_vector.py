"""The vector work of an MLU compute statement, as the cost model (cost.py) counts it: the operand kinds the emitter
makes of @nram regions (`Vec`) and the vector instructions codegen/mlu/vecops.py emits for an expression (`ops`)."""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.walk import map_children, walk
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.workcount import DIV, SPECIAL

_CASTS = {d.value for d in ir.DType}


@dataclass(frozen=True)
class Vec:
    kind: str      # full | row | col | scalar (codegen/mlu/vecops.py)
    length: int    # elements one instruction covers
    rows: int      # rows of the region
    pitch: int     # elements per row of the buffer
    cols: int      # columns of the region
    whole: bool = False   # the region covers every column of its buffer (vecops `_fill_tail`)
    dtype: str = "f32"


def ops(e, dst: Vec, walker, env: dict, out: list) -> None:
    """(cost class, elements, instructions) of the vector work of a compute expression written to `dst`, as
    codegen/mlu/vecops.py emits it: one instruction per operation over dst's length; one per row where a full
    tile meets an [R, 1] operand; a reduction over its operand's length, where the reduced columns do not fill
    the rows (padded pitch) or the vector with the pads given its identity first (layout.tail_start)."""
    if isinstance(e, (ir.Ref, ir.Const, ir.Var)):
        return
    if isinstance(e, ir.Reduce):
        arg = next((x for x in walk(e.arg) if isinstance(x, ir.Ref)), None)
        src = walker.vector(arg) if arg is not None and arg.name in walker.types else dst
        if src.kind == "row" and dst.kind == "scalar":   # vecops: a scalar loop over the rows
            out.append(("scalar-loop", src.rows, 1))
            return
        masked = (src.kind == "full" and e.axes == (1,) and src.cols != src.pitch) or \
            (src.kind == "col" and src.cols < src.length)
        rows, span = (src.rows, src.pitch) if src.kind == "full" else (1, src.length)
        start = L.tail_start(rows, span, src.cols, src.length, src.dtype, src.whole) if masked else None
        if start is not None:   # a select per row over the units holding the pads
            out.append(("simple", rows * (span - start), rows))
        elif masked:   # a fill and a select of the whole tile
            out += [("simple", src.length, 1), ("simple", src.length, 1)]
        out.append(("reduce", src.length, 1))
        map_children(e, lambda x: ops(x, src, walker, env, out) or x)
        return
    per = dst.rows if dst.kind == "full" and any(_row_vector(x, walker.types) for x in _children(e)) else 1
    if isinstance(e, ir.Call):
        cls = "convert" if e.fn in _CASTS else "special" if e.fn in SPECIAL else "div" if e.fn in DIV else "simple"
    else:
        cls = "div" if getattr(e, "op", "") in DIV and not _reciprocal(e, dst, walker) else "simple"
    n = dst.length if per == 1 else dst.rows * dst.pitch
    if cls == "convert":   # a narrowing cast: the vector units of its wider source (targets/mlu/vector.py `finish`)
        n = n * _narrowing(e, dst, walker)
    out.append((cls, n, per))
    map_children(e, lambda x: ops(x, dst, walker, env, out) or x)


def _reciprocal(e, dst: Vec, walker) -> bool:
    """`a / b` emitted as a multiply by b's reciprocal, a simple-class op (codegen/mlu/vecops.py `_scalar_form`,
    `_per_row`): b a single value, or a per-row statistic dividing a full tile, in a kernel that need not divide
    exactly (exactdiv.py)."""
    if e.op != "/" or walker.exact:
        return False

    def kind(x) -> str:   # (a sub-expression is evaluated into a tile of dst's kind)
        if isinstance(x, ir.Ref) and x.name in walker.types:
            return walker.vector(x).kind
        return "scalar" if isinstance(x, (ir.Const, ir.Var)) else dst.kind
    a, b = kind(e.lhs), kind(e.rhs)
    return b == "scalar" or (a == "full" and b == "row")


def _narrowing(e: ir.Call, dst: Vec, walker) -> int:
    """How many times wider a cast's source element is than its result's on the device (1 when not narrower):
    f32 to bf16 moves the units of the f32 operand. (A source that is not a tile of its own -- a sub-expression
    -- is taken as wide as the result.)"""
    arg = e.args[0] if e.args else None
    if not isinstance(arg, ir.Ref) or arg.name not in walker.types:
        return 1
    return max(1, L.device_nbytes(walker.types[arg.name][0].dtype) // L.device_nbytes(dst.dtype))


def _children(e) -> list:
    kids: list = []
    map_children(e, lambda x: kids.append(x) or x)
    return kids


def _row_vector(x, types: dict) -> bool:
    """An [R, 1] tile operand (a per-row statistic)."""
    if not isinstance(x, ir.Ref) or x.name not in types:
        return False
    shape = types[x.name][0].shape
    return len(shape) >= 2 and shape[-1] == 1
