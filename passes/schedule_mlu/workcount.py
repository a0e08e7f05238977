"""The vector work any MLU kernel must do for an operator-layer function: an arithmetic floor on its time.

Why from the operator layer and not from the emitted kernel: a floor computed from the kernel would excuse a
wasteful kernel (an op emitted twice would raise its own floor). Here every element-wise op, reduction and
conversion the *source* asks for is counted once, over the smallest domain it can be computed on:

* common subexpressions are counted once, across statements too (an expression is identified by its text and the
  ranges of the index variables in it, so `abs(x[i, j])` in two statements is one op);
* an op is counted over the index variables it depends on (`a[j] * 2.0` over N elements, not M x N: a kernel can
  hoist it);
* a reduction counts its input elements (class reduce); `mean` adds one simple op per output (the scale);
* a multiply and an add/sub that `__bang_fusion` could merge count as one simple op: a `*` whose only use is one
  operand of a `+` (or the left one of a `-`, or the right one when the `*` has a constant operand, negated into
  it) over the same domain (FMA / FMS), or a `+` / `-` (non-constant left operand) whose only use is one operand of
  a `*` (FAM / FSM); each op joins at most one pair, pairs chosen greedily from the leaves up (optimal on a tree);
* a negation is free when it can be folded: operand of a `+`, right operand of a `-`, or of a `*` / `/` by a
  constant; `x / c` for a constant c is a multiply (simple); `x / s` with s over a smaller domain is one
  reciprocal per element of s (div) plus a multiply (simple);
* classes as in targets/mlu/machine.py: simple (+ - * max min abs neg compares select), div (/ recip), special
  (exp log sqrt rsqrt tanh sigmoid erf pow sin cos log1p expm1 softplus silu gelu gelu_tanh; floor ceil round are
  simple; clamp is two simple ops), reduce, convert (casts between types, and a bool input tensor used as
  a `select` condition, which the vector ops need as a number; a bool computed in the function can stay a 1/0
  number);
* bytes per element: the narrowest element type the op reads (so f16 work counts 64 elements per 128-byte unit,
  as if a kernel computed in half; a bool operand does not narrow an op on numbers); index values and constants
  are free leaves;
* a one-hot selection `select(j == t, v, 0)` (t free of the index j) is free, and so is a sum of it over j (a
  gather): a kernel can read or write the one selected element per row with scalar accesses.

Time = sum over ops of units x cycles_<class> / (cores x clock), units = elements x bytes / vector_unit_bytes,
with no per-op issue cost (tiles can be large): a lower bound, not a prediction. Reported next to the DMA roofline
in codegen/mlu/report.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir import ir
from gir.shapes import func_info
from gir.walk import reductions_preorder, walk
from gir.passes.machines import MLU370, MluMachine

SPECIAL = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "gelu", "pow", "sin", "cos", "log1p", "expm1",
           "softplus", "silu", "gelu_tanh")   # the class of each __bang_active_<fn> in targets/mlu/vector.py
DIV = ("recip", "/", "//", "%", "cdiv")


@dataclass(frozen=True)
class Op:
    """One counted op: what it is, its cost class, the elements it covers, bytes per element, and whether it is
    free (merged into a `__bang_fusion` pair or a folded negation)."""

    what: str
    op_class: str
    elems: int
    nbytes: int
    free: bool = False

    def units(self, machine: MluMachine = MLU370) -> float:
        return 0.0 if self.free else self.elems * self.nbytes / machine.vector_unit_bytes


@dataclass(frozen=True)
class WorkCount:
    ops: tuple[Op, ...]

    def units(self, machine: MluMachine = MLU370) -> dict[str, float]:
        out: dict[str, float] = {}
        for op in self.ops:
            if not op.free:
                out[op.op_class] = out.get(op.op_class, 0.0) + op.units(machine)
        return out

    def counts(self) -> dict[str, int]:
        """Ops per class (free ones left out)."""
        out: dict[str, int] = {}
        for op in self.ops:
            if not op.free:
                out[op.op_class] = out.get(op.op_class, 0) + 1
        return out

    def cycles(self, machine: MluMachine = MLU370) -> float:
        return sum(u * machine.op_class_cycles(c) for c, u in self.units(machine).items())

    def seconds(self, machine: MluMachine = MLU370) -> float:
        return self.cycles(machine) / (machine.total_cores * machine.clock_hz)


@dataclass
class _Node:
    expr: object
    what: str
    op_class: str | None      # None: a free leaf (tensor element, constant, index value)
    vars: frozenset           # (index name, range) pairs the value depends on
    nbytes: int
    children: list = field(default_factory=list)
    extra: list = field(default_factory=list)   # further ops of this node: (what, class, vars)
    uses: int = 0
    free: bool = False
    paired: bool = False
    cover: frozenset | None = None   # the domain the op itself covers when not `vars` (a reduction's input)


def count_work(func: ir.Func, sizes: dict[str, int]) -> WorkCount:
    """The ops of an operator-layer function at the given sizes (see the module docstring)."""
    info = func_info(func)
    table: dict[tuple, _Node] = {}
    order: list[_Node] = []
    for st in info.stmts:
        _Builder(info, st, table, order).add(st.stmt.value)
    _fold(order)

    def size(vs) -> int:
        n = 1
        for _, dim in vs:
            n *= dim if isinstance(dim, int) else sizes[dim]
        return n
    ops = []
    for node in order:
        if node.op_class is None:
            continue
        cover = node.vars if node.cover is None else node.cover
        ops.append(Op(node.what, node.op_class, size(cover), node.nbytes, node.free))
        ops += [Op(what, cls, size(vs), node.nbytes) for what, cls, vs in node.extra]
    return WorkCount(tuple(ops))


def arithmetic_floor(func: ir.Func, sizes: dict[str, int], machine: MluMachine = MLU370) -> float:
    """Seconds of compute-pipe work any kernel for `func` needs on `machine` (all cores busy, no issue cost)."""
    return count_work(func, sizes).seconds(machine)


class _Builder:
    """Registers the nodes of one statement's value into the function-wide CSE table, children first."""

    def __init__(self, info, st, table, order):
        self.info, self.st, self.table, self.order = info, st, table, order
        self.reductions = 0

    def add(self, e) -> _Node:
        reduced = set()
        if isinstance(e, ir.Reduce):   # preorder numbering of reductions, as StmtInfo.reduce_vars
            reduced = set(self.st.reduce_vars.get(self.reductions, ()))
            self.reductions += 1
        node = self._leaf(e) or self._one_hot(e, reduced)
        if node is None:
            node = self._op(e, [self.add(k) for k in _operands(e)], reduced)
        return self._register(node)

    def _one_hot(self, e, reduced: set) -> _Node | None:
        """`select(j == t, v, 0)` (t free of j), or a sum of it over j (a gather): free, one element per row."""
        arg = e.arg if isinstance(e, ir.Reduce) and e.op == "sum" else e
        if not (isinstance(arg, ir.Call) and arg.fn == "select" and isinstance(arg.args[2], ir.Const)
                and arg.args[2].value == 0 and isinstance(arg.args[0], ir.BinOp) and arg.args[0].op == "=="):
            return None
        lhs, rhs = arg.args[0].lhs, arg.args[0].rhs
        var, other = (lhs, rhs) if isinstance(lhs, ir.Var) else (rhs, lhs)
        if not isinstance(var, ir.Var) or var.name not in self.st.ranges or var.name in _var_names(other):
            return None
        if arg is not e and var.name not in reduced:
            return None
        self.reductions += len(reductions_preorder(arg))   # keep the preorder numbering of what is skipped
        names = (_var_names(arg) - reduced) if arg is not e else _var_names(arg)
        return _Node(e, "gather" if arg is not e else "one-hot select", None, self._vars(names), 0)

    def _vars(self, names) -> frozenset:
        return frozenset((v, self.st.ranges[v]) for v in names if v in self.st.ranges)

    def _leaf(self, e) -> _Node | None:
        if isinstance(e, ir.Const):
            return _Node(e, "const", None, frozenset(), 0)
        if isinstance(e, ir.Var):
            return _Node(e, "index", None, self._vars([e.name]), 0)
        if isinstance(e, ir.Ref):
            names = [x.name for i in e.index for x in walk(i) if isinstance(x, ir.Var)]
            dtype = self.info.types[e.name].dtype
            return _Node(e, "ref", None, self._vars(names), 1 if dtype == ir.DType.bool else dtype.nbytes)
        return None

    def _op(self, e, kids: list[_Node], reduced: set) -> _Node:
        vs = frozenset().union(*(k.vars for k in kids))
        sizes = [k.nbytes for k in kids if k.nbytes]
        numbers = [n for n in sizes if n > 1]   # a bool (1 byte) operand does not narrow a numeric op
        nbytes = min(numbers or sizes or [4])
        if isinstance(e, ir.Reduce):
            out = frozenset(v for v in vs if v[0] not in reduced)
            node = _Node(e, e.op, "reduce", out, nbytes, kids, cover=vs)
            if e.op == "mean":
                node.extra.append(("mean scale", "simple", out))
            return node
        if isinstance(e, ir.BinOp):
            if e.op == "/" and isinstance(e.rhs, ir.Const):
                return _Node(e, "*", "simple", vs, nbytes, kids)
            if e.op == "/" and kids[1].vars < vs:
                node = _Node(e, "*", "simple", vs, nbytes, kids)
                node.extra.append(("recip", "div", kids[1].vars))
                return node
            return _Node(e, e.op, "div" if e.op in DIV else "simple", vs, nbytes, kids)
        if isinstance(e, ir.UnOp):
            return _Node(e, "neg" if e.op == "-" else e.op, "simple", vs, nbytes, kids)
        if isinstance(e, ir.Call):
            if e.fn in ir.CASTS:
                target = 1 if e.fn == "bool" else ir.DType(e.fn).nbytes
                same = isinstance(e.args[0], ir.Ref) and self.info.types[e.args[0].name].dtype.value == e.fn
                return _Node(e, e.fn, None if same else "convert", vs, max(nbytes, target), kids)
            inputs = {p.name for p in self.info.func.params}
            if e.fn == "select" and kids[0].what == "ref" and kids[0].nbytes == 1 and e.args[0].name in inputs:
                conv = _Node(("convert", e.args[0]), "bool->number", "convert", kids[0].vars, 4)
                kids[0] = self._register(conv)
            cls = "special" if e.fn in SPECIAL else "div" if e.fn in DIV else "simple"
            node = _Node(e, e.fn, cls, vs, nbytes, kids)
            if e.fn == "clamp":   # max, then min
                node.extra.append(("clamp min", "simple", vs))
            return node
        raise ValueError(f"unexpected expression {type(e).__name__}")

    def _register(self, node: _Node) -> _Node:
        key = (node.expr, node.vars)
        if key in self.table:
            self.table[key].uses += 1
            return self.table[key]
        node.uses = 1
        self.table[key] = node
        self.order.append(node)
        return node


