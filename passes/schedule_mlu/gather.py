"""Per-row gathers for the MLU row model: `xt[i] = sum_j select(j == t[i], x[i, j], 0)` without per-element work.

`indexops.rewrite_index_values` turns the column index into the iota input `cj_`, so `lower_rows` computes that
statement as three full-tile ops per tile (compare with the per-row target, select, row sum): 3 extra vector
passes over every element. `gather_rows` rewrites the lowered kernel (before `indexops.patch_kernel`):

    b[0:R, 0:N] = cj__t[0:N] == t_t[0:R, 0:1]          # (or t_t == cj__t)
    c[0:R, 0:N] = select(b[0:R, 0:N], x_t[0:R, 0:N], 0.0)
    d[0:R, 0:1] = sum(c[0:R, 0:N], axis=1)
  becomes
    d[0:R, 0:1] = gather_cols(x_t[0:R, 0:N], t_t[0:R, 0:1])

(one scalar element read per row, see docs/explicit-layer.md), when `b` and `c` are not read afterwards. The
iota load of `cj_` is dropped when nothing else reads it (so `patch_kernel` does not generate the iota).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.schedule_mlu.indexops import COLV

_CMP_EQ = "=="


def _names(e) -> set[str]:
    if isinstance(e, ir.Ref):
        return {e.name}
    if isinstance(e, ir.BinOp):
        return _names(e.lhs) | _names(e.rhs)
    if isinstance(e, ir.UnOp):
        return _names(e.operand)
    if isinstance(e, ir.Call):
        return set().union(*(_names(a) for a in e.args)) if e.args else set()
    if isinstance(e, ir.Reduce):
        return _names(e.arg)
    return set()


def _reads(s) -> set[str]:
    if isinstance(s, ir.Assign):
        return _names(s.value)
    if isinstance(s, ir.Move):
        return {s.src.name}
    if isinstance(s, (ir.For, ir.Parallel)):
        return set().union(*(_reads(x) for x in s.body)) if s.body else set()
    return set()


def _match(stmts, k: int, colbuf: str):
    """The gather replacing stmts[k:k+3], or None."""
    if k + 3 > len(stmts) or not all(isinstance(s, ir.Assign) for s in stmts[k:k + 3]):
        return None
    cmp_, sel, red = stmts[k:k + 3]
    v = cmp_.value
    if not (isinstance(v, ir.BinOp) and v.op == _CMP_EQ and isinstance(v.lhs, ir.Ref) and isinstance(v.rhs, ir.Ref)):
        return None
    idx = v.rhs if v.lhs.name == colbuf else v.lhs if v.rhs.name == colbuf else None
    if idx is None or len(idx.index) != 2:
        return None
    s = sel.value
    if not (isinstance(s, ir.Call) and s.fn == "select" and len(s.args) == 3 and isinstance(s.args[0], ir.Ref)
            and s.args[0].name == cmp_.target.name and isinstance(s.args[1], ir.Ref) and len(s.args[1].index) == 2
            and isinstance(s.args[2], ir.Const) and float(s.args[2].value) == 0.0):
        return None
    r = red.value
    if not (isinstance(r, ir.Reduce) and r.op == "sum" and r.axes == (1,) and isinstance(r.arg, ir.Ref)
            and r.arg.name == sel.target.name and len(red.target.index) == 2):
        return None
    src = s.args[1]
    if src.name in (cmp_.target.name, sel.target.name) or idx.name in (cmp_.target.name, sel.target.name):
        return None
    rest = stmts[k + 3:]
    if any({cmp_.target.name, sel.target.name} & _reads(x) for x in rest):
        return None
    return ir.Assign(red.target, ir.Call("gather_cols", (src, idx)), loc=red.loc)


def _rewrite(stmts, colbuf: str):
    out, k, changed = [], 0, False
    while k < len(stmts):
        s = stmts[k]
        g = _match(stmts, k, colbuf)
        if g is not None:
            out.append(g)
            k += 3
            changed = True
            continue
        if isinstance(s, (ir.For, ir.Parallel)):
            body, ch = _rewrite(list(s.body), colbuf)
            changed |= ch
            s = dataclasses.replace(s, body=tuple(body))
        out.append(s)
        k += 1
    return out, changed


def _drop_iota(stmts, colbuf: str):
    out = []
    for s in stmts:
        if isinstance(s, ir.Move) and s.src.name == COLV and s.dst.name == colbuf:
            continue
        if isinstance(s, (ir.For, ir.Parallel)):
            s = dataclasses.replace(s, body=tuple(_drop_iota(list(s.body), colbuf)))
        out.append(s)
    return out


def gather_rows(kernel: ir.Kernel) -> ir.Kernel:
    """The kernel with index-compare row sums replaced by `gather_cols` (unchanged when none matches)."""
    colbuf = f"{COLV}_t"
    body, changed = _rewrite(list(kernel.body), colbuf)
    if not changed:
        return kernel
    others = [s for s in _flatten(body) if not (isinstance(s, ir.Move) and s.src.name == COLV)]
    if not any(colbuf in _reads(s) for s in others):
        body = _drop_iota(body, colbuf)
    return dataclasses.replace(kernel, body=tuple(body))


def _flatten(stmts):
    for s in stmts:
        if isinstance(s, (ir.For, ir.Parallel)):
            yield from _flatten(s.body)
        else:
            yield s


def gather_kernel(model, rows: int, tasks: int, sram: frozenset, name: str) -> tuple[ir.Kernel, int]:
    """(kernel, R) of a row model whose column index is the iota input: lowered with per-row gathers; when a
    gather applies, with blocked tiles and the `[M]` vectors moved once
    per core (`hoist.py`: two 500-cycle DMAs less per tile)."""
    from gir.passes.schedule_mlu.hoist import blocked_rows, hoist_rows, row_vectors
    from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
    plain = lower_rows(model, RowPlan(rows, tasks, sram), name)
    kernel = gather_rows(plain)
    if kernel is plain or sram:
        return kernel, rows
    # (rows that do not split evenly over the cores: extended.py ranks the blocked form against this one)
    r = blocked_rows(rows, model.m, tasks, row_vectors(model), uneven=model.m % tasks == 0)
    if r is None:
        return kernel, rows
    blocked = gather_rows(lower_rows(model, RowPlan(r, tasks, sram), name))
    return hoist_rows(blocked, model, r, tasks, model.dtypes), r
