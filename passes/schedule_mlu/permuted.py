"""Operands read in another axis order than their statement computes in, moved by a permutation of their own first.

The MLU's tile recipes need every tensor of a kernel to lay its axes out in one order; a statement that reads a
tensor transposed (`t[j, i] = exp(x[i, j]) + b[j]`, `y[i, j, k] = x[k, j, i] * 2.0`) ran as a scalar kernel
(1,800x the DMA roofline). `permute_operands` rewrites such a statement into pure permutations, which the
`permute` recipe moves at near the DMA roofline (transpose.py), and the statement's computation in one layout:

    t[j, i] = exp(x[i, j]) + b[j]     ->     x_p[j, i] = x[i, j];  t[j, i] = exp(x_p[j, i]) + b[j]
    t[j, i] = x[i, j] + z[i, j]       ->     t_p[i, j] = x[i, j] + z[i, j];  t[j, i] = t_p[i, j]

The layout is the one of the result or of a full-rank operand that moves the fewest bytes through GDRAM (each
tensor not in it is read and written once more). Operands that lack some of the result's axes (broadcasts) only
need their axes in the same relative order. A statement with a reduction, a scan, or indices that are not plain
variables is left as it is. The scheduler tries the rewrite when a schedule holds scalar kernels and keeps it when
the MLU cost model estimates it faster (schedule.py), with a missed remark per permutation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gir import ir
from gir.scan import scan_of
from gir.walk import map_expr_pre, walk


@dataclass(frozen=True)
class Moved:
    """A tensor moved into another axis order: `name` of the new tensor, `source` what it reads, the statement."""
    name: str
    source: str
    stmt: str
    loc: object


def _plain(ref: ir.Ref) -> list[str] | None:
    """The variable names of `ref`'s indices when they are distinct plain variables."""
    names = [i.name for i in ref.index if isinstance(i, ir.Var)]
    return names if len(names) == len(ref.index) and len(set(names)) == len(names) else None


def _fits(order: list[str], layout: list[str]) -> bool:
    """Whether the variables `order` appear in `layout` in the same relative order."""
    pos = [layout.index(v) for v in order]
    return pos == sorted(pos)


def permute_operands(func: ir.Func, types: dict, keep_result: bool = True) -> tuple[ir.Func, list[Moved]]:
    """`func` with every element-wise statement that reads a tensor in another axis order split into pure
    permutations and the statement in one layout (module docstring); the moves made (none: `func` unchanged).
    `types`: the tensor types of `func` (sizes specialised: the bytes decide the layout). Between layouts that
    move as many bytes, `keep_result` takes the result's, else an operand's (the statement then computes where
    its operands lie, and may fuse with the statements that produce them)."""
    taken = {p.name for p in func.params + func.results}
    taken |= {s.target.name for s in func.body if isinstance(s, ir.Assign)}
    body: list = []
    moved: list[Moved] = []

    def fresh(base: str) -> str:
        k, name = 0, f"{base}_p"
        while name in taken:
            k += 1
            name = f"{base}_p{k}"
        taken.add(name)
        return name

    for s in func.body:
        new = _split(s, types, fresh, moved, keep_result) if isinstance(s, ir.Assign) else None
        body.extend(new if new is not None else [s])
    if not moved:
        return func, []
    return replace(func, body=tuple(body)), moved


def _nbytes(name: str, types: dict) -> int:
    t = types[name]
    return math.prod(t.shape) * t.dtype.nbytes


def _split(s: ir.Assign, types: dict, fresh, moved: list, keep_result: bool) -> list | None:
    """The statements replacing `s`, or None when it stays."""
    out = _plain(s.target)
    if out is None or isinstance(s.value, ir.Ref) or scan_of(s.value) is not None:
        return None
    refs = [n for n in walk(s.value) if isinstance(n, ir.Ref) and n.name in types]
    orders = []
    for r in refs:
        vs = _plain(r)
        if vs is None or not set(vs) <= set(out):
            return None                 # an index that is not a plain variable of the result, or a reduction
        orders.append(vs)
    layouts = [out] + [vs for vs in orders if set(vs) == set(out) and vs != out]

    def cost(layout) -> int:
        off = {r.name for r, vs in zip(refs, orders) if not _fits(vs, layout)}
        return sum(_nbytes(n, types) for n in off) + (_nbytes(s.target.name, types) if layout != out else 0)

    layout = min(layouts if keep_result else layouts[1:] + layouts[:1], key=cost)   # the first on ties
    if layout == out and all(_fits(vs, out) for vs in orders):
        return None
    stmts: list = []
    done: dict[str, ir.Ref] = {}
    for r, vs in zip(refs, orders):
        key = str(r)
        if _fits(vs, layout) or key in done:
            continue
        name = fresh(r.name)
        done[key] = ir.Ref(name, tuple(ir.Var(v) for v in layout if v in vs), loc=r.loc)
        stmts.append(ir.Assign(done[key], r, loc=s.loc))
        moved.append(Moved(name, r.name, s.target.name, s.loc))

    def swap(e):
        return done.get(str(e), e) if isinstance(e, ir.Ref) else e
    value = map_expr_pre(s.value, swap)
    if layout == out:
        return stmts + [ir.Assign(s.target, value, loc=s.loc)]
    name = fresh(s.target.name)
    tmp = ir.Ref(name, tuple(ir.Var(v) for v in layout), loc=s.target.loc)
    moved.append(Moved(name, s.target.name, s.target.name, s.loc))
    return stmts + [ir.Assign(tmp, value, loc=s.loc), ir.Assign(s.target, tmp, loc=s.loc)]
