"""A one-dimensional function seen as rows: `x: f32[N]` viewed as `[R, C]` (R x C = N) for the MLU schedule;
likewise tensors of any rank, all of one shape (`any_rank`).

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
index variable is used as a value (as one row, `one_row`, it may be: it is the column's, the row being 0 -- the
lowering of `k[] = argmax(v[i])`); it leaves scans to the scan kernels and integer vectors to their exact 1-D
kernels (integer and boolean scalars a function computes are one row's statistics, `n[] = i32(sum(x))`). Not inside a segment of a split or a
statement of the op-by-op baseline (their callers declare the tensors unviewed): the whole function only.

`any_rank`: tensors of any rank, all of one shape S, are seen the same way (`x[i, j, k]` -> `x[i, i_c]`, the
other variables gone) when every access to them is a tuple of distinct index variables that, within its
statement, equals or shares no variable with every other such access (so all of them walk the flat memory in one
order). schedule.py takes that schedule when the cost model estimates it faster than the tensors' own shape
([N, 3] rows too narrow for vectors, [3, N] too few rows for the cores) or when nothing takes the tensors in
their shape (a whole sum over rows longer than NRAM).
"""
from __future__ import annotations

import dataclasses
import math

from gir import ir
from gir.passes.builtin.exprs import refs, value_vars_of
from gir.scan import is_scan
from gir.walk import map_expr_pre, walk

MAX_COLS = 4096
MIN_COLS = 32
MIN_N = 64


def split_flat(func: ir.Func, types: dict[str, ir.TensorType], any_rank: bool = False,
               one_row: bool = False) -> ir.Func:
    """`func` (sizes specialised) with its tensors of one shape viewed as [R, C], or `func` itself when it does not
    apply. Vectors only unless `any_rank` (then tensors of any rank, all of one shape: schedule.py weighs that
    view against the tensors as they are). `one_row`: as [1, N], the scalars it computes as vectors [1] (a
    whole-tensor statistic becomes the statistic of one row, for the split-rows recipe; a scalar result is viewed
    `as [1]`); only for functions with such a statistic and one access pattern per statement."""
    shape = _shape(func, types, any_rank or one_row, int_stats=one_row)
    if shape is None:
        return func
    n = math.prod(shape)
    stats = _row_stats(func, types, shape) if one_row else set()
    if one_row and not stats:
        return func
    cols = n if one_row else _columns(n)
    rows = n // cols
    if len(shape) == 2 and shape == (rows, cols) and not one_row:   # (one row: its scalars become the row's)
        return func
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

        row = next((r.index[0] for r in [s.target] + refs(s.value) if tuple(types[r.name].shape) == shape), None)

        def two(r, s=s, row=row):   # x[i, j, k] -> x[i, i_c]: one access walks the flat tensor with two variables
            if isinstance(r, ir.Ref) and r.name in stats:   # (one_row: s[] -> s[i], the statistic of row i)
                return dataclasses.replace(r, index=(row,))
            if isinstance(r, ir.Var):   # (one_row of a vector: an index used as a value is the column's, row 0)
                return ir.Var(fresh(r.name), loc=r.loc)
            if not isinstance(r, ir.Ref) or tuple(types[r.name].shape) != shape:
                return r
            v = r.index[0]
            return dataclasses.replace(r, index=(v, ir.Var(fresh(v.name), loc=v.loc)))
        body.append(dataclasses.replace(s, target=two(s.target), value=map_expr_pre(s.value, two)))

    def viewed(p: ir.Param) -> ir.Param:
        if p.name in stats:   # a scalar result as the one row's statistic: `s: f32[] as [1]`
            inner = ir.TensorType(p.type.dtype, (1,), loc=p.type.loc)
            return dataclasses.replace(p, type=inner, view=ir.View(p.type, (ir.Const(1),), loc=p.loc))
        if tuple(p.type.shape) != shape:
            return p
        inner = ir.TensorType(p.type.dtype, (rows, cols), loc=p.type.loc)
        outer = p.view.outer if p.view is not None else p.type   # (a view of a view: the declared type's)
        return dataclasses.replace(p, type=inner, view=ir.View(outer, (ir.Const(rows), ir.Const(cols)), loc=p.loc))
    return dataclasses.replace(func, params=tuple(viewed(p) for p in func.params),
                               results=tuple(viewed(p) for p in func.results), body=tuple(body))


def _row_stats(func: ir.Func, types: dict, shape: tuple) -> set:
    """The scalars `func` computes (intermediates and results) when every statement accesses tensors of `shape`
    with one tuple of variables (so that tuple's first variable can index them as the one row's statistics); else
    the empty set."""
    stats = set()
    for s in func.body:
        if not isinstance(s, ir.Assign):
            continue
        tuples = {tuple(v.name for v in r.index) for r in [s.target] + refs(s.value)
                  if tuple(types[r.name].shape) == shape}
        if len(tuples) != 1:
            return set()
        if not types[s.target.name].shape:
            stats.add(s.target.name)
    return stats


def _shape(func: ir.Func, types: dict, any_rank: bool, int_stats: bool = False) -> tuple | None:
    """The one shape S (of N >= MIN_N elements) of every tensor that is not a scalar, when every tensor is a float
    (`int_stats`: or an integer scalar the function computes and interval arithmetic bounds below 2^24, the one
    row's statistic as an arg-reduction's position is), no statement is a scan or uses an index variable as a value, and each access to a tensor of
    shape S is a tuple of distinct index variables that, within its statement, is either the same tuple as
    another access's or shares no variable with it (then every access walks the flat tensor in the same order);
    else None."""
    from gir.passes.schedule_mlu.iotas import ACTIVE, exact_integers   # (integers below 2^24: exact in f32)
    computed = exact_integers(func) if int_stats else set()
    if any(not t.dtype.is_float and not (name in computed and not t.shape) and name not in ACTIVE
           for name, t in types.items()):
        return None   # (integer tensors keep their exact kernels: the tile recipes compute in f32)
    shapes = {tuple(t.shape) for t in types.values() if len(t.shape) >= 1}
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    if not any_rank and len(shape) != 1:
        return None
    if not all(isinstance(d, int) for d in shape) or math.prod(shape) < MIN_N:
        return None
    for s in func.body:
        if not isinstance(s, ir.Assign):
            continue
        if is_scan(s.value) or (value_vars_of(s.value) and not (int_stats and len(shape) == 1)):
            return None
        tuples = set()
        for r in [s.target] + refs(s.value):
            if tuple(types[r.name].shape) != shape:
                continue
            if not all(isinstance(v, ir.Var) for v in r.index) or len({v.name for v in r.index}) != len(r.index):
                return None
            tuples.add(tuple(v.name for v in r.index))
        if any(a != b and set(a) & set(b) for a in tuples for b in tuples):
            return None
    return shape


def _columns(n: int) -> int:
    """C: the largest divisor of n in [MIN_COLS, MAX_COLS] leaving two rows or more, a multiple of 32 if one is;
    else n (one row: narrow rows such as [524287, 2] ran 20x the roofline, one row is vectorised)."""
    divisors = [c for c in range(min(n // 2, MAX_COLS), MIN_COLS - 1, -1) if n % c == 0]
    aligned = [c for c in divisors if c % 32 == 0]
    return aligned[0] if aligned else divisors[0] if divisors else n
