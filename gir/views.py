"""Reshape views of function parameters: `x: f32[N, C, H, W] as [N, G, C / G, H * W]`.

A parameter (or result) may be declared with its external shape and viewed, inside the function, with another
shape of the same number of elements: any split or merge of axes of the row-major tensor. The bytes are the same,
so the body and everything compiled from it (the middle, the search, code generation, the simulators, the kernel
ABI of a pointer plus sizes) see only the view; the view costs no data movement. Only the boundary changes shape:
arrays are given and returned in the external shape and reshaped (numpy.reshape of a contiguous array: no copy).

A view dimension is an integer, a size name, or a product / exact quotient of them (`C / G`, `H * W`,
`C * H * W / G`). A compound dimension is a *derived size* of the function: `Param.type` names it by a mangled
identifier (`C_div_G`, `H_mul_W`), and `derived_sizes(func)` maps each such name to its expression over the
user's sizes. `complete_sizes` computes them (and checks every division is exact) wherever sizes are bound.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from gir import ir
from gir.errors import DiagnosticCollector, GirError

_MANGLE = {"*": "_mul_", "/": "_div_"}


# -------------------------------------------------------------------------------------------- building views
def check_dim_expr(e: ir.Expr) -> None:
    """GirError (at the offending part) unless `e` is an integer ≥ 1, a size name, or `*` / `/` of such."""
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        if e.value < 1:
            raise GirError(f"a view dimension must be at least 1, not {e.value}", e.loc)
        return
    if isinstance(e, ir.Var):
        return
    if isinstance(e, ir.BinOp) and e.op in _MANGLE:
        check_dim_expr(e.lhs)
        check_dim_expr(e.rhs)
        return
    raise GirError("a view dimension is an integer, a size name, or a product or exact quotient ('*', '/') of them",
                   e.loc, ["e.g. `x: f32[N, C, H, W] as [N, G, C / G, H * W]`"])


def dim_name(e: ir.Expr) -> ir.Dim:
    """The dimension of `Param.type` for view dimension `e`: an int, the size name, or a derived size name."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Var):
        return e.name
    names = _names(e)
    if not names:  # literal arithmetic (`2 * 3`) is just an integer, checked exact by `check_func`
        value = _value(e, {})
        return value if isinstance(value, int) else 0
    name = _mangle(e)
    return f"n{name}" if name[0].isdigit() else name   # (`2 * N`: an identifier, not `2_mul_N`)


def _mangle(e: ir.Expr) -> str:
    if isinstance(e, ir.BinOp):
        lhs = _mangle(e.lhs)
        rhs = _mangle(e.rhs)
        if isinstance(e.rhs, ir.BinOp):  # `C / (G * 2)` differs from `C / G * 2`
            rhs = f"L{rhs}R"
        return f"{lhs}{_MANGLE[e.op]}{rhs}"
    return str(e.value) if isinstance(e, ir.Const) else e.name


def make_view(outer: ir.TensorType, dims: tuple[ir.Expr, ...], loc) -> tuple[ir.TensorType, ir.View]:
    """(the type the body sees, the View record) of `outer as [dims]`."""
    for d in dims:
        check_dim_expr(d)
    inner = ir.TensorType(outer.dtype, tuple(dim_name(d) for d in dims), loc=loc)
    return inner, ir.View(outer, tuple(dims), loc=loc)


# ---------------------------------------------------------------------------------------------- the tables
def outer_type(p: ir.Param) -> ir.TensorType:
    """The declared (external) type of a parameter or result."""
    return p.view.outer if p.view is not None else p.type


def derived_sizes(func: ir.Func) -> dict[str, ir.Expr]:
    """{derived size name: its expression over the user's sizes}, in declaration order."""
    out: dict[str, ir.Expr] = {}
    for p in func.params + func.results:
        if p.view is not None:
            for d, e in zip(p.type.shape, p.view.dims):
                if isinstance(d, str) and not isinstance(e, ir.Var):
                    out.setdefault(d, e)
    return out


def user_sizes(func: ir.Func) -> tuple[str, ...]:
    """The sizes a binding may give: symbolic dims of declared types and the size names inside views."""
    seen: dict[str, None] = {}
    for p in func.params + func.results:
        for d in outer_type(p).shape:
            if isinstance(d, str):
                seen.setdefault(d)
        for e in p.view.dims if p.view is not None else ():
            for n in _names(e):
                seen.setdefault(n)
    derived = derived_sizes(func)
    for s in func.size_symbols():
        if s not in derived:
            seen.setdefault(s)
    return tuple(seen)


def param_sizes(p: ir.Param) -> list[str]:
    """The user's sizes that a parameter's declared type and view name (`N, C, H, W, G` above)."""
    names = [d for d in outer_type(p).shape if isinstance(d, str)]
    for e in p.view.dims if p.view is not None else ():
        names += [n for n in _names(e) if n not in names]
    return names


