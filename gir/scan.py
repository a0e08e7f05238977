"""Scans (cumulative operations) of the operator layer: `y[i, j] = cumsum(E, j)`.

A scan is written as a call whose second argument names the scan axis, an index variable of the left-hand side,
with ONNX CumSum's two flags as keywords: `cumsum(x[i, j], j, exclusive=1, reverse=1)`. In the IR it is a
`Call(fn, (E, Var(axis), Const(exclusive), Const(reverse)))` (both flags always present, 0 or 1), so every
expression walker sees its operand; the printer writes the keyword form back (flags that are 0 are omitted).

Meaning, along the scan axis j of extent N, for every point of the other axes (op: + * max min):
  inclusive        y[j] = E[0] op E[1] op ... op E[j]
  exclusive        y[j] = E[0] op ... op E[j-1]            (y[0] = the identity: 0, 1, -inf, +inf)
  reverse          y[j] = E[j] op E[j+1] op ... op E[N-1]
  reverse+exclusive y[j] = E[j+1] op ... op E[N-1]          (y[N-1] = the identity)
A scan is the whole right-hand side of its statement (compose it with other statements), its operand holds no
reduction or scan, and it takes numeric operands (not bool). Floating-point scans accumulate in f32 or wider,
as reductions do; integer scans keep the integer kind (i32, or i64 with an i64 operand).
"""
from __future__ import annotations

import numpy as np

from gir import ir
from gir.errors import DiagnosticCollector, GirError

SCANS = ("cumsum", "cumprod", "cummax", "cummin")
SCAN_ARITY = 4           # operand, axis, exclusive, reverse
FLAGS = ("exclusive", "reverse")
COMBINE = {"cumsum": "+", "cumprod": "*", "cummax": "max", "cummin": "min"}


def identity(op: str, is_float: bool = True, dtype=None):
    """The value an exclusive scan starts from (and what a masked element contributes)."""
    if op == "cumsum":
        return 0.0 if is_float else 0
    if op == "cumprod":
        return 1.0 if is_float else 1
    if is_float:
        return float("-inf") if op == "cummax" else float("inf")
    info = np.iinfo(dtype or np.int32)
    return int(info.min) if op == "cummax" else int(info.max)


class ScanParts:
    """The pieces of a scan call."""

    def __init__(self, call: ir.Call):
        self.call = call
        self.op = call.fn
        self.arg = call.args[0]
        self.axis = call.args[1].name
        self.exclusive = bool(call.args[2].value)
        self.reverse = bool(call.args[3].value)

    def form(self) -> str:
        words = [w for w, on in (("exclusive", self.exclusive), ("reverse", self.reverse)) if on]
        return " ".join(words) or "inclusive"


def is_scan(e) -> bool:
    return isinstance(e, ir.Call) and e.fn in SCANS


def scan_of(value) -> ScanParts | None:
    """The scan of a statement whose whole right-hand side is a scan, else None."""
    return ScanParts(value) if is_scan(value) else None


def make_scan(fn: str, positional: list, kwargs: list, loc) -> ir.Call:
    """The parser's constructor: `cumsum(E, j[, exclusive=0|1][, reverse=0|1])`."""
    if len(positional) != 2 or not isinstance(positional[1], ir.Var):
        raise GirError(f"{fn}() takes an operand and the name of the scan axis, e.g. {fn}(x[i, j], j)", loc,
                       ["flags are keywords: exclusive=1, reverse=1"])
    flags = {"exclusive": 0, "reverse": 0}
    seen: set[str] = set()
    for key, value, kloc in kwargs:
        if key in seen:
            raise GirError(f"keyword '{key}' given twice in {fn}()", kloc)
        if key not in flags:
            raise GirError(f"unexpected keyword '{key}' in {fn}()", kloc, ["scans take exclusive=0|1 and reverse=0|1"])
        if len(value) != 1 or value[0] not in (0, 1):
            raise GirError(f"keyword '{key}' of {fn}() takes 0 or 1", kloc)
        seen.add(key)
        flags[key] = value[0]
    return ir.Call(fn, (positional[0], positional[1], ir.Const(flags["exclusive"]), ir.Const(flags["reverse"])),
                   loc=loc)


def format_scan(call: ir.Call, fmt) -> str:
    """The printer's form (`fmt` formats a sub-expression)."""
    p = ScanParts(call)
    text = f"{fmt(p.arg)}, {p.axis}"
    for key, on in (("exclusive", p.exclusive), ("reverse", p.reverse)):
        if on:
            text += f", {key}=1"
    return f"{p.op}({text})"


def check_scan_stmt(s: ir.Assign, out_vars: list[str], diag: DiagnosticCollector) -> bool:
    """Located errors for misplaced scans; True when the statement is fine as far as scans go."""
    from gir.walk import walk
    ok = True
    top = s.value if is_scan(s.value) else None
    for x in walk(s.value):
        if not is_scan(x):
            continue
        if x is not top:
            diag.error(f"{x.fn}() must be the whole right-hand side of its statement", x.loc,
                       f"assign the scan to an intermediate, e.g. c[...] = {x.fn}(...), and use c")
            ok = False
            continue
        if len(x.args) != SCAN_ARITY:
            diag.error(f"{x.fn}() takes an operand and the name of the scan axis", x.loc)
            ok = False
            continue
        axis = x.args[1]
        if axis.name not in out_vars:
            diag.error(f"the scan axis '{axis.name}' is not an index of the left-hand side "
                       f"{s.target.name}[{', '.join(out_vars)}]", axis.loc,
                       "a scan keeps its axis: write it on the left, e.g. y[i, j] = cumsum(x[i, j], j)")
            ok = False
        for y in walk(x.args[0]):
            if isinstance(y, ir.Reduce) or is_scan(y):
                what = f"{y.op}()" if isinstance(y, ir.Reduce) else f"{y.fn}()"
                diag.error(f"the operand of {x.fn}() may not hold a reduction or scan ({what})", y.loc,
                           "compute it in its own statement first")
                ok = False
                break
    return ok


def evaluate_scan(op: str, x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """The numpy meaning (the evaluator's oracle)."""
    if reverse:
        x = np.flip(x, axis)
    ufunc = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum, "cummin": np.minimum}[op]
    with np.errstate(over="ignore", invalid="ignore"):
        y = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    if exclusive:
        is_float = x.dtype.kind == "f"
        ident = np.asarray(identity(op, is_float, x.dtype if not is_float else None), dtype=x.dtype)
        pad = np.broadcast_to(ident, tuple(1 if k == axis else n for k, n in enumerate(x.shape)))
        y = np.concatenate([pad, np.take(y, np.arange(x.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(y, axis) if reverse else y
