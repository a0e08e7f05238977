"""Row-model analysis of an operator-layer function for the MLU scheduler.

A function fits the row model when every tensor is one of
  full  [M, N]  indexed (i, j)  -- i a row variable, j a column (reduced or output) variable,
  row   [M]     indexed (i,),
  col   [N]     indexed (j,)   (per-column parameters such as gamma, bias),
  scalar []     indexed (),
all float, and every reduction reduces exactly the column variable. The analysis turns each statement into
three-address `Op`s on values of those kinds; `lower_rows` turns the ops into explicit MLU GIR.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gir import ir
from gir.passes.schedule_mlu.constfold import fold
from gir.passes.schedule_mlu.exactdiv import count_scale
from gir.shapes import func_info
from gir.walk import walk

FULL, ROW, COL, SCALAR, CONST = "full", "row", "col", "scalar", "const"
UNARY = ir.UNARY_FUNCS   # each a vector op of its own (codegen/mlu/vecops.py: __bang_active_<fn>)
BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "max": "max", "min": "min", "pow": "pow",
          "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}   # compares give 1.0 / 0.0


class NotRowModel(Exception):
    """The function does not fit the row model (the scheduler falls back)."""


@dataclass(frozen=True)
class Val:
    kind: str          # full row col scalar const
    name: str = ""     # value name (tensor or temporary); const: ""
    const: float = 0.0


@dataclass(frozen=True)
class Op:
    """dst = fn(args): fn is a BINOPS value, a UNARY name, 'copy', 'f32' (widening cast) or 'rsum'/'rmax'/'rmin'
    (row reduction of one full value)."""
    dst: Val
    fn: str
    args: tuple[Val, ...]


@dataclass
class RowModel:
    func: ir.Func
    m: int
    n: int
    ops: list[Op]
    inputs: dict[str, str]     # param name -> kind
    outputs: dict[str, str]    # result name -> kind
    dtypes: dict[str, ir.DType]
    temps: dict[str, str]      # temporary/intermediate name -> kind


def _dim(d, sizes):
    return d if isinstance(d, int) else sizes[d]


def analyze_rows(func: ir.Func, sizes: dict[str, int]) -> RowModel:
    from gir.errors import GirError

    try:
        info = func_info(func)
    except GirError as e:   # e.g. an index value on the row axis seen as a column index by indexops.py
        raise NotRowModel(f"not a row-model function: {e.diagnostics[0].message if e.diagnostics else e}") from None
    params = {p.name: p for p in func.params + func.results}
    for p in params.values():
        if not p.type.dtype.is_float and p.type.dtype not in (ir.DType.i32, ir.DType.bool):   # i32 / bool: 0/1
            raise NotRowModel(f"'{p.name}' is {p.type.dtype.value}")
    m = n = None
    kinds: dict[str, str] = {}
    for p in params.values():
        shape = [_dim(d, sizes) for d in p.type.shape]
        if len(shape) == 2:
            if m is None:
                m, n = shape
            elif (m, n) != tuple(shape):
                raise NotRowModel("full tensors of different shapes")
            kinds[p.name] = FULL
        elif len(shape) > 2:
            raise NotRowModel("rank > 2")
    if m is None:
        raise NotRowModel("no [M, N] tensor")
    b = _Builder(m, n, info, kinds, sizes)
    for st in info.stmts:
        b.stmt(st)
    for p in func.params + func.results:
        shape = [_dim(d, sizes) for d in p.type.shape]
        k = kinds.get(p.name)
        want = {FULL: [m, n], ROW: [m], COL: [n], SCALAR: []}.get(k)
        if k is not None and want != shape:
            raise NotRowModel(f"'{p.name}' has shape {shape}, expected {want} for a {k} tensor")
    return RowModel(func, m, n, b.ops, {p.name: kinds.get(p.name, SCALAR) for p in func.params},
                    {p.name: kinds[p.name] for p in func.results}, {p.name: p.type.dtype for p in params.values()},
                    b.temps)


class _Builder:
    def __init__(self, m, n, info, kinds, sizes):
        self.m, self.n, self.info, self.kinds, self.sizes = m, n, info, kinds, sizes
        self.ops: list[Op] = []
        self.temps: dict[str, str] = {}
        self.count = 0

    def fresh(self, kind: str) -> Val:
        """A temporary named `v<k>` that no tensor of the function is named (a user's `v1` overwritten by the
        temporary of `x - r` gave wrong values once kernels computed a pass's values before its reductions)."""
        self.count += 1
        while f"v{self.count}" in self.info.types:
            self.count += 1
        name = f"v{self.count}"
        self.temps[name] = kind
        return Val(kind, name)

    def stmt(self, st) -> None:
        out = st.out_vars
        if len(out) == 2:
            row, col, kind = out[0], out[1], FULL
        elif len(out) == 1:
            row, col, kind = out[0], None, ROW
        else:
            raise NotRowModel("scalar result")
        self.reduce_no = 0
        self.st = st
        val = self.expr(st.stmt.value, row, col)
        if _rank(val.kind) > _rank(kind):
            raise NotRowModel("value has more axes than its target")
        name = st.stmt.target.name
        if name in self.kinds and self.kinds[name] != kind:
            raise NotRowModel(f"'{name}' used as {self.kinds[name]} and {kind}")
        self.kinds[name] = kind
        if name not in self.info.func.results and all(p.name != name for p in self.info.func.params):
            self.temps[name] = kind
        last = self.ops[-1] if self.ops else None
        if last is not None and last.dst == val and val.kind == kind and val.name in self.temps \
                and val.name.startswith("v"):
            del self.temps[val.name]           # the statement's value is computed straight into its target
            self.ops[-1] = Op(Val(kind, name), last.fn, last.args)
        else:
            self.ops.append(Op(Val(kind, name), "copy", (val,)))

    def expr(self, e, row, col) -> Val:
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                raise NotRowModel("bool constant")
            return Val(CONST, const=float(e.value))
        if isinstance(e, ir.Var):
            if e.name in self.sizes:
                return Val(CONST, const=float(self.sizes[e.name]))
            raise NotRowModel("index variable used as a value")
        if isinstance(e, ir.Ref):
            return self.ref(e, row, col)
        if isinstance(e, ir.UnOp):
            if e.op != "-":
                raise NotRowModel("logical not")
            return self.apply("neg", [self.expr(e.operand, row, col)])
        if isinstance(e, ir.BinOp):
            if e.op in ("//", "%"):
                return self.floordiv(e, row, col)
            if e.op not in BINOPS:
                raise NotRowModel(f"operator {e.op}")
            self._exact_ints(e)
            if e.op == "!=" and const_is(e.rhs, 0) and boolean_value(e.lhs, self.info.types):
                return self.expr(e.lhs, row, col)   # a 0 / 1 value is its own `!= 0` (boolarith.py's and / or)
            return self.apply(BINOPS[e.op], [self.expr(e.lhs, row, col), self.expr(e.rhs, row, col)])
        if isinstance(e, ir.Call):
            if e.fn == "bool" and self._exact(e.args[0]) and not boolean_value(e.args[0], self.info.types):
                # bool of an integer value: 1.0 where it is non-zero (the value itself only for 0 / 1 values)
                return self.apply("ne", [self.expr(e.args[0], row, col), Val(CONST, const=0.0)])
            if e.fn in ("f32",) or (e.fn in ("i32", "bool") and self._exact(e.args[0])):
                return self.expr(e.args[0], row, col)   # i32/bool of a bool or int value: the same float value
            if e.fn == "i32":   # of a float value: truncated toward zero (as numpy's astype)
                return self.trunc(e, self.expr(e.args[0], row, col))
            if e.fn in UNARY:
                return self.apply(e.fn, [self.expr(e.args[0], row, col)])
            if e.fn in ("f16", "bf16"):   # rounded to the 16-bit type, computed on in f32 (vecops `round16`)
                a = self.expr(e.args[0], row, col)
                if a.kind == CONST:
                    return Val(CONST, const=float(np.asarray(a.const).astype(ir.DType(e.fn).numpy)))
                return self.apply(e.fn, [a])
            if e.fn == "clamp" and len(e.args) == 3:   # min(max(x, lo), hi): two vector ops (NaN propagates)
                x, lo, hi = (self.expr(a, row, col) for a in e.args)
                return self.apply("min", [self.apply("max", [x, lo]), hi])
            if e.fn == "select" and len(e.args) == 3:   # select(cond, a, b): cond is a 1.0 / 0.0 value
                if const_is(e.args[1], 1) and const_is(e.args[2], 0) and boolean_value(e.args[0], self.info.types):
                    return self.expr(e.args[0], row, col)   # select(x > 0, 1, 0) is the compare's own 1.0 / 0.0
                return self.apply("select", [self.expr(a, row, col) for a in e.args])
            if e.fn in BINOPS and len(e.args) == 2:
                return self.apply(BINOPS[e.fn], [self.expr(a, row, col) for a in e.args])
            raise NotRowModel(f"function {e.fn}")
        if isinstance(e, ir.Reduce):
            bound = self.st.reduce_vars.get(self.reduce_no, ())
            self.reduce_no += 1
            if len(bound) != 1 or col is not None:
                raise NotRowModel("reduction not over exactly the column axis")
            arg = self.expr(e.arg, row, bound[0])
            if arg.kind != FULL:
                arg = self.apply("add", [arg, Val(CONST, const=0.0)], force=FULL)
            if e.op not in ("sum", "max", "min", "mean"):
                raise NotRowModel(f"reduction {e.op}")
            from gir.passes.schedule_mlu.iotas import exact_int_sum   # (iotas imports indexops, which imports us)
            if e.op == "sum" and not exact_int_sum(e.arg, self.n, self.info.types):
                raise NotRowModel("a sum of integers f32 may round (beyond 2^24)")
            dst = self.fresh(ROW)
            self.ops.append(Op(dst, "r" + ("sum" if e.op == "mean" else e.op), (arg,)))
            if e.op == "mean":   # (exactdiv.py: by the count where a step function reads the mean)
                op, c = count_scale(self.n)
                return self.apply(BINOPS[op], [dst, Val(CONST, const=c)])
            return dst
        raise NotRowModel(f"expression {type(e).__name__}")

    def _exact(self, e) -> bool:
        """`e` is bool- or int-valued (compares, bool/i32 tensors), so an i32/bool cast does not change it."""
        if isinstance(e, ir.Ref):
            if e.name in ("cj_", "ri_"):   # index values (indexops.py): integers, exact in f32 up to 2^24
                return max(self.m, self.n) <= 1 << 24
            t = self.info.types.get(e.name)
            return t is not None and t.dtype in (ir.DType.bool, ir.DType.i32)
        if isinstance(e, ir.Const):
            return isinstance(e.value, int) and abs(e.value) <= 1 << 24
        if isinstance(e, ir.Reduce):   # the extreme of integers (argmax's first position, passes/builtin/argreduce)
            return e.op in ("max", "min") and self._exact(e.arg)
        if isinstance(e, ir.Call) and e.fn == "select":
            return self._exact(e.args[1]) and self._exact(e.args[2])
        if isinstance(e, ir.Call) and e.fn in ("i32", "bool"):
            return self._exact(e.args[0])
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*"):   # integers of integers (exact below 2^24)
            return self._exact(e.lhs) and self._exact(e.rhs)
        return isinstance(e, ir.BinOp) and e.op in ir.COMPARISONS

    def floordiv(self, e: ir.BinOp, row, col) -> Val:
        """`a // b` and `a % b` of integers by a positive constant b (floor division and modulo, as numpy) on f32
        values: q = floor((a + 0.5) / b), a % b = a - q b. (a + 0.5) / b lies at least 0.5 / b from an integer,
        which its rounding cannot cross while |a| < 2^23 (checked from the operands' ranges)."""
        b = self.expr(e.rhs, row, col)
        if b.kind != CONST or b.const <= 0 or b.const != int(b.const):
            raise NotRowModel(f"'{e.op}' by a value other than a positive integer constant")
        if self._bound(e.lhs) >= 1 << 23:
            raise NotRowModel(f"'{e.op}' of an integer that may reach 2^23 (not exact on f32 values)")
        a = self.expr(e.lhs, row, col)
        if a.kind == CONST:
            return Val(CONST, const=float(np.floor_divide(a.const, b.const) if e.op == "//" else
                                          np.mod(a.const, b.const)))
        q = self.apply("floor", [self.apply("div", [self.apply("add", [a, Val(CONST, const=0.5)]), b])])
        if e.op == "//":
            return q
        return self.apply("sub", [a, self.apply("mul", [q, b])])

    def _exact_ints(self, e: ir.BinOp) -> None:
        """Integer arithmetic of index values is computed on f32 values: refused (the scalar kernel's exact int)
        where it may reach 2^24 and its value must be exact -- stored to an integer result or compared."""
        compare = e.op in ir.COMPARISONS
        if not (compare or (e.op in ("+", "-", "*") and
                            not self.info.types[self.st.stmt.target.name].dtype.is_float)):
            return
        for x in ((e.lhs, e.rhs) if compare else (e,)):
            b = self._bound(x)
            if b != float("inf") and b >= 1 << 24:
                raise NotRowModel("integer arithmetic of index values that may reach 2^24 (not exact on f32 values)")

    def _bound(self, e) -> float:
        """An upper bound of |e| for an integer expression of index values, sizes and integer constants (inf for
        anything else: tensors may hold any value)."""
        if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return abs(e.value)
        if isinstance(e, ir.Var) and e.name in self.sizes:
            return abs(self.sizes[e.name])
        if isinstance(e, ir.Ref) and e.name in ("cj_", "ri_"):
            return max(self.m, self.n)
        if isinstance(e, ir.UnOp) and e.op == "-":
            return self._bound(e.operand)
        if isinstance(e, ir.Call) and e.fn == "i32":
            return self._bound(e.args[0])
        if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*", "//", "%"):
            a, b = self._bound(e.lhs), self._bound(e.rhs)
            return a + b if e.op in ("+", "-") else a * b if e.op == "*" else a if e.op == "//" else b
        return float("inf")

    def trunc(self, e: ir.Call, a: Val) -> Val:
        """`i32(a)` of a float value `a`: the statement's whole value stored to an i32 result that no statement
        reads is truncated by the store's conversion (`__bang_float2int32`) alone; elsewhere (an intermediate, or a
        result read again on chip as its f32 tile) select(a < 0, ceil(a), floor(a))."""
        target = self.st.stmt.target.name
        results = {p.name for p in self.info.func.results}
        read = any(isinstance(x, ir.Ref) and x.name == target for st in self.info.stmts for x in walk(st.stmt.value))
        if e is self.st.stmt.value and self.info.types[target].dtype == ir.DType.i32 and target in results \
                and not read:
            return a
        if a.kind == CONST:
            return Val(CONST, const=float(np.trunc(a.const)))
        neg = self.apply("lt", [a, Val(CONST, const=0.0)])
        return self.apply("select", [neg, self.apply("ceil", [a]), self.apply("floor", [a])])

    def ref(self, e: ir.Ref, row, col) -> Val:
        idx = []
        for i in e.index:
            if not isinstance(i, ir.Var):
                raise NotRowModel("non-trivial index")
            idx.append(i.name)
        pattern = {(): SCALAR, (row,): ROW, (col,): COL, (row, col): FULL}
        kind = pattern.get(tuple(idx)) if None not in idx else None
        if kind is None or (col is None and kind in (COL, FULL)):
            raise NotRowModel(f"access pattern {e.name}{idx}")
        known = self.kinds.setdefault(e.name, kind)
        if known != kind:
            raise NotRowModel(f"'{e.name}' used as {known} and {kind}")
        return Val(kind, e.name)

    def apply(self, fn, args, force=None) -> Val:
        if all(a.kind == CONST for a in args) and force is None:
            value = fold(fn, [a.const for a in args])   # (constfold.py: `(2.0 + 3.3)`, `neg(1.25)`)
            if value is None:
                raise NotRowModel("constant expression")
            return Val(CONST, const=value)
        kind = max((a.kind for a in args), key=_rank)
        if {a.kind for a in args} >= {ROW, COL}:
            kind = FULL
        kind = force or kind
        dst = self.fresh(kind)
        self.ops.append(Op(dst, fn, tuple(args)))
        return dst


def const_is(e, v: int) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, bool) and e.value == v


def boolean_value(e, types: dict) -> bool:
    """`e` is 1.0 or 0.0 in the row model: a compare, a bool tensor (loaded as 0/1), an i32 / bool cast of one, or
    a product, maximum or minimum of two (boolarith.py's `and` / `or`)."""
    if isinstance(e, ir.BinOp):
        return e.op in ir.COMPARISONS or (e.op == "*" and boolean_value(e.lhs, types) and boolean_value(e.rhs, types))
    if isinstance(e, ir.Call):
        if e.fn in ("i32", "bool"):
            return boolean_value(e.args[0], types)
        return e.fn in ("max", "min") and len(e.args) == 2 and all(boolean_value(a, types) for a in e.args)
    return isinstance(e, ir.Ref) and e.name in types and types[e.name].dtype == ir.DType.bool


def _rank(kind: str) -> int:
    return {CONST: 0, SCALAR: 1, ROW: 2, COL: 2, FULL: 3}[kind]