def has_views(func: ir.Func) -> bool:
    return any(p.view is not None for p in func.params + func.results)


# ------------------------------------------------------------------------------------------------ checking
def check_func(func: ir.Func, diag: DiagnosticCollector) -> None:
    """Static checks of every view: element counts agree as products of sizes, literal divisions are exact, a
    derived name collides with no size, and every size of a result is bound by the inputs or a view."""
    derived = derived_sizes(func)
    plain = set(user_sizes(func))
    for name in derived:
        if name in plain:
            diag.error(f"the view dimension {_text(derived[name])} is named '{name}' inside the function, which is "
                       "already a size", derived[name].loc, "rename that size")
    for p in func.params + func.results:
        if p.view is None:
            continue
        outer = _monomial(tuple(ir.Const(d) if isinstance(d, int) else ir.Var(d) for d in p.view.outer.shape))
        inner = _monomial(p.view.dims)
        if outer != inner:
            diag.error(f"view of '{p.name}' has {_count_text(inner)} elements, its declared type "
                       f"{_count_text(outer)}", p.view.loc,
                       "a view reshapes the same elements: the products of the dimensions must be equal")
        for e in p.view.dims:
            if not _names(e) and not isinstance(_value(e, {}), int):
                diag.error(f"view dimension {_text(e)} of '{p.name}' is not an integer", e.loc)
    bound = input_sizes(func)
    for r in func.results:
        if r.view is None:
            continue
        for d in r.view.outer.shape:
            if isinstance(d, str) and d not in bound:
                diag.error(f"size '{d}' of result '{r.name}' is not the size of any input",
                           r.view.outer.loc or r.loc, "every size must be known from the inputs' shapes or views")
        for e in r.view.dims:
            for n in _names(e):
                if n not in bound:
                    diag.error(f"size '{n}' in the view of result '{r.name}' is not the size of any input", e.loc,
                               "every size must be known from the inputs' shapes or views")


def input_sizes(func: ir.Func) -> set[str]:
    """The sizes a call binds: those of the inputs' types and views, and the derived sizes computed from them."""
    bound = {d for p in func.params for d in p.type.shape if isinstance(d, str)}
    for p in func.params:
        bound.update(param_sizes(p))
    bound.update(d for d, e in derived_sizes(func).items() if set(_names(e)) <= bound)
    return bound


def _monomial(dims) -> tuple:
    """The product of `dims` as (rational coefficient, sorted multiset of symbols with exponents)."""
    coef = Fraction(1)
    powers: dict[str, int] = {}

    def walk(e, sign):
        nonlocal coef
        if isinstance(e, ir.Const):
            coef = coef * Fraction(e.value) ** sign
        elif isinstance(e, ir.Var):
            powers[e.name] = powers.get(e.name, 0) + sign
        else:
            walk(e.lhs, sign)
            walk(e.rhs, sign if e.op == "*" else -sign)

    for e in dims:
        walk(e, 1)
    return coef, tuple(sorted((k, v) for k, v in powers.items() if v))


def _count_text(mono) -> str:
    coef, powers = mono
    parts = [str(coef)] if coef != 1 or not powers else []
    for k, v in powers:
        parts.append(k if v == 1 else f"{k}^{v}")
    return " * ".join(parts)


def _names(e: ir.Expr) -> list[str]:
    if isinstance(e, ir.Var):
        return [e.name]
    if isinstance(e, ir.BinOp):
        return _names(e.lhs) + [n for n in _names(e.rhs) if n not in _names(e.lhs)]
    return []


def _text(e: ir.Expr) -> str:
    from gir.printer import format_expr
    return format_expr(e)


