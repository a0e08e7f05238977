"""Exact bounds of quasi-affine and guarded operator-layer indices (isl).

An index with `//` or `%` (by constants), or a reference read under a `select` guard, is checked here rather than
by the corner rule of `gir/shapes.py`: for one dimension of one reference, the *bad set* is the set of sizes for
which some instance (index variables in their ranges, the affine guards holding) puts the index below 0 or past the
extent. Its parameters are the function's sizes (all >= 1).

- empty: the index is always in bounds;
- every size >= 1: the index always leaves its dimension, a located error at `gir check`;
- otherwise: a *size requirement* (e.g. `D` even for `x[s, d + 1]` under `d % 2 == 0`), checked when the sizes are
  bound (`check_sizes`), a located error naming the sizes.

A guard that reads a tensor is not affine and is ignored (the access is checked as if unguarded). A guarded
access that would leave its dimension without its guard is read through a clamped index (`clamp_guarded`), so that
targets which compute both branches of a `select` never touch memory outside the tensor; the guard proves the
clamped value is never used.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from gir import ir
from gir.affine import free_vars, guarded_refs, to_affine
from gir.errors import GirError
from gir.passes.analysis import isl_helpers as ih


@dataclass(frozen=True)
class Requirement:
    """Sizes (an isl parameter set) at which index `axis` of `ref` leaves its dimension (`what`)."""
    ref: ir.Ref
    axis: int
    what: str
    bad: object  # isl.Set over the renamed sizes


def _names(func: ir.Func, vars_) -> dict[str, str]:
    """isl-safe names (a GIR name may be an isl keyword such as `mod` or `floor`)."""
    out = {s: f"p_{s}" for s in func.size_symbols()}
    out.update({v: f"v_{v}" for v in vars_})
    return out


def needs_exact_check(ref: ir.Ref, guards) -> bool:
    """Whether the reference is checked here (guarded, or an index that is not affine)."""
    return bool(guards) or any(to_affine(i) is None for i in ref.index if not isinstance(i, ir.Slice))


def bad_sizes(func: ir.Func, ranges: dict[str, ir.Dim], dim: ir.Dim, idx: ir.Expr, guards) -> dict[str, object]:
    """{"below 0": set, "past the extent D": set}: the sizes at which `idx` can leave `dim` under `guards`."""
    sizes = set(func.size_symbols())
    used = set(free_vars(idx)) - sizes
    conds = []
    for c, holds in guards:
        if any(isinstance(x, ir.Ref) for x in _walk(c)):
            continue  # data-dependent guard: not affine, ignored (checked as if unguarded)
        try:
            names = _names(func, used | (free_vars(c) - sizes))
            text = ih.cond(c, names)
            ih.make_set([names[s] for s in func.size_symbols()], "S",   # isl reads it (not `i * N`: a product
                        [names[v] for v in sorted(free_vars(c) - sizes)], [text])   # of a size and an index)
        except ih.NotAffine:
            continue   # not affine: ignored (checked as if unguarded)
        conds.append(text if holds else f"(not {text})")
        used |= free_vars(c) - sizes
    names = _names(func, used)
    params = [names[s] for s in func.size_symbols()]

    def ext(d: ir.Dim) -> str:
        return str(d) if isinstance(d, int) else names[d]
    box = [f"0 <= {names[v]} < {ext(ranges.get(v, 1))}" for v in sorted(used)]
    box += [f"{p} >= 1" for p in params]
    x = ih.expr(idx, names)
    out = {}
    for what, test in (("below 0", f"{x} < 0"), (f"past the extent {dim}", f"{x} >= {ext(dim)}")):
        s = ih.make_set(params, "S", [names[v] for v in sorted(used)], box + conds + [test])
        out[what] = s.params()
    return out


def _walk(e):
    from gir.walk import walk
    return walk(e)


def requirements(func: ir.Func, types: dict[str, ir.TensorType], value: ir.Expr,
                 ranges: dict[str, ir.Dim]) -> tuple[list[Requirement], list[Requirement]]:
    """(always out of bounds, out of bounds at some sizes) for the references of one statement's value."""
    always, some = [], []
    universe = ih.size_params([f"p_{s}" for s in func.size_symbols()], None)
    for ref, guards in guarded_refs(value):
        if ref.name not in types or not needs_exact_check(ref, guards):
            continue
        for k, (dim, idx) in enumerate(zip(types[ref.name].shape, ref.index)):
            if isinstance(idx, ir.Var) and not guards:
                continue
            for what, bad in bad_sizes(func, ranges, dim, idx, guards).items():
                if bad.is_empty():
                    continue
                req = Requirement(ref, k, what, bad)
                (always if universe.is_subset(bad) else some).append(req)
                break
    return always, some


