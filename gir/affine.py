"""Affine views of index expressions: `3*i + N - 1` → Affine({i: 3, N: 1}, -1).

Used to check constant slice lengths and to build isl/z3 access relations.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from gir import ir


@dataclass(frozen=True)
class Affine:
    coeffs: dict[str, int] = field(default_factory=dict)
    const: int = 0

    def __add__(self, other: "Affine") -> "Affine":
        coeffs = dict(self.coeffs)
        for k, v in other.coeffs.items():
            coeffs[k] = coeffs.get(k, 0) + v
        return Affine({k: v for k, v in coeffs.items() if v}, self.const + other.const)

    def scale(self, c: int) -> "Affine":
        return Affine({k: v * c for k, v in self.coeffs.items() if v * c}, self.const * c)

    def __sub__(self, other: "Affine") -> "Affine":
        return self + other.scale(-1)

    @property
    def is_const(self) -> bool:
        return not self.coeffs

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.coeffs.items())), self.const))

    def __str__(self) -> str:
        terms = [(f"{v}*{k}" if v != 1 else k) for k, v in sorted(self.coeffs.items())]
        if self.const or not terms:
            terms.append(str(self.const))
        return " + ".join(terms)


def to_affine(e: ir.Expr) -> Affine | None:
    """The affine form of an integer expression, or None if it is not affine."""
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            return None
        return Affine({}, e.value)
    if isinstance(e, ir.Var):
        return Affine({e.name: 1}, 0)
    if isinstance(e, ir.UnOp) and e.op == "-":
        inner = to_affine(e.operand)
        return None if inner is None else inner.scale(-1)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"):
        a, b = to_affine(e.lhs), to_affine(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if a.is_const:
            return b.scale(a.const)
        if b.is_const:
            return a.scale(b.const)
    return None


def slice_extent(start: ir.Expr, stop: ir.Expr) -> int | None:
    """stop - start when it is a constant, else None (memoized: the traffic count asks per lane and element). The
    key holds the types of the constants too: Const(0) == Const(0.0) == Const(False), but only the int is an
    index (a review found `v[0.0:4.0]` cached as no constant length, so a later `v[0:4]` failed verification)."""
    return _slice_extent(start, stop, _const_types(start), _const_types(stop))


def _const_types(e: ir.Expr) -> tuple:
    from gir.walk import walk
    return tuple(type(x.value) for x in walk(e) if isinstance(x, ir.Const))


@functools.lru_cache(maxsize=4096)
def _slice_extent(start: ir.Expr, stop: ir.Expr, *types) -> int | None:
    """stop - start when it is a constant, else None. Quotients, remainders and calls (min, max, cdiv) are opaque
    terms that cancel when both ends hold them alike (`(T - 1) * 8 .. (T - 1) * 8 + 8` with T = (N + 31) // 32:
    the last iteration of a software pipeline, passes/schedule_mlu/swpipe.py)."""
    from gir.printer import format_expr
    from gir.walk import map_expr
    atoms: dict[str, ir.Var] = {}

    def atom(x):
        if isinstance(x, ir.BinOp) and x.op in ("//", "%") or isinstance(x, ir.Call):
            return atoms.setdefault(format_expr(x), ir.Var(f"q{len(atoms)}'"))
        return x
    a, b = to_affine(map_expr(start, atom)), to_affine(map_expr(stop, atom))
    if a is None or b is None or not (b - a).is_const:
        return None
    return int((b - a).const)


def is_quasi_affine(e: ir.Expr) -> bool:
    """Affine, or built from affine parts with `//`, `%` and `cdiv` by constants, and min/max."""
    if to_affine(e) is not None:
        return True
    if isinstance(e, ir.BinOp):
        if e.op in ("//", "%"):
            return is_quasi_affine(e.lhs) and _is_pos_int(e.rhs)
        if e.op in ("+", "-"):
            return is_quasi_affine(e.lhs) and is_quasi_affine(e.rhs)
        if e.op == "*":
            return (is_quasi_affine(e.lhs) and _is_int(e.rhs)) or (_is_int(e.lhs) and is_quasi_affine(e.rhs))
    if isinstance(e, ir.UnOp) and e.op == "-":
        return is_quasi_affine(e.operand)
    if isinstance(e, ir.Call):
        if e.fn == "cdiv" and len(e.args) == 2:
            return is_quasi_affine(e.args[0]) and _is_pos_int(e.args[1])
        if e.fn in ("min", "max") and len(e.args) == 2:
            return all(is_quasi_affine(a) for a in e.args)
    return False


def index_form_error(e: ir.Expr, sizes: set[str]) -> tuple[str, object] | None:
    """Why an operator-layer index is not quasi-affine (message, location), or None when it is: affine in index
    variables and sizes, with `//` and `%` by positive integer constants. A division by a size (`d // N`) is
    refused: isl represents floor division only by constants, so bounds, races and traffic could not be exact."""
    if to_affine(e) is not None:
        return None
    if isinstance(e, ir.BinOp) and e.op in ("//", "%"):
        if isinstance(e.rhs, ir.Var) and e.rhs.name in sizes:
            return (f"'{e.op}' by the size {e.rhs.name} is not quasi-affine: an index may divide only by a positive "
                    "integer constant", e.loc)
        if not _is_pos_int(e.rhs):
            return f"'{e.op}' in an index needs a positive integer constant on its right", e.loc
        return index_form_error(e.lhs, sizes)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        return index_form_error(e.lhs, sizes) or index_form_error(e.rhs, sizes)
    if isinstance(e, ir.BinOp) and e.op == "*" and (_is_int(e.lhs) or _is_int(e.rhs)):
        return index_form_error(e.rhs if _is_int(e.lhs) else e.lhs, sizes)
    if isinstance(e, ir.UnOp) and e.op == "-":
        return index_form_error(e.operand, sizes)
    if isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2:
        return index_form_error(e.args[0], sizes) or index_form_error(e.args[1], sizes)
    return "an index must be an affine expression of index variables and sizes (with // and % by constants)", \
        getattr(e, "loc", None)


def guarded_refs(e: ir.Expr, guards: tuple = ()) -> list[tuple[ir.Ref, tuple]]:
    """Every tensor reference of `e` (not those inside indices) with the guards it is read under: a tuple of
    (condition, holds) pairs, one per enclosing `select` branch (`holds` False in the else branch)."""
    if isinstance(e, ir.Ref):
        return [(e, guards)]
    if isinstance(e, ir.Call) and e.fn == "select" and len(e.args) == 3:
        c, a, b = e.args
        return guarded_refs(c, guards) + guarded_refs(a, guards + ((c, True),)) \
            + guarded_refs(b, guards + ((c, False),))
    out: list = []
    for child in _children(e):
        out += guarded_refs(child, guards)
    return out


def _children(e) -> tuple:
    if isinstance(e, ir.BinOp):
        return (e.lhs, e.rhs)
    if isinstance(e, ir.UnOp):
        return (e.operand,)
    if isinstance(e, ir.Call):
        return tuple(e.args)
    if isinstance(e, ir.Reduce):
        return (e.arg,)
    return ()


def _is_int(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool)


def _is_pos_int(e: ir.Expr) -> bool:
    return _is_int(e) and e.value > 0


def free_vars(e) -> set[str]:
    """Names of Vars in an expression (not tensor names of Refs)."""
    out: set[str] = set()
    _collect(e, out)
    return out


def _collect(e, out: set[str]) -> None:
    if isinstance(e, ir.Var):
        out.add(e.name)
    elif isinstance(e, ir.Ref):
        for i in e.index:
            _collect(i, out)
    elif isinstance(e, ir.Slice):
        _collect(e.start, out)
        _collect(e.stop, out)
    elif isinstance(e, ir.BinOp):
        _collect(e.lhs, out)
        _collect(e.rhs, out)
    elif isinstance(e, ir.UnOp):
        _collect(e.operand, out)
    elif isinstance(e, ir.Call):
        for a in e.args:
            _collect(a, out)
    elif isinstance(e, ir.Reduce):
        _collect(e.arg, out)


def eval_int(e: ir.Expr, env: dict[str, int]) -> int:
    """Evaluate an integer index expression with all names bound."""
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.UnOp) and e.op == "-":
        return -eval_int(e.operand, env)
    if isinstance(e, ir.BinOp):
        a, b = eval_int(e.lhs, env), eval_int(e.rhs, env)
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0, "%": a % b if b else 0}[e.op]
    if isinstance(e, ir.Call) and len(e.args) == 2:
        a, b = eval_int(e.args[0], env), eval_int(e.args[1], env)
        if e.fn == "cdiv":
            return -(-a // b)
        if e.fn == "min":
            return min(a, b)
        if e.fn == "max":
            return max(a, b)
    raise ValueError(f"not an integer expression: {e!r}")
