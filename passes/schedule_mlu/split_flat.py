"""A one-dimensional function seen as rows: `x: f32[N]` viewed as `[R, C]` (R x C = N) for the MLU schedule.

The MLU recipes map rows and tiles of two or more axes; a function whose tensors are vectors of one length
(`y[i] = exp(x[i]) * 2.0`, a softmax or a normalisation of a whole vector: `s[] = sum(x[i])`, `y[i] = x[i] /
s[]`) matched none and ran as scalar kernels, 1,225x the DMA roofline for an element-wise statement over 1M
floats. Every vector of the function is the same row-major memory as a matrix [R, C]: the schedule views each
parameter and result `as [R, C]` (a reshape view, gir/views.py: no data movement), gives each statement a second
index variable next to the one that walks the vector (`x[i]` -> `x[i, i_c]`, a reduction over i reduces over
both), and the recipes map the matrix -- element-wise tiles on every core, whole-vector reductions as
reductions over both axes.

C is the largest divisor of N in [32, MAX_COLS] that is a multiple of 32 (whole 128-byte vectors of f32), else the
largest divisor in that range; without one (a prime N, twice a prime) the vector is one row [1, N], and when no
recipe takes that row (a reduction over a row too long for NRAM) the function is scheduled as it is
(schedule.py retries without the view). A vector already viewed (`x: f32[1, N]
as [N]`) is viewed again from its declared type. Applies when every tensor of the function is a scalar or a vector
of one length N >= MIN_N, every access to a vector is a plain index variable (no `x[i + 1]`, no reversal), and no
index variable is used as a value; it leaves scans to the scan kernels and integer vectors to their exact 1-D
kernels. Not inside a segment of a split or a
statement of the op-by-op baseline (their callers declare the tensors unviewed): the whole function only.
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.builtin.exprs import refs, value_vars_of
from gir.scan import is_scan
from gir.walk import map_expr, walk

MAX_COLS = 4096
MIN_COLS = 32
MIN_N = 64


def split_flat(func: ir.Func, types: dict[str, ir.TensorType]) -> ir.Func:
    """`func` (sizes specialised) with its vectors viewed as [R, C], or `func` itself when it does not apply."""
    n = _length(func, types)
    if n is None:
        return func
    cols = _columns(n)
    rows = n // cols
    taken = {x.name for s in func.body if isinstance(s, ir.Assign)
             for e in (s.target, s.value) for x in walk(e) if isinstance(x, ir.Var)}

    def fresh(v: str) -> str:
        name = f"{v}_c"
        while name in taken:
            name += "_"
        return name
    body = []
    for s in func.body:
        if not isinstance(s, ir.Assign):
            body.append(s)
            continue

        def two(r, s=s):
            if not isinstance(r, ir.Ref) or len(types[r.name].shape) != 1:
                return r
            v = r.index[0]
            return dataclasses.replace(r, index=(v, ir.Var(fresh(v.name), loc=v.loc)))
        body.append(dataclasses.replace(s, target=two(s.target), value=map_expr(s.value, two)))

    def viewed(p: ir.Param) -> ir.Param:
        if len(p.type.shape) != 1:
            return p
        inner = ir.TensorType(p.type.dtype, (rows, cols), loc=p.type.loc)
        outer = p.view.outer if p.view is not None else p.type   # (a view of a view: the declared type's)
        return dataclasses.replace(p, type=inner, view=ir.View(outer, (ir.Const(rows), ir.Const(cols)), loc=p.loc))
    return dataclasses.replace(func, params=tuple(viewed(p) for p in func.params),
                               results=tuple(viewed(p) for p in func.results), body=tuple(body))


def _length(func: ir.Func, types: dict) -> int | None:
    """N when every tensor is a scalar or a vector of length N >= MIN_N accessed at plain index variables that are
    never values, every tensor is a float and no statement is a scan; else None."""
    if any(not t.dtype.is_float for t in types.values()):
        return None   # (integer vectors keep their exact 1-D kernels: the tile recipes compute in f32)
    lengths = {t.shape[0] for t in types.values() if len(t.shape) == 1}
    if len(lengths) != 1 or any(len(t.shape) > 1 for t in types.values()):
        return None
    n = lengths.pop()
    if not isinstance(n, int) or n < MIN_N:
        return None
    for s in func.body:
        if not isinstance(s, ir.Assign):
            continue
        if is_scan(s.value) or value_vars_of(s.value):
            return None
        for r in [s.target] + refs(s.value):
            if len(types[r.name].shape) == 1 and not isinstance(r.index[0], ir.Var):
                return None
    return n


def _columns(n: int) -> int:
    """C: the largest divisor of n in [MIN_COLS, MAX_COLS] leaving two rows or more, a multiple of 32 if one is;
    else n (one row: narrow rows such as [524287, 2] ran 20x the roofline, one row is vectorised)."""
    divisors = [c for c in range(min(n // 2, MAX_COLS), MIN_COLS - 1, -1) if n % c == 0]
    aligned = [c for c in divisors if c % 32 == 0]
    return aligned[0] if aligned else divisors[0] if divisors else n
