"""Value kinds (float, int, bool) of operator-layer expressions, and the checks that go with them."""
from __future__ import annotations

from gir import ir
from gir.errors import DiagnosticCollector
from gir.scan import SCANS

KNOWN_FUNCS = {**{f: 1 for f in ir.UNARY_FUNCS}, "max": 2, "min": 2, "pow": 2, "select": 3, "clamp": 3,
               **{c: 1 for c in ir.CASTS}}
KIND_FLOAT, KIND_INT, KIND_BOOL = "float", "int", "bool"


class KindChecker:
    """Mixin for the function analyzer: needs `self.diag` and `self.types`."""

    def expr_kind(self, e, index_vars: set[str]) -> str:
        k = self._kind(e, index_vars)
        return k or KIND_FLOAT

    def _kind(self, e, iv) -> str | None:
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                return KIND_BOOL
            check_literal(e, self.diag, getattr(self, "f64_arithmetic", False))
            return KIND_INT if isinstance(e.value, int) else KIND_FLOAT
        if isinstance(e, ir.Var):
            return KIND_INT
        if isinstance(e, ir.Ref):
            t = self.types.get(e.name)
            if t is None:
                return None
            return KIND_BOOL if t.dtype == ir.DType.bool else KIND_FLOAT if t.dtype.is_float else KIND_INT
        if isinstance(e, ir.UnOp):
            k = self._kind(e.operand, iv)
            if e.op == "not":
                self._need(k, KIND_BOOL, e, "'not' needs a boolean operand")
                return KIND_BOOL
            self._no_bool(k, e, "unary '-'")
            return k
        if isinstance(e, ir.BinOp):
            a, b = self._kind(e.lhs, iv), self._kind(e.rhs, iv)
            if e.op in ("and", "or"):
                self._need(a, KIND_BOOL, e.lhs, f"'{e.op}' needs boolean operands")
                self._need(b, KIND_BOOL, e.rhs, f"'{e.op}' needs boolean operands")
                return KIND_BOOL
            if e.op in ir.COMPARISONS:
                if e.op not in ("==", "!="):
                    self._no_bool(a, e.lhs, f"'{e.op}'")
                    self._no_bool(b, e.rhs, f"'{e.op}'")
                return KIND_BOOL
            self._no_bool(a, e.lhs, f"'{e.op}'")
            self._no_bool(b, e.rhs, f"'{e.op}'")
            if e.op in ("//", "%") and KIND_FLOAT in (a, b):
                self.diag.error(f"'{e.op}' needs integer operands", e.loc)
            if e.op == "/":
                return KIND_FLOAT
            return KIND_FLOAT if KIND_FLOAT in (a, b) else KIND_INT
        if isinstance(e, ir.Reduce):
            k = self._kind(e.arg, iv)
            if e.op in ir.ARG_REDUCTIONS:
                return KIND_INT   # the position along the reduced index; any operand kind (bool: first true)
            if e.op not in ("max", "min"):  # max/min of booleans: any/all
                self._no_bool(k, e, f"{e.op}()")
            return KIND_FLOAT if e.op == "mean" else k
        if isinstance(e, ir.Call):
            return self._call_kind(e, iv)
        return None

    def _call_kind(self, e: ir.Call, iv) -> str | None:
        kinds = [self._kind(a, iv) for a in e.args]
        if e.fn in ir.REDUCTIONS and e.fn not in ("max", "min"):
            self.diag.error(f"{e.fn}() takes exactly one argument", e.loc)
            return None
        if e.fn in SCANS:  # cumsum(E, axis, exclusive, reverse): the kind of E (gir/scan.py)
            self._no_bool(kinds[0], e.args[0], f"{e.fn}()")
            return kinds[0]
        if e.fn not in KNOWN_FUNCS:
            self.diag.error(f"unknown function '{e.fn}'", e.loc, "known: " + ", ".join(sorted(KNOWN_FUNCS)))
            return None
        if e.fn in ("max", "min") and len(e.args) not in (1, 2):
            self.diag.error(f"{e.fn}() takes one argument (a reduction) or two (element-wise)", e.loc)
            return None
        if len(e.args) != KNOWN_FUNCS[e.fn]:
            self.diag.error(f"{e.fn}() takes {KNOWN_FUNCS[e.fn]} argument(s), got {len(e.args)}", e.loc)
            return None
        if e.fn in ir.CASTS:
            return KIND_BOOL if e.fn == "bool" else KIND_FLOAT if ir.DType(e.fn).is_float else KIND_INT
        if e.fn == "select":
            self._need(kinds[0], KIND_BOOL, e.args[0], "select() needs a boolean condition")
            if (kinds[1] == KIND_BOOL) != (kinds[2] == KIND_BOOL):
                self.diag.error("select() branches must both be boolean or both numeric", e.loc)
            return KIND_FLOAT if KIND_FLOAT in kinds[1:] else kinds[1]
        for k, a in zip(kinds, e.args):
            self._no_bool(k, a, f"{e.fn}()")
        if e.fn in ir.KIND_PRESERVING_FUNCS:
            return KIND_FLOAT if KIND_FLOAT in kinds else kinds[0]
        return KIND_FLOAT

    def _need(self, k, want, e, msg) -> None:
        if k is not None and k != want:
            self.diag.error(msg, getattr(e, "loc", None))

    def _no_bool(self, k, e, what) -> None:
        if k == KIND_BOOL:
            self.diag.error(f"{what} does not take boolean operands", getattr(e, "loc", None),
                            "convert with f32(...) or use select()")


F32_MAX = 3.4028234663852886e38


def check_literal(c: ir.Const, diag: DiagnosticCollector, f64: bool = False) -> None:
    """Float arithmetic is done in f32 (in f64 in a statement that reads f64 or casts to it: any finite double is
    fine there): a finite literal beyond its range would silently become inf."""
    if isinstance(c.value, float) and c.value == c.value and abs(c.value) != float("inf") and abs(c.value) > F32_MAX \
            and not f64:
        diag.error(f"literal {c.value!r} overflows f32, the type floating-point arithmetic is done in", c.loc,
                   "write inf if you mean infinity",
                   "a statement that reads an f64 tensor or casts to f64 computes in f64, where it fits")


I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def check_i32_literals(e: ir.Expr, diag: DiagnosticCollector) -> None:
    """Integer arithmetic without an i64 operand is done in i32: a literal beyond its range would wrap.
    Indices (inside `[...]`) are not values and are not checked here."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Const) and isinstance(x.value, int) and not isinstance(x.value, bool):
            if not I32_MIN <= x.value <= I32_MAX:
                diag.error(f"integer literal {x.value} overflows i32, the type this integer arithmetic is done in",
                           x.loc, "use an i64 operand (e.g. i64(...)) or a floating-point literal")
        elif isinstance(x, ir.UnOp):
            stack.append(x.operand)
        elif isinstance(x, ir.BinOp):
            stack += [x.lhs, x.rhs]
        elif isinstance(x, ir.Call):
            if x.fn != "i64":
                stack += list(x.args)
        elif isinstance(x, ir.Reduce):
            stack.append(x.arg)