def _var_names(e) -> set[str]:
    return {x.name for x in walk(e) if isinstance(x, ir.Var)}


def _operands(e) -> list:
    if isinstance(e, ir.BinOp):
        return [e.lhs, e.rhs]
    if isinstance(e, ir.UnOp):
        return [e.operand]
    if isinstance(e, ir.Call):
        return list(e.args)
    if isinstance(e, ir.Reduce):
        return [e.arg]
    raise ValueError(f"unexpected expression {type(e).__name__}")


def _is_neg(n: _Node) -> bool:
    return n.what == "neg"


def _fold(order: list[_Node]) -> None:
    """Mark folded negations and `__bang_fusion` pairs free (children come before parents in `order`)."""
    for v in order:
        consts = [k.what == "const" for k in v.children]
        for pos, u in enumerate(v.children):
            if u.uses != 1 or not _is_neg(u) or u.free:
                continue
            other_const = len(consts) == 2 and consts[1 - pos]
            if v.what == "+" or (v.what == "-" and pos == 1) or (v.what in ("*", "/") and other_const):
                u.free = True
    for v in order:
        if v.paired or v.op_class != "simple" or v.extra:
            continue
        for pos, u in enumerate(v.children):
            if u.paired or u.uses != 1 or u.vars != v.vars or u.extra or u.free:
                continue
            if _pairs(v, u, pos):
                u.paired = v.paired = u.free = True
                break


def _pairs(v: _Node, u: _Node, pos: int) -> bool:
    """Can the parent v and its operand u (at position pos) be one `__bang_fusion`?"""
    if not isinstance(v.expr, ir.BinOp) or not isinstance(u.expr, ir.BinOp):
        return False
    if u.what == "*" and v.what in ("+", "-"):                            # FMA / FMS (x / c is x * (1/c))
        return v.what == "+" or pos == 0 or any(k.what == "const" for k in u.children)
    if u.what in ("+", "-") and v.what == "*":                            # FAM / FSM: src0 must be a vector
        return u.what == "+" or u.children[0].what != "const"
    return False
