"""Element kinds of operator-layer expressions (for accumulator and register dtypes)."""
from __future__ import annotations

from gir import ir

F32, I32, BOOL = ir.DType.f32, ir.DType.i32, ir.DType.bool


def kind_of(e: ir.Expr, types: dict[str, ir.TensorType]) -> ir.DType:
    """f32 for any float value, i32/i64 for integers, bool for predicates."""
    if isinstance(e, ir.Const):
        return BOOL if isinstance(e.value, bool) else I32 if isinstance(e.value, int) else F32
    if isinstance(e, ir.Var):
        return I32
    if isinstance(e, ir.Ref):
        d = types[e.name].dtype if e.name in types else F32
        return F32 if d.is_float else d
    if isinstance(e, ir.UnOp):
        return BOOL if e.op == "not" else kind_of(e.operand, types)
    if isinstance(e, ir.BinOp):
        if e.op in ("and", "or") or e.op in ir.COMPARISONS:
            return BOOL
        if e.op == "/":
            return F32
        a, b = kind_of(e.lhs, types), kind_of(e.rhs, types)
        return F32 if F32 in (a, b) else (ir.DType.i64 if ir.DType.i64 in (a, b) else I32)
    if isinstance(e, ir.Reduce):
        k = kind_of(e.arg, types)
        return F32 if e.op == "mean" or k in (F32, BOOL) else k
    if isinstance(e, ir.Call):
        if e.fn in ir.CASTS:
            d = ir.DType(e.fn)
            return F32 if d.is_float else d
        if e.fn == "select":
            a, b = kind_of(e.args[1], types), kind_of(e.args[2], types)
            return F32 if F32 in (a, b) else a
        if e.fn in ir.KIND_PRESERVING_FUNCS:
            ks = [kind_of(a, types) for a in e.args]
            return F32 if F32 in ks else ks[0]
        return F32
    return F32
