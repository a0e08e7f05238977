"""CumSum as a GIR scan: `y[i, j] = cumsum(x[i, j], j, exclusive=1, reverse=1)` (docs/gir.md, "Scans").

The axis is a constant input (an initializer or a folded Constant; negative counts from the end), `exclusive`
and `reverse` are CumSum's attributes, passed through as the scan's flags. The scan is the whole right-hand
side of its statement, so a CumSum always defines one (reading its operand, a stored tensor or a view of one).
Along an axis of extent 1 there is nothing to accumulate: the inclusive sum is the input itself, the exclusive
one the constant 0.
"""
from __future__ import annotations

import onnx
from gir import ir
from gir.onnx.build import FunctionBuilder, Index, Unsupported, Value, literal
from gir.onnx.model import attributes
from gir.onnx.ops import lowers


@lowers("CumSum", data=(0,))
def _cumsum(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    if x.dtype == ir.DType.bool:
        raise Unsupported("CumSum of booleans is not an ONNX operation", "dtype")
    given = b.const_input(node, 1, "axis")
    if given is None or given.size != 1:
        raise Unsupported("CumSum needs one axis (a constant scalar or 1-element tensor)", "attribute")
    axis = int(given.reshape(-1)[0])
    if not -x.rank <= axis < x.rank:
        raise Unsupported(f"CumSum axis {axis} is out of range for rank {x.rank}", "attribute")
    axis %= x.rank
    attrs = attributes(node)
    exclusive, reverse = int(attrs.get("exclusive", 0)), int(attrs.get("reverse", 0))
    if exclusive not in (0, 1) or reverse not in (0, 1):
        raise Unsupported(f"CumSum flags must be 0 or 1 (exclusive={exclusive}, reverse={reverse})", "attribute")
    out = node.output[0]
    if x.shape[axis] == 1:  # one element along the axis: itself, or nothing (the identity) when exclusive
        zero = literal(0, x.dtype)
        b.bind(out, Value(x.dtype, x.shape, lambda idx: zero, scalar=zero.value) if exclusive else x)
        return

    def body(idx: Index) -> ir.Expr:
        return ir.Call("cumsum", (x.read(idx), idx[axis], ir.Const(exclusive), ir.Const(reverse)))
    b.define(out, x.dtype, x.shape, body)
