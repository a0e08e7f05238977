"""The one door to islpy: GIR index expressions → isl syntax, sets, maps and point counts.

Everything else in `passes.analysis` builds isl objects through these helpers, so the
spelling of isl's string syntax lives in one place.

`count` does not use isl's `count_val`, which visits every point (minutes at benchmark sizes):
`count_set` splits the set into disjoint basic sets with explicit divisions, turns each into
linear constraints (a division d = floor(f/q) becomes 0 <= f - q*d < q) and counts them with
`passes.analysis.lattice_count`.
"""
from __future__ import annotations

import islpy as isl

from gir import ir
from gir.passes.analysis.lattice_count import Unbounded, count_cons

_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "!="}


class NotAffine(ValueError):
    """The expression cannot be written in isl's quasi-affine syntax."""


def expr(e: ir.Expr, names: dict[str, str] | None = None) -> str:
    """An integer quasi-affine GIR expression in isl syntax (variables renamed by `names`)."""
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            raise NotAffine(f"not an integer: {e.value!r}")
        return str(e.value) if e.value >= 0 else f"({e.value})"
    if isinstance(e, ir.Var):
        return names.get(e.name, e.name) if names else e.name
    if isinstance(e, ir.UnOp) and e.op == "-":
        return f"(-{expr(e.operand, names)})"
    if isinstance(e, ir.BinOp):
        if e.op in ("+", "-", "*"):
            return f"({expr(e.lhs, names)} {e.op} {expr(e.rhs, names)})"
        if e.op == "//":
            return f"floor(({expr(e.lhs, names)})/{_pos_const(e.rhs)})"
        if e.op == "%":
            return f"(({expr(e.lhs, names)}) mod {_pos_const(e.rhs)})"
    if isinstance(e, ir.Call) and len(e.args) == 2:
        if e.fn == "cdiv":
            return f"ceil(({expr(e.args[0], names)})/{_pos_const(e.args[1])})"
        if e.fn in ("min", "max"):
            return f"{e.fn}({expr(e.args[0], names)}, {expr(e.args[1], names)})"
    raise NotAffine(f"not quasi-affine: {e!r}")


def cond(e: ir.Expr, names: dict[str, str] | None = None) -> str:
    """A boolean condition over integers in isl syntax."""
    if isinstance(e, ir.Const) and isinstance(e.value, bool):
        return "1 = 1" if e.value else "1 = 0"
    if isinstance(e, ir.BinOp):
        if e.op in _CMP:
            return f"({expr(e.lhs, names)} {_CMP[e.op]} {expr(e.rhs, names)})"
        if e.op in ("and", "or"):
            return f"({cond(e.lhs, names)} {e.op} {cond(e.rhs, names)})"
    if isinstance(e, ir.UnOp) and e.op == "not":
        return f"(not {cond(e.operand, names)})"
    raise NotAffine(f"not an affine condition: {e!r}")


def _pos_const(e: ir.Expr) -> int:
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) and e.value > 0:
        return e.value
    raise NotAffine("division by a non-constant")


def params_prefix(params: tuple[str, ...] | list[str]) -> str:
    return f"[{', '.join(params)}] -> " if params else ""


def make_set(params, space: str, dims: list[str], constraints: list[str]) -> isl.Set:
    body = " and ".join(constraints) if constraints else "1 = 1"
    return _read(isl.Set, f"{params_prefix(params)}{{ {space}[{', '.join(dims)}] : {body} }}")


def _read(kind, text: str):
    """Parse isl text; a constraint isl cannot read (a product of two variables, e.g. from a user's `if b * N + t
    < 5`) is NotAffine, which the analyses turn into a warning or a fallback instead of a crash. Memoized by text
    (the checks of one kernel build the same sets and maps again). Every islpy operation returns a new object, so
    sharing one keeps its meaning; isl may still rewrite a shared object's internal form (e.g. drop redundant
    constraints when it is simplified), so what depends on the form -- a sampled counterexample -- can differ
    with what ran before in the process (a review compared cold and warm diagnostics of 16 kernels: identical)."""
    key = (kind, text)
    hit = _READ.get(key)
    if hit is None:
        try:
            hit = kind(text)
        except isl.Error as e:
            hit = NotAffine(f"isl cannot read {text!r}: {e}")
        if len(_READ) >= READ_ENTRIES:
            _READ.clear()
        _READ[key] = hit
    if isinstance(hit, NotAffine):
        raise NotAffine(*hit.args) from None
    return hit


