"""Integers the MLU computes on in f32 vector tiles: said with a located remark, never in silence.

The vector schedules (row model, tile recipe) widen i32 tiles to f32 (`t = f32(t_h)`, `__bang_int322float`)
and narrow results back (`r_h = i32(r)`, `__bang_float2int32`): exact while every value and partial result stays
below 2^24 in magnitude (docs/mlu.md, known gaps). A program whose kernels widen integer tensors gets one remark
naming them (the tensors loaded into the widened tiles). Not reported: a widened tile only compared with values
that are not widened integers (a class label against a column index: a rounded value of 2^24 or more never
equals, nor orders differently against, one below 2^24) or used as a gathered column's index, results narrowed
from float work (argmax positions, compares), and integer tensors the source itself reads through `f32(...)`
(the reference rounds them alike).
Scalar kernels and i32 scans compute in int (exact; a scalar kernel's overflow of int is an error).
"""
from __future__ import annotations

from gir import ir
from gir.walk import walk, walk_stmts

INTS = (ir.DType.i32, ir.DType.i64)


def widened_tensors(f: ir.Func) -> list[str]:
    """The tensors whose integer tiles a kernel of the scheduled `f` widens to f32 and computes on."""
    out: list[str] = []
    for k in f.body:
        if not isinstance(k, ir.Kernel):
            continue
        stmts = list(walk_stmts(k.body))
        types = {s.name: s.type.dtype for s in stmts if isinstance(s, ir.Alloc)}
        source = {s.dst.name: s.src.name for s in stmts if isinstance(s, ir.Move)}
        source.update((s.target.name, s.value.name) for s in stmts   # (a copy between tiles)
                      if isinstance(s, ir.Assign) and isinstance(s.value, ir.Ref) and s.target.name not in source)
        widened = {k: (s.target.name, s.value.args[0].name) for k, s in enumerate(stmts)
                   if isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and s.value.fn == "f32"
                   and len(s.value.args) == 1 and isinstance(s.value.args[0], ir.Ref)
                   and types.get(s.value.args[0].name) in INTS}
        tiles = {t for t, _ in widened.values()}
        for k, (tile, land) in widened.items():
            if _computed_on(tile, tiles, stmts[k + 1:]):
                name = land
                for _ in range(4):   # through a staging buffer (SRAM) to the tensor
                    name = source.get(name, name)
                if name not in out:
                    out.append(name)
    return out


def _computed_on(tile: str, widened: set, stmts: list) -> bool:
    """The widened value in `tile` is read (by the statements after the widening, up to the first that writes the
    tile again) other than in a compare with a value that is not a widened integer or as a gathered index."""
    for s in stmts:
        if not isinstance(s, ir.Assign):
            continue
        if any(isinstance(x, ir.Ref) and x.name == tile for x in walk(s.value)) and not _safe_use(s.value, tile,
                                                                                                  widened):
            return True
        if s.target.name == tile:
            return False
    return False


def _safe_use(v, tile: str, widened: set) -> bool:
    """`v` reads `tile` only as a gathered column's index (one of 2^24 or more stays out of range) or in one compare
    with a value that is no widened integer (rounding a value of 2^24 or more never crosses one below it)."""
    def mentions(e, names) -> bool:
        return any(isinstance(y, ir.Ref) and y.name in names for y in walk(e))
    if isinstance(v, ir.Call) and v.fn == "gather_cols" and len(v.args) == 2:
        return isinstance(v.args[1], ir.Ref) and v.args[1].name == tile and not mentions(v.args[0], {tile})
    if isinstance(v, ir.BinOp) and v.op in ir.COMPARISONS:
        sides = [v.lhs, v.rhs]
        mine = [x for x in sides if isinstance(x, ir.Ref) and x.name == tile]
        other = [x for x in sides if not (isinstance(x, ir.Ref) and x.name == tile)]
        return len(mine) == 1 and not mentions(other[0], widened)
    return False


def _cast_reads_only(func: ir.Func, name: str) -> bool:
    """Every read of `name` in the source is the operand of an explicit f32() cast."""
    casts = [x.args[0] for s in func.body if isinstance(s, ir.Assign) for x in walk(s.value)
             if isinstance(x, ir.Call) and x.fn == "f32" and len(x.args) == 1]
    reads = [x for s in func.body if isinstance(s, ir.Assign) for x in walk(s.value)
             if isinstance(x, ir.Ref) and x.name == name]
    return bool(reads) and all(any(r is c for c in casts) for r in reads)


def integer_remark(func: ir.Func, scheduled: ir.Func, remarks) -> None:
    if remarks is None:
        return
    names = [n for n in widened_tensors(scheduled) if not _cast_reads_only(func, n)]
    if not names:
        return
    from gir.passes.remarks import Remark
    remarks.append(Remark("schedule-mlu", "missed", f"'{func.name}': integer tensor(s) "
                          f"{', '.join(repr(n) for n in names)} are computed on in f32 vector tiles on the MLU: "
                          "exact while every value and partial result stays below 2^24 in magnitude", func.loc))
