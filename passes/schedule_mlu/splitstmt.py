"""Splitting one operator statement that no vector schedule covers alone into statements that they do cover
(used by the op-by-op baseline, `opbyop.py`, so that it differs from the fused schedule only by fusion).

Two rewrites, applied recursively, each giving statements over contiguous trailing axes that the row model
views as rows and columns (`indexops.py`: leading axes merge into rows):

  * a reduction over several axes reduces its last axis into a GDRAM temporary first, then the rest:
    `mu[n, g] = mean(x[n, g, c, p])` becomes `t[n, g, c] = mean(x[n, g, c, p])`; `mu[n, g] = mean(t[n, g, c])`
    (sum of sums, max of maxes, mean of means: every inner mean averages the same count);
  * an operand of a rank >= 3 element-wise statement indexed by other than the forms `indexops` views (all the
    target's indices, all but the last, the last alone, the last two, none) is first broadcast over the row axes
    into a temporary indexed by all but the last index: in `y[n, g, c, p] = d[n, g, c, p] * rsqrt(vr[n, g] + e)
    * gamma[g, c] + beta[g, c]`, `vr[n, g]` becomes `vr_t[n, g, c] = vr[n, g]` (its last axis broadcast: a row
    model statement over `[N * G, CG]`) and `gamma[g, c]` becomes `gamma_t[n, g, c] = gamma[g, c]` (a shared
    `[G, CG]` slab), so y is a row model over `[N * G * CG, HW]` with per-row vectors.

The temporaries are small next to the statement's own tensors (they lack its last axis) but are real GDRAM
traffic and kernels of the baseline. A statement neither rewrite applies to is returned unchanged.
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import DiagnosticCollector
from gir.kinds import KIND_FLOAT, KindChecker
from gir.shapes import _walk, func_info, reductions_preorder

ASSOC = ("sum", "mean", "max", "min", "prod")


@dataclasses.dataclass
class Split:
    """The statements replacing one statement, in order, and the GDRAM temporaries they introduce."""
    stmts: list
    temps: dict      # name -> ir.TensorType


def split_statement(stmt: ir.Assign, types: dict, taken: set) -> Split:
    """`stmt` (sizes specialised; `types` of every tensor it reads or writes) as simpler statements; temporary
    names avoid `taken` (which grows by them)."""
    out = Split([], {})
    _split(stmt, dict(types), taken, out)
    return out


def _info(stmt: ir.Assign, types: dict):
    names = []
    for x in _walk(stmt.value):
        if isinstance(x, ir.Ref) and x.name not in names:
            names.append(x.name)
    t = stmt.target.name
    f = ir.Func("split_", tuple(ir.Param(x, types[x]) for x in names if x != t), (ir.Param(t, types[t]),), (stmt,))
    return func_info(f).stmts[0]


def _fresh(base: str, taken: set) -> str:
    k = 0
    while f"{base}_t{k}" in taken:
        k += 1
    taken.add(f"{base}_t{k}")
    return f"{base}_t{k}"


def _split(stmt, types, taken, out: Split) -> None:
    st = _info(stmt, types)
    pieces = _split_reduce(st, types, taken, out) or _expand_operands(st, types, taken, out)
    if pieces is None:
        out.stmts.append(stmt)
        return
    for p in pieces:
        _split(p, types, taken, out)


def _temp(name, vars_, st, dtype, types, out: Split) -> ir.Ref:
    typ = ir.TensorType(dtype, tuple(int(st.ranges[v]) for v in vars_))
    types[name] = typ
    out.temps[name] = typ
    return ir.Ref(name, tuple(ir.Var(v) for v in vars_))


def _split_reduce(st, types, taken, out: Split):
    """[inner, outer] for the first reduction over several axes (its argument without reductions), or None."""
    nodes = reductions_preorder(st.stmt.value)
    for k, node in enumerate(nodes):
        bound = st.reduce_vars.get(k, ())
        if len(bound) < 2 or node.op not in ASSOC or any(isinstance(x, ir.Reduce) for x in _walk(node.arg)):
            continue
        free = {x.name for x in _walk(node.arg) if isinstance(x, ir.Var)}
        keep = [v for v in st.out_vars if v in free] + list(bound[:-1])
        # the partial results have the reduction's own kind: integer ones stay exact (and assignable to an
        # integer target), float ones are f32
        dtype = ir.DType.i32 if node.op != "mean" and _int_valued(node.arg, types) else ir.DType.f32
        ref = _temp(_fresh(st.stmt.target.name, taken), keep, st, dtype, types, out)
        inner = ir.Assign(ref, ir.Reduce(node.op, node.arg, loc=node.loc), loc=st.stmt.loc)
        outer = ir.Assign(st.stmt.target, _replace(st.stmt.value, node, ir.Reduce(node.op, ref, loc=node.loc)),
                          loc=st.stmt.loc)
        return [inner, outer]
    return None


def _int_valued(e, types) -> bool:
    kinds = KindChecker()
    kinds.types, kinds.diag = types, DiagnosticCollector()
    return kinds.expr_kind(e, set()) != KIND_FLOAT


def _expand_operands(st, types, taken, out: Split):
    """[broadcasts..., the statement on them] for a rank >= 3 element-wise statement, or None."""
    o = tuple(st.out_vars)
    if len(o) < 3 or st.reduce_vars or any(isinstance(x, ir.Reduce) for x in _walk(st.stmt.value)):
        return None
    ok = {o, o[:-1], o[-1:], (), o[-2:]}
    done: dict = {}
    pieces = []
    for x in _walk(st.stmt.value):
        if not isinstance(x, ir.Ref):
            continue
        idx = tuple(getattr(i, "name", None) for i in x.index)
        if idx in ok or (x.name, idx) in done:
            continue
        if None in idx or o[-1] in idx or not set(idx) <= set(o):
            return None
        ref = _temp(_fresh(x.name, taken), o[:-1], st, types[x.name].dtype, types, out)
        pieces.append(ir.Assign(ref, x, loc=st.stmt.loc))
        done[(x.name, idx)] = ref
    if not pieces:
        return None
    value = st.stmt.value
    for (name, idx), ref in done.items():
        value = _replace_ref(value, name, idx, ref)
    return pieces + [ir.Assign(st.stmt.target, value, loc=st.stmt.loc)]


def _replace(e, node, new):
    """`e` with the sub-expression `node` (by identity) replaced by `new`."""
    if e is node:
        return new
    if isinstance(e, ir.BinOp):
        return dataclasses.replace(e, lhs=_replace(e.lhs, node, new), rhs=_replace(e.rhs, node, new))
    if isinstance(e, ir.UnOp):
        return dataclasses.replace(e, operand=_replace(e.operand, node, new))
    if isinstance(e, ir.Call):
        return dataclasses.replace(e, args=tuple(_replace(a, node, new) for a in e.args))
    if isinstance(e, ir.Reduce):
        return dataclasses.replace(e, arg=_replace(e.arg, node, new))
    return e


def _replace_ref(e, name, idx, ref):
    """`e` with every `name[idx]` (idx: index variable names) replaced by `ref`."""
    if isinstance(e, ir.Ref):
        return ref if e.name == name and tuple(getattr(i, "name", None) for i in e.index) == idx else e
    if isinstance(e, ir.BinOp):
        return dataclasses.replace(e, lhs=_replace_ref(e.lhs, name, idx, ref), rhs=_replace_ref(e.rhs, name, idx, ref))
    if isinstance(e, ir.UnOp):
        return dataclasses.replace(e, operand=_replace_ref(e.operand, name, idx, ref))
    if isinstance(e, ir.Call):
        return dataclasses.replace(e, args=tuple(_replace_ref(a, name, idx, ref) for a in e.args))
    if isinstance(e, ir.Reduce):
        return dataclasses.replace(e, arg=_replace_ref(e.arg, name, idx, ref))
    return e
