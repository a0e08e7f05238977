"""hoist-reductions: compute a reduction nested in another one once per point of what it depends on."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.errors import GirError
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import map_operator_funcs, var_names, walk
from gir.shapes import func_info
from gir.walk import map_expr_pre, reductions_preorder


@dataclass(frozen=True)
class HoistReductions(ModulePass):
    """Move a reduction nested in another reduction into its own statement when it does not depend on every
    index it is evaluated at (the statement's and the enclosing reductions': loop-invariant code motion).

    `r[] = sum(select(x[i, j] != min(x[k, l]), 1, 0))` evaluates `min(x[k, l])` for every (i, j): M N times M N
    work. It becomes `r_min0[] = min(x[k, l])` followed by `r[] = sum(select(x[i, j] != r_min0[], 1, 0))`; a nested
    reduction that depends on some enclosing indices keeps them as the new intermediate's indices
    (`y[i] = min(select(x[i, j] == max(x[i, k]), j, N))` hoists `y_max0[i] = max(x[i, k])`). The intermediate
    takes the value the nested reduction had (float reductions of an f64 statement accumulate in f64).

    A reduction inside an element-wise statement that does not depend on all of the statement's indices (a
    broadcast statistic: `y[i, j] = x[i, j] / sum(x[i, k])`) is hoisted the same way (`y_sum0[i] = sum(x[i, k])`),
    so that it is computed once per row instead of once per element (10x the compulsory traffic on sim and a
    scalar kernel on the MLU before); the schedules fuse the row statistic with its broadcast use as if it had
    been written as two statements. A reduction that is the statement's whole value is left alone."""
    name: ClassVar[str] = "hoist-reductions"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return map_operator_funcs(module, lambda f: self._func(ctx, f))

    def _func(self, ctx: PassContext, func: ir.Func) -> ir.Func:
        return hoist_reductions(func, lambda: ctx.bump("hoist-reductions.hoisted"))


def hoist_reductions(func: ir.Func, each=None) -> ir.Func:
    """`func` with every hoistable nested reduction hoisted (`each()` called once per hoist)."""
    while True:
        step = _hoist_one(func)
        if step is None:
            return func
        func = step
        if each is not None:
            each()


def _hoist_one(func: ir.Func) -> ir.Func | None:
    """`func` with its first hoistable nested reduction (statement order, then preorder) hoisted, or None."""
    info = func_info(func)
    sizes = set(func.size_symbols())
    for st in info.stmts:
        reds = reductions_preorder(st.stmt.value)
        span = [len(reductions_preorder(r.arg)) for r in reds]   # descendants of reduction n: n+1 .. n+span[n]
        guarded = {id(r) for x in walk(st.stmt.value) if isinstance(x, ir.Call) and x.fn == "select"
                   for a in x.args[1:] for r in reductions_preorder(a)}
        for n, red in enumerate(reds):
            if id(red) in guarded:
                continue    # inside a select branch: its guard may be what keeps it in bounds (or defined)
            outer = [a for a in range(n) if a + span[a] >= n]
            bound_here = {v for m in range(n, n + span[n] + 1) for v in st.reduce_vars.get(m, ())}
            free = var_names(red.arg) - sizes - bound_here
            enclosing = [v for a in outer for v in st.reduce_vars.get(a, ())]
            if set(st.out_vars) | set(enclosing) <= free or (not outer and red is st.stmt.value):
                continue    # varies with every point it is evaluated at, or is the statement's whole value
            index = [v for v in st.out_vars if v in free] + [v for v in enclosing if v in free]
            name = _fresh(func, f"{st.stmt.target.name}_{red.op}")
            ref = ir.Ref(name, tuple(ir.Var(v, loc=red.loc) for v in index), loc=red.loc)
            hoisted = ir.Assign(ir.Ref(name, ref.index, loc=red.loc), red, loc=red.loc)
            count = [0]

            def swap(x, n=n, ref=ref):
                if isinstance(x, ir.Reduce):
                    count[0] += 1
                    if count[0] - 1 == n:
                        return ref
                return x
            value = map_expr_pre(st.stmt.value, swap)
            body = list(func.body)
            at = body.index(st.stmt)
            body[at:at + 1] = [hoisted, dataclasses.replace(st.stmt, value=value)]
            out = dataclasses.replace(func, body=tuple(body))
            try:
                types = func_info(out).types
            except GirError:    # e.g. a free index whose range came from elsewhere in the statement: leave it
                continue
            if types[name].dtype == ir.DType.f32 and _f64_arithmetic(st.stmt, info.types):
                # a float reduction of an f64 statement accumulated in f64: so does the intermediate
                body[at] = dataclasses.replace(hoisted, value=dataclasses.replace(
                    red, arg=ir.Call("f64", (red.arg,), loc=red.loc)))
                out = dataclasses.replace(func, body=tuple(body))
            return out
    return None


def _f64_arithmetic(s: ir.Assign, types) -> bool:
    """The statement computes in f64: its target is f64, or it reads an f64 tensor or casts to f64."""
    return types[s.target.name].dtype == ir.DType.f64 or any(
        isinstance(x, ir.Ref) and x.name in types and types[x.name].dtype == ir.DType.f64 or
        isinstance(x, ir.Call) and x.fn == "f64" for x in walk(s.value))


def _fresh(func: ir.Func, prefix: str) -> str:
    """`prefix` + the smallest number that names nothing in `func` (r_min0, r_min1, ...)."""
    taken = {p.name for p in func.params + func.results} | set(func.size_symbols())
    for s in func.body:
        taken.add(s.target.name)
        taken |= {x.name for x in walk(s.target) if isinstance(x, ir.Var)}
        taken |= {x.name for x in walk(s.value) if isinstance(x, (ir.Var, ir.Ref))}
    k = 0
    while f"{prefix}{k}" in taken:
        k += 1
    return f"{prefix}{k}"
