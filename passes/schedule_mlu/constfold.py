"""Operations of the row and tile models whose operands are all constants, folded to one constant.

The models refused them ("a constant expression": a vector op needs a tensor operand), so a statement such as
`y = (x - s[]) * (2.0 + 3.3)` or `x * (f16(x) + neg(1.25))` ran as a scalar kernel (78 ms for a whole min over
305 x 257 floats). The value is computed as the vector unit would compute it -- in f32, with the evaluator's
definition of each builtin (gir/evaluate.py) -- and rounded to f16 / bf16 where the model rounds (`r16`,
`rbf16`). A result that is not finite is not folded (the refusal stands).
"""
from __future__ import annotations

import numpy as np

from gir import ir
from gir.evaluate import UNARY_FLOAT

F32 = np.float32
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
          "min": np.minimum, "pow": np.power, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
          "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def fold(fn: str, values: list[float]) -> float | None:
    """fn(values) as one f32 constant (a float), or None when fn is not foldable here or the result is not
    finite."""
    x = [F32(v) for v in values]
    with np.errstate(all="ignore"):
        if fn in BINARY and len(x) == 2:
            out = BINARY[fn](x[0], x[1])
        elif fn in UNARY_FLOAT and len(x) == 1:
            out = UNARY_FLOAT[fn](x[0])
        elif fn in ("neg", "abs") and len(x) == 1:
            out = -x[0] if fn == "neg" else abs(x[0])
        elif fn in ("copy", "f32") and len(x) == 1:
            out = x[0]
        elif fn in ("r16", "rbf16") and len(x) == 1:
            out = np.asarray(x[0]).astype(ir.DType.f16.numpy if fn == "r16" else ir.DType.bf16.numpy)
        elif fn == "select" and len(x) == 3:
            out = x[1] if x[0] != 0 else x[2]
        else:
            return None
        out = float(np.asarray(out).astype(F32))
    return out if np.isfinite(out) else None
