"""Arg-reductions and boolean max/min, written with the reductions every target already runs.

Run on each operator-layer function before it is lowered (GPU: `naive-lower`; MLU: `schedule_mlu`); the reference
evaluator computes them directly (numpy.argmax / argmin, numpy.max / min of booleans), so every target is checked
against an independent definition.

    y[f] = ... argmax(e) ...          (e reduced over its one index j of extent J; f the other indices in scope)
becomes
    y_amx[f] = max(e)                                 # the extreme (min(e) for argmin)
    y_anan[f] = min(select(e != e, j, J))             # the first NaN, J if none (float e only)
    y[f] = ... select(y_anan[f] < J, y_anan[f], min(select(e == y_amx[f], j, J))) ...

so ties give the first index and a NaN wins at its first position, as numpy; the extreme's own NaN behaviour on a
target does not matter (with a NaN present the first NaN is taken, without one max is the plain maximum). The
three reductions read the same operand, so the fuse pass puts them in one kernel that reads it once.

`max(b)` / `min(b)` of a boolean operand (any / all) becomes `max(select(b, 1, 0)) != 0` (`min` alike).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.passes.builtin.exprs import KIND_BOOL, KIND_INT, children, expr_kind, map_expr, substitute_vars, walk


def lower_arg_reductions(func: ir.Func) -> ir.Func:
    """`func` with argmax/argmin and boolean max/min rewritten (itself when it has none)."""
    if func.is_explicit or not any(isinstance(x, ir.Reduce) and x.op in ir.ARG_REDUCTIONS
                                   or isinstance(x, ir.Reduce) and x.op in ("max", "min")
                                   for item in func.body if isinstance(item, ir.Assign) for x in walk(item.value)):
        return func
    func = _Rewriter(func).run()
    return _bool_extremes(func)


class _Rewriter:
    def __init__(self, func: ir.Func):
        from gir.shapes import func_info

        self.func = func
        self.info = func_info(func)
        self.taken = {p.name for p in func.params + func.results} | {s.stmt.target.name for s in self.info.stmts}
        self.sizes = set(func.size_symbols())
        self.copies = 0

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}{k}", k + 1
        self.taken.add(name)
        return name

    def run(self) -> ir.Func:
        body: list[ir.Assign] = []
        for st in self.info.stmts:
            self.st, self.counter, self.extra = st, 0, []
            value = self.expr(st.stmt.value, st.out_vars)
            body += self.extra
            body.append(st.stmt if value is st.stmt.value else dataclasses.replace(st.stmt, value=value))
        if all(a is b for a, b in zip(body, self.func.body)) and len(body) == len(self.func.body):
            return self.func
        return dataclasses.replace(self.func, body=tuple(body))

    def expr(self, e, scope: tuple[str, ...]):
        """Rebuild `e` (preorder numbering of reductions as StmtInfo.reduce_vars), inner arg-reductions first."""
        if isinstance(e, ir.Reduce):
            n = self.counter
            self.counter += 1
            bound = self.st.reduce_vars.get(n, ())
            arg = self.expr(e.arg, scope + tuple(v for v in bound if v not in scope))
            if e.op in ir.ARG_REDUCTIONS:
                return self.arg_reduction(e, arg, bound[0], scope)
            return e if arg is e.arg else dataclasses.replace(e, arg=arg)
        if isinstance(e, (ir.BinOp, ir.UnOp, ir.Call)):
            new = [self.expr(c, scope) for c in children(e)]
            if all(a is b for a, b in zip(new, children(e))):
                return e
            if isinstance(e, ir.BinOp):
                return dataclasses.replace(e, lhs=new[0], rhs=new[1])
            if isinstance(e, ir.UnOp):
                return dataclasses.replace(e, operand=new[0])
            return dataclasses.replace(e, args=tuple(new))
        return e

    def arg_reduction(self, red: ir.Reduce, e, j: str, scope: tuple[str, ...]):
        loc = red.loc
        used = {x.name for x in walk(e) if isinstance(x, ir.Var)}
        free = tuple(v for v in scope if v in used)
        direct = {i.name for x in walk(e) if isinstance(x, ir.Ref) for i in x.index if isinstance(i, ir.Var)}
        for v in free:
            if v not in direct:
                raise GirError(f"{red.op}() here needs index '{v}' to index a tensor dimension directly inside it",
                               loc, [f"'{v}' is used only as a value or inside an index expression in the operand; "
                                     f"compute the operand in its own statement and take {red.op}() of that"])
        dim = self.st.ranges[j]
        ext = ir.Const(dim, loc=loc) if isinstance(dim, int) else ir.Var(dim, loc=loc)
        jv = ir.Var(j, loc=loc)
        target = self.st.stmt.target.name

        def define(base: str, value) -> ir.Ref:
            name = self.fresh(f"{target}_{base}")
            self.extra.append(ir.Assign(ir.Ref(name, tuple(ir.Var(v, loc=loc) for v in free), loc=loc), value,
                                        loc=loc))
            return ir.Ref(name, tuple(ir.Var(v, loc=loc) for v in free), loc=loc)

        def first(cond):   # the first j where cond holds, J if none; an i32 (docs/gir.md)
            return ir.Call("i32", (ir.Reduce("min", ir.Call("select", (cond, jv, ext), loc=loc), loc=loc),), loc=loc)

        # indices reduced inside the operand: each copy of it gets its own names, so that two copies side by side
        # (`e != e`) keep their own inner reductions (sibling uses under one reduction would bind to that one)
        inner = sorted({x.name for x in walk(e) if isinstance(x, ir.Var)} - set(scope) - {j} - self.sizes)

        def copy():
            self.copies += 1
            return substitute_vars(e, {v: ir.Var(f"{v}_c{self.copies}", loc=loc) for v in inner})

        extreme = define("a" + red.op[3:], ir.Reduce(red.op[3:], copy(), loc=loc))
        out = first(ir.BinOp("==", copy(), extreme, loc=loc))
        if expr_kind(e, self.info.types) not in (KIND_INT, KIND_BOOL):   # NaN is possible
            nan = define("anan", first(ir.BinOp("!=", copy(), copy(), loc=loc)))
            out = ir.Call("select", (ir.BinOp("<", nan, ext, loc=loc), nan, out), loc=loc)
        return out


def _bool_extremes(func: ir.Func) -> ir.Func:
    from gir.shapes import func_info

    types = func_info(func).types

    def fn(x):
        if isinstance(x, ir.Reduce) and x.op in ("max", "min") and expr_kind(x.arg, types) == KIND_BOOL:
            loc = x.loc
            as_int = ir.Call("select", (x.arg, ir.Const(1, loc=loc), ir.Const(0, loc=loc)), loc=loc)
            return ir.BinOp("!=", dataclasses.replace(x, arg=as_int), ir.Const(0, loc=loc), loc=loc)
        return x

    body = tuple(dataclasses.replace(s, value=map_expr(s.value, fn)) if isinstance(s, ir.Assign) else s
                 for s in func.body)
    return func if body == func.body else dataclasses.replace(func, body=body)


__all__ = ["lower_arg_reductions"]