def _value(e: ir.Expr, sizes: dict[str, int]) -> int | Fraction:
    """The value of a view dimension at `sizes`: an int, or a Fraction where a division is not exact."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Var):
        return sizes[e.name]
    a, b = _value(e.lhs, sizes), _value(e.rhs, sizes)
    if e.op == "*":
        return a * b
    q = Fraction(a) / Fraction(b)
    return int(q) if q.denominator == 1 and isinstance(a, int) else q


# ---------------------------------------------------------------------------------------------- binding
def complete_sizes(func: ir.Func, sizes: dict[str, int]) -> dict[str, int]:
    """Add to `sizes` (in place, and return it) every derived size whose operands are bound; GirError at the view
    dimension when a division is not exact, or when a derived size given already (by a view-shaped array)
    disagrees with its expression."""
    for name, e in derived_sizes(func).items():
        if not all(n in sizes for n in _names(e)):
            continue
        value = _value(e, sizes)
        at = ", ".join(f"{n}={sizes[n]}" for n in _names(e))
        if not isinstance(value, int):
            raise GirError(f"view dimension {_text(e)} is not an integer at these sizes ({at}): "
                           f"{_inexact(e, sizes)}", e.loc, ["a view must divide its dimensions exactly"])
        if sizes.setdefault(name, value) != value:
            raise GirError(f"view dimension {_text(e)} is {value} at these sizes ({at}), but an argument's "
                           f"shape gives {sizes[name]}", e.loc)
    return sizes


def _inexact(e: ir.Expr, sizes: dict[str, int]) -> str:
    """Which division is not exact: `C=10 is not divisible by G=4`."""
    if isinstance(e, ir.BinOp):
        for side in (e.lhs, e.rhs):
            if not isinstance(_value(side, sizes), int):
                return _inexact(side, sizes)
        if e.op == "/":
            return f"{_valued(e.lhs, sizes)} is not divisible by {_valued(e.rhs, sizes)}"
    return f"{_text(e)} is not an integer"


def _valued(e: ir.Expr, sizes: dict[str, int]) -> str:
    return _text(e) if isinstance(e, ir.Const) else f"{_text(e)} = {_value(e, sizes)}"


def _shape(ttype: ir.TensorType, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else sizes[d] for d in ttype.shape)


def bind_outer(func: ir.Func, arrays: dict, sizes: dict[str, int] | None = None) -> dict[str, int]:
    """A copy of `sizes` with the sizes that the arrays of viewed parameters give in their declared shape,
    completed (`complete_sizes`). Arrays of another rank are left for the caller's own shape check."""
    bound = dict(sizes or {})
    for p in func.params:
        if p.view is None or p.name not in arrays:
            continue
        shape = tuple(int(n) for n in np.shape(arrays[p.name]))
        if len(shape) != p.view.outer.rank or shape == _maybe_shape(p.type, bound):
            continue
        for d, n in zip(p.view.outer.shape, shape):
            if isinstance(d, str) and d not in bound and n >= 1:
                bound[d] = n
    return complete_sizes(func, bound)


def _maybe_shape(ttype: ir.TensorType, sizes: dict[str, int]):
    try:
        return _shape(ttype, sizes)
    except KeyError:
        return None


def to_view(func: ir.Func, arrays: dict, sizes: dict[str, int], params=None) -> dict:
    """`arrays` with each viewed parameter's array (in its declared or its view shape) reshaped to the view;
    GirError at the parameter when it has neither shape."""
    out = dict(arrays)
    for p in func.params if params is None else params:
        if p.view is None or p.name not in arrays:
            continue
        arr = arrays[p.name]
        shape, inner = tuple(np.shape(arr)), _maybe_shape(p.type, sizes)
        if shape == inner or shape != _maybe_shape(p.view.outer, sizes):
            continue  # already the view, or neither shape: the caller's check of the view's type reports it
        if inner is None:
            missing = [n for n in param_sizes(p) if n not in sizes]
            raise GirError(f"the view of '{p.name}' needs the size {', '.join(missing)}, which no input's shape "
                           "gives (bind it, e.g. with --sizes)", p.view.loc)
        out[p.name] = arr.reshape(inner)
    return out


def to_scheduled(func: ir.Func, arrays: dict, sizes: dict[str, int]) -> dict:
    """`arrays` (in the source's view shapes) seen in the shapes of the scheduled function `func`, whose views may
    merge axes (the MLU tile recipe): the same elements, reshaped where the element counts agree."""
    out = dict(arrays)
    for p in func.params:
        if p.view is None or p.name not in arrays:
            continue
        want = _maybe_shape(p.type, sizes)
        arr = arrays[p.name]
        if want is not None and tuple(np.shape(arr)) != want and int(np.size(arr)) == int(np.prod(want)):
            out[p.name] = np.reshape(arr, want)
    return out


def to_outer(func: ir.Func, results: dict, sizes: dict[str, int]) -> dict:
    """`results` (view-shaped) reshaped to each result's declared shape."""
    out = dict(results)
    for p in func.results:
        if p.view is not None and p.name in results:
            out[p.name] = results[p.name].reshape(_shape(p.view.outer, sizes))
    return out


def outer_shape(p: ir.Param, sizes: dict[str, int]) -> tuple[int, ...]:
    return _shape(outer_type(p), sizes)


__all__ = ["make_view", "outer_type", "derived_sizes", "user_sizes", "param_sizes", "has_views", "check_func", "complete_sizes",
           "bind_outer", "to_view", "to_outer", "outer_shape"]


def enter(func: ir.Func, inputs: dict | None, sizes: dict[str, int] | None) -> tuple[dict | None, dict | None]:
    """A runner's entry: arrays of viewed parameters may come in their declared shape, their view shape or the
    source's view shape when the schedule merged viewed axes (`to_scheduled`); returns the arrays in the view shape
    and the sizes with those the declared shapes give (unchanged without views)."""
    if not inputs or not has_views(func):
        return inputs, sizes
    bound = bind_outer(func, inputs, sizes)
    return to_scheduled(func, to_view(func, inputs, bound), bound), bound