READ_ENTRIES = 8192
_READ: dict = {}


def clear_memo() -> None:
    _READ.clear()


def make_map(params, src: str, src_dims: list[str], dst: str, dst_exprs: list[str],
             exists: list[str], constraints: list[str]) -> isl.Map:
    """`{ src[dims] -> dst[o0, ...] : exists (ex: o_k = dst_exprs[k] and constraints) }`."""
    outs = [f"__o{k}" for k in range(len(dst_exprs))]
    eqs = [f"{o} = {x}" for o, x in zip(outs, dst_exprs)]
    body = " and ".join(eqs + constraints) if eqs + constraints else "1 = 1"
    if exists:
        body = f"exists ({', '.join(exists)}: {body})"
    text = f"{params_prefix(params)}{{ {src}[{', '.join(src_dims)}] -> {dst}[{', '.join(outs)}] : {body} }}"
    return _read(isl.Map, text)


def size_params(params, sizes: dict[str, int] | None) -> isl.Set:
    """The parameter set: every size >= 1, fixed where `sizes` gives a value."""
    cons = [f"{p} >= 1" for p in params]
    cons += [f"{p} = {sizes[p]}" for p in params if sizes and p in sizes]
    return _read(isl.Set, f"{params_prefix(params)}{{ : {' and '.join(cons) if cons else '1 = 1'} }}")


def count(obj: isl.Set | isl.Map, params, sizes: dict[str, int] | None) -> int:
    """Number of points of a set (or pairs of a map) with every size fixed by `sizes`."""
    missing = [p for p in params if not sizes or p not in sizes]
    if missing:
        raise ValueError(f"counting needs values for the sizes {', '.join(missing)}")
    s = obj.wrap() if isinstance(obj, isl.Map) else obj
    s = s.intersect_params(size_params(params, sizes))
    try:
        return count_set(s, sizes)
    except (Unbounded, isl.Error):  # no finite box (or no explicit division): let isl enumerate
        return int(s.count_val().to_python())


def is_empty(obj) -> bool:
    return obj.is_empty()


def sample(s: isl.Set) -> dict[str, int] | None:
    """One point of a non-empty set as {dim or param name: value}, or None if it is empty."""
    if s.is_empty():
        return None
    pt = s.sample_point()
    out = {}
    for kind in (isl.dim_type.param, isl.dim_type.set):
        for k in range(s.dim(kind)):
            out[s.get_dim_name(kind, k)] = int(pt.get_coordinate_val(kind, k).to_python())
    return out


# ------------------------------------------------------- exact counting without enumeration
def _i(v: isl.Val) -> int:
    return int(v.to_python())


def count_set(s: isl.Set, values: dict[str, int]) -> int:
    """Number of points of `s` with every parameter fixed by `values`."""
    return sum(count_basic(bs, values) for bs in s.compute_divs().make_disjoint().get_basic_sets())


def count_basic(bs: isl.BasicSet, values: dict[str, int]) -> int:
    """Points of one basic set (divisions known), parameters fixed by `values`."""
    P, S, D = isl.dim_type.param, isl.dim_type.set, isl.dim_type.div
    npar, nset, ndiv = bs.dim(P), bs.dim(S), bs.dim(D)
    pvals = [values[bs.get_dim_name(P, k)] for k in range(npar)]

    def row(get, set_kind, scale=1):
        const = _i(get.get_constant_val() * scale)
        const += sum(_i(get.get_coefficient_val(P, k) * scale) * pvals[k] for k in range(npar))
        coeffs = {}
        for kind, n, off in ((set_kind, nset, 0), (D, ndiv, nset)):
            for k in range(n):
                a = _i(get.get_coefficient_val(kind, k) * scale)
                if a:
                    coeffs[off + k] = a
        return coeffs, const

    cons = [(*row(c, S), c.is_equality()) for c in bs.get_constraints()]
    ls = bs.get_local_space()
    for k in range(ndiv):  # d = floor(f / den)  <=>  0 <= f - den*d <= den - 1
        aff = ls.get_div(k)
        den = _i(aff.get_denominator_val())
        f, c0 = row(aff, isl.dim_type.in_, den)
        f[nset + k] = f.get(nset + k, 0) - den
        f = {v: a for v, a in f.items() if a}
        cons.append((f, c0, False))
        cons.append(({v: -a for v, a in f.items()}, den - 1 - c0, False))
    return count_cons(cons, {v: (None, None) for v in range(nset + ndiv)})