@functools.lru_cache(maxsize=64)
def _func_requirements(func: ir.Func) -> tuple[Requirement, ...]:
    from gir.shapes import func_info

    info = func_info(func)
    out: list[Requirement] = []
    for st in info.stmts:
        out += requirements(func, info.types, st.stmt.value, st.ranges)[1]
    return tuple(out)


def check_sizes(func: ir.Func, sizes: dict[str, int]) -> None:
    """A located GirError if an index leaves its dimension at these sizes (all of the function's sizes bound)."""
    if func.is_explicit or any(s not in sizes for s in func.size_symbols()):
        return
    reqs = _func_requirements(func)
    if not reqs:
        return
    point = ih.size_params([f"p_{s}" for s in func.size_symbols()], {f"p_{s}": v for s, v in sizes.items()})
    for r in reqs:
        if not r.bad.intersect(point).is_empty():
            at = ", ".join(f"{s}={sizes[s]}" for s in func.size_symbols())
            idx = r.ref.index[r.axis]
            raise GirError(f"index of '{r.ref.name}' is out of bounds at these sizes ({at}): it can go {r.what}",
                           getattr(idx, "loc", None) or r.ref.loc,
                           [f"it leaves its dimension exactly when {_show(r.bad)}"])


def _show(bad) -> str:
    """The condition of an isl parameter set, in the user's size names."""
    text = str(bad).replace("p_", "")
    return text[text.index(":", text.index("{")) + 1:text.rindex("}")].strip() if "{" in text else text


def clamp_guarded(func: ir.Func, types: dict[str, ir.TensorType], value: ir.Expr,
                  ranges: dict[str, ir.Dim]) -> ir.Expr:
    """`value` with every guarded index that could leave its dimension without its guard clamped into it."""
    from gir.passes.builtin.exprs import map_expr

    fixes: dict[int, ir.Ref] = {}
    for ref, guards in guarded_refs(value):
        if not guards or ref.name not in types:
            continue
        index = list(ref.index)
        for k, (dim, idx) in enumerate(zip(types[ref.name].shape, ref.index)):
            if isinstance(idx, ir.Var):
                continue
            bad = bad_sizes(func, ranges, dim, idx, ())
            lo, hi = (not s.is_empty() for s in bad.values())
            if lo:
                idx = ir.Call("max", (idx, ir.Const(0)), loc=getattr(idx, "loc", None))
            if hi:
                top = ir.BinOp("-", ir.Var(dim) if isinstance(dim, str) else ir.Const(dim), ir.Const(1))
                idx = ir.Call("min", (idx, top), loc=getattr(idx, "loc", None))
            index[k] = idx
        if index != list(ref.index):
            fixes[id(ref)] = ir.Ref(ref.name, tuple(index), loc=ref.loc)
    if not fixes:
        return value
    return map_expr(value, lambda x: fixes.get(id(x), x) if isinstance(x, ir.Ref) else x)


def clamp_func(func: ir.Func) -> ir.Func:
    """`func` with every statement's guarded indices clamped (`clamp_guarded`), for lowerings that do not go
    through the IDFG (the MLU path)."""
    import dataclasses

    from gir.shapes import func_info

    if func.is_explicit:
        return func
    info = func_info(func)
    values = {id(st.stmt): clamp_guarded(func, info.types, st.stmt.value, st.ranges) for st in info.stmts}
    body = tuple(dataclasses.replace(x, value=values[id(x)]) if id(x) in values and values[id(x)] is not x.value
                 else x for x in func.body)
    return dataclasses.replace(func, body=body)
