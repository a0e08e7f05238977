"""Element kinds of operator-layer expressions (for accumulator and register dtypes)."""
from __future__ import annotations

from gir import ir

F32, F64, I32, BOOL = ir.DType.f32, ir.DType.f64, ir.DType.i32, ir.DType.bool


def compute_dtype(d: ir.DType) -> ir.DType:
    """The type a stored element is computed in: f64 stays f64, other floats widen to (or stay) f32."""
    return (F64 if d == F64 else F32) if d.is_float else d


def _float(*ks: ir.DType) -> ir.DType:
    """The float type of an operation with these operand kinds: f64 if any operand is f64, else f32."""
    return F64 if F64 in ks else F32


def kind_of(e: ir.Expr, types: dict[str, ir.TensorType]) -> ir.DType:
    """f32 for a float value (f64 for one computed from an f64 operand), i32/i64 for integers, bool for
    predicates."""
    if isinstance(e, ir.Const):
        return BOOL if isinstance(e.value, bool) else I32 if isinstance(e.value, int) else F32
    if isinstance(e, ir.Var):
        return I32
    if isinstance(e, ir.Ref):
        return compute_dtype(types[e.name].dtype) if e.name in types else F32
    if isinstance(e, ir.UnOp):
        return BOOL if e.op == "not" else kind_of(e.operand, types)
    if isinstance(e, ir.BinOp):
        if e.op in ("and", "or") or e.op in ir.COMPARISONS:
            return BOOL
        a, b = kind_of(e.lhs, types), kind_of(e.rhs, types)
        if e.op == "/" or a.is_float or b.is_float:
            return _float(a, b)
        return ir.DType.i64 if ir.DType.i64 in (a, b) else I32
    if isinstance(e, ir.Reduce):
        k = kind_of(e.arg, types)
        if e.op in ir.ARG_REDUCTIONS:
            return I32
        return _float(k) if e.op == "mean" or k.is_float or k == BOOL else k
    if isinstance(e, ir.Call):
        if e.fn in ir.CASTS:
            return compute_dtype(ir.DType(e.fn))
        ks = [kind_of(a, types) for a in e.args]
        if e.fn == "select":
            a, b = ks[1], ks[2]
            return _float(a, b) if a.is_float or b.is_float else a
        if e.fn in ir.KIND_PRESERVING_FUNCS:
            return _float(*ks) if any(k.is_float for k in ks) else ks[0]
        return _float(*ks)
    return F32
