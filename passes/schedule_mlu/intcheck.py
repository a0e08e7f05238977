"""Integers the MLU computes on in f32 vector tiles: said with a located remark, never in silence.

The vector schedules (row model, tile recipe) widen i32 tiles to f32 (`t = f32(t_h)`, `__bang_int322float`)
and narrow results back (`r_h = i32(r)`, `__bang_float2int32`): exact while every value and partial result stays
below 2^24 in magnitude (docs/mlu.md, known gaps). A program whose kernels widen integer tiles gets one remark
naming its integer inputs; results narrowed from float work (argmax positions, compares) are exact and not
reported, nor are scalar kernels and i32 scans, which compute in int (exact, wrapping as numpy).
"""
from __future__ import annotations

from gir import ir
from gir.walk import walk_stmts

INTS = (ir.DType.i32, ir.DType.i64)


def widens_integers(f: ir.Func) -> bool:
    """Whether a kernel of the scheduled `f` widens an integer tile to f32 (integer values computed on in f32;
    positions and compare results narrowed to i32 are exact: below 2^24 for any tile that fits)."""
    stmts = [s for k in f.body if isinstance(k, ir.Kernel) for s in walk_stmts(k.body)]
    types = {s.name: s.type.dtype for s in stmts if isinstance(s, ir.Alloc)}
    for s in stmts:
        if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Call) and len(s.value.args) == 1
                and isinstance(s.value.args[0], ir.Ref)):
            continue
        if s.value.fn == "f32" and types.get(s.value.args[0].name) in INTS:
            return True
    return False


def integer_remark(func: ir.Func, scheduled: ir.Func, remarks) -> None:
    if remarks is None or not widens_integers(scheduled):
        return
    from gir.passes.remarks import Remark
    names = [p.name for p in func.params if p.type.dtype in INTS]
    what = f"integer tensors {', '.join(repr(n) for n in names)}" if names else "integer values"
    remarks.append(Remark("schedule-mlu", "missed", f"'{func.name}': {what} are computed on in f32 vector tiles "
                          "on the MLU: exact while every value and partial result stays below 2^24 in magnitude",
                          func.loc))
