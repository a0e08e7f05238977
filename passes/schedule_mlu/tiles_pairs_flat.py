"""Flat pair maps for the pair recipe (passes/schedule_mlu/tiles_pairs.py): `flat_pairs` rewrites a function whose
pairs interleave along one even last axis D (`y[.., d] = select(d % 2 == 0, E0, E1)`, rope_flat) into the pair form
over reshape views [.., D / 2, 2] that the pair recipe takes.
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.schedule_mlu.tiles import NotTile


def flat_pairs(spec: ir.Func, info) -> ir.Func:
    """`y[.., d] = select(d % 2 == 0, E0, E1)` over an even last axis D (pairs interleaved along d, rope_flat) as
    the pair form over views [.., D / 2, 2]: in E0 (even d) `x[.., d]` is `x[.., k, 0]` and `x[.., d + 1]`
    `x[.., k, 1]`, in E1 `x[.., d]` is `x[.., k, 1]` and `x[.., d - 1]` `x[.., k, 0]`; `c[.., d // 2]` is
    `c[.., k]`. NotTile for anything else (a neighbour outside the pair, d used as a value)."""
    if len(info.stmts) != 1:
        raise NotTile("not one statement")
    st = info.stmts[0].stmt
    types = dict(info.types)
    idx = st.target.index
    if not idx or any(not isinstance(i, ir.Var) for i in idx):
        raise NotTile("not a pair map")
    lead, d = [i.name for i in idx[:-1]], idx[-1].name
    D = types[st.target.name].shape[-1]
    v = st.value
    if not (isinstance(D, int) and D % 2 == 0 and isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3):
        raise NotTile("not a pair map")
    c = v.args[0]
    if not (isinstance(c, ir.BinOp) and c.op in ("==", "!=")):
        raise NotTile("not a select on the parity")
    mod, const = (c.lhs, c.rhs) if isinstance(c.lhs, ir.BinOp) else (c.rhs, c.lhs)
    if not (isinstance(mod, ir.BinOp) and mod.op == "%" and isinstance(mod.lhs, ir.Var) and mod.lhs.name == d and
            isinstance(mod.rhs, ir.Const) and mod.rhs.value == 2 and isinstance(const, ir.Const) and
            const.value in (0, 1) and not isinstance(const.value, bool)):
        raise NotTile("not a select on the parity")
    first = (const.value == 0) == (c.op == "==")
    even, odd = (v.args[1], v.args[2]) if first else (v.args[2], v.args[1])
    k, t = f"{d}_k", f"{d}_t"
    paired: set = {st.target.name}

    def unclamp(e, par):
        """`min(a, c)` / `max(a, c)` that the index clamps (passes/analysis/index_bounds.py) put around a pair
        index, dropped where they cannot bind for d of parity `par` in 0..D-1."""
        if not (isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2):
            return e
        a, c = e.args[0], _const_val(e.args[1])
        if c is None:
            return e
        off = _offset(a, d)
        if off is not None:
            lo, hi = par + off, D - 2 + par + off
        elif isinstance(a, ir.BinOp) and a.op == "//" and _offset(a.lhs, d) == 0 and _const_val(a.rhs) == 2:
            lo, hi = 0, D // 2 - 1
        else:
            return e
        return a if (e.fn == "min" and hi <= c) or (e.fn == "max" and lo >= c) else e

    def rw(e, par):
        if isinstance(e, ir.Var):
            raise NotTile("the pair index used as a value")
        if isinstance(e, ir.Ref):
            e = dataclasses.replace(e, index=tuple(unclamp(i, par) for i in e.index))
            ix = list(e.index)
            if not ix:
                return e
            last = ix[-1]
            if [getattr(i, "name", None) for i in ix[:-1]] == lead and types[e.name].shape[-1] == D:
                off = _offset(last, d)
                if off is None or (par, off) not in ((0, 0), (0, 1), (1, 0), (1, -1)):
                    raise NotTile("a neighbour outside the pair")
                paired.add(e.name)
                return ir.Ref(e.name, tuple(ix[:-1]) + (ir.Var(k), ir.Const(par + off)), loc=e.loc)
            if isinstance(last, ir.BinOp) and last.op == "//" and isinstance(last.lhs, ir.Var) and \
                    last.lhs.name == d and isinstance(last.rhs, ir.Const) and last.rhs.value == 2:
                if any(_uses(i, d) for i in ix[:-1]):
                    raise NotTile("a table indexed by the pair index twice")
                return ir.Ref(e.name, tuple(ix[:-1]) + (ir.Var(k),), loc=e.loc)
            if any(_uses(i, d) for i in ix):
                raise NotTile("an index of the pair axis the pair recipe does not take")
            return e
        if isinstance(e, ir.BinOp):
            return dataclasses.replace(e, lhs=rw(e.lhs, par), rhs=rw(e.rhs, par))
        if isinstance(e, ir.UnOp):
            return dataclasses.replace(e, operand=rw(e.operand, par))
        if isinstance(e, ir.Call):
            return dataclasses.replace(e, args=tuple(rw(a, par) for a in e.args))
        if isinstance(e, ir.Reduce):
            raise NotTile("a reduction")
        return e
    e0, e1 = rw(even, 0), rw(odd, 1)
    target = ir.Ref(st.target.name, tuple(idx[:-1]) + (ir.Var(k), ir.Var(t)), loc=st.target.loc)
    value = ir.Call("select", (ir.BinOp("==", ir.Var(t), ir.Const(0)), e0, e1), loc=v.loc)
    body = (dataclasses.replace(st, target=target, value=value),)

    def retype(prm):
        if prm.name not in paired:
            return prm
        shape = tuple(prm.type.shape[:-1]) + (D // 2, 2)
        outer = prm.view.outer if prm.view is not None else prm.type
        return dataclasses.replace(prm, type=ir.TensorType(prm.type.dtype, shape),
                                   view=ir.View(outer, tuple(ir.Const(n) for n in shape)))
    return dataclasses.replace(spec, params=tuple(retype(x) for x in spec.params),
                               results=tuple(retype(x) for x in spec.results), body=body)


def _offset(e, d: str):
    """c for an index `d + c` / `d - c` / `d` (c a small integer), else None."""
    if isinstance(e, ir.Var) and e.name == d:
        return 0
    if isinstance(e, ir.BinOp) and e.op in ("+", "-") and isinstance(e.lhs, ir.Var) and e.lhs.name == d and \
            isinstance(e.rhs, ir.Const) and isinstance(e.rhs.value, int) and not isinstance(e.rhs.value, bool):
        return e.rhs.value if e.op == "+" else -e.rhs.value
    return None


def _const_val(e):
    """The integer value of a constant index expression (sizes are specialised), else None."""
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"):
        a, b = _const_val(e.lhs), _const_val(e.rhs)
        if a is not None and b is not None:
            return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    return None


def _uses(e, d: str) -> bool:
    from gir.walk import walk
    return any(isinstance(x, ir.Var) and x.name == d for x in walk(e))
