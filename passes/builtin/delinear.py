"""delinearize: reshapes written as index arithmetic turned into reshape views (no data moves).

ONNX Reshape and Flatten arrive as quasi-affine indices (gir/onnx), and users write them so too:
`y[i, j, k, l] = x[i, j, k * 64 + l]` (x: [8, 64, 4096] seen as [8, 64, 64, 64]) and `y[i, j, m] = x[i, j, m //
64, m % 64] * g[j]` ran as scalar MLU kernels (1,226x and 1,833x the DMA roofline), and `fuse` keeps an
intermediate read at a computed index out of its reader's group (an imported scale-then-reshape moved 2.0x its
compulsory bytes on sim). `delinearize` rewrites a function whose extents involved are integers (literal, or
sizes specialised) with two steps:

- a variable v read as `v // c` and `v % c` (one constant c, 1 < c < R, dividing v's range R) becomes two, v_hi
  over R / c and v_lo over c: `v // c` is v_hi, `v % c` is v_lo, and v itself v_hi * c + v_lo;
- an index `s1 * v1 + ... + sn * vn` over distinct variables whose strides are a mixed radix (sn = 1, s_k = s_{k+1}
  * R(v_{k+1})) and whose span s_1 * R(v_1) is the axis' extent indexes that axis split into [R(v1), ..., R(vn)]
  by v1, ..., vn.

A tensor is seen through a view (gir/views.py; no data moves) when every reference to it splits its axes alike;
parameters and results declared without a view take one, an intermediate read split by every reader is
redefined split (its defining statement's variable becomes the parts' variables), which may split what it reads.
Anything else leaves the function as it is (`delinearize` returns None). A pass of every target's default
pipeline (after squeeze-unit-axes), applied where it lessens the intermediates read at computed indices (so that
`fuse` can group them with their readers); the MLU scheduler also tries it, weighed by its cost model, when a
schedule holds scalar kernels (passes/schedule_mlu/variants.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.affine import to_affine
from gir.errors import GirError
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import map_operator_funcs
from gir.scan import scan_of
from gir.shapes import func_info
from gir.walk import map_expr_pre, walk


@dataclass(frozen=True)
class Delinearize(ModulePass):
    """Reshapes written as index arithmetic (`x[i, k * 64 + l]`, `x[m // 64, m % 64]`) as reshape views."""
    name: ClassVar[str] = "delinearize"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        def one(f: ir.Func) -> ir.Func:
            before = computed_reads(f)
            out = delinearize(f) if before else None
            if out is None or computed_reads(out) >= before:
                return f
            ctx.bump("delinearize.functions")
            return out
        return map_operator_funcs(module, one)


def computed_reads(func: ir.Func) -> int:
    """Reads of intermediates at an index that is not a plain variable: what `fuse` keeps out of the reader's
    group. The pass rewrites a function only to lessen them (parameters and results read at computed indices
    cost no traffic on the GPU targets; the MLU scheduler weighs those rewrites with its cost model)."""
    results = {p.name for p in func.results}
    inter = {s.target.name for s in func.body if isinstance(s, ir.Assign)} - results
    return sum(1 for s in func.body if isinstance(s, ir.Assign) for r in walk(s.value)
               if isinstance(r, ir.Ref) and r.name in inter and any(not isinstance(i, ir.Var) for i in r.index))


class _Skip(Exception):
    """The function is left as it is."""


def delinearize(func: ir.Func) -> ir.Func | None:
    """`func` with its reshapes as views (module docstring), or None. The extents of the axes it splits must be
    integers (literal, or sizes specialised); other axes may keep size names."""
    try:
        return _Delinearize(func).run()
    except (_Skip, GirError):   # (GirError: a function the analysis refuses is not rewritten)
        return None


class _Delinearize:
    def __init__(self, func: ir.Func):
        self.func = func
        self.info = func_info(func)
        self.types = {n: t.shape for n, t in self.info.types.items()}   # intermediates reshaped as they go
        self.splits: dict[str, list] = {}   # tensor -> per axis: the radices every reference agrees on
        self.conflicts: set[str] = set()    # tensors some reference reads whole and another split

    def run(self) -> ir.Func | None:
        stmts = [self._split_vars(st) for st in self.info.stmts]    # (statement, its variables' ranges)
        changed = any(s is not st.stmt for (s, _), st in zip(stmts, self.info.stmts))
        ports = {p.name: p for p in self.func.params + self.func.results}
        defined = {s.target.name: s.target for s, _ in stmts}
        for _ in range(32):   # a tensor its readers split is redefined split, which may split what it reads
            self.splits, self.conflicts = {}, set()
            for s, ranges in stmts:
                self._record(s.target, ranges, definition=True)
                for r in walk(s.value):
                    if isinstance(r, ir.Ref):
                        self._record(r, ranges)
            viewed = {n: axes for n, axes in self.splits.items() if any(a and len(a) > 1 for a in axes)}
            redefine = [n for n in viewed if n in defined and n not in self.conflicts and any(
                len(a or ()) > 1 and isinstance(i, ir.Var) for a, i in zip(viewed[n], defined[n].index))]
            if not redefine:
                if self.conflicts:
                    raise _Skip     # a tensor read whole and split, and no redefinition left to split the whole
                break
            for n in redefine:
                stmts = self._reshape(stmts, n, [a or (d,) for a, d in zip(viewed[n], self.types[n])])
            defined = {s.target.name: s.target for s, _ in stmts}
            changed = True
        else:
            raise _Skip
        reshaped = {n for n in ports if self.types[n] != self.info.types[n].shape}
        if not viewed and not changed:
            return None
        if any(ports[n].view is not None for n in (set(viewed) | reshaped) & set(ports)):
            raise _Skip     # (an intermediate needs no view: its references are rewritten, its shape follows)
        return self._rewrite(stmts, viewed, reshaped)

    def _reshape(self, stmts: list, name: str, axes: list) -> list:
        """The statements with intermediate `name` defined with its axes split as `axes` (its defining statement's
        variable on a split axis becomes the variables of the parts) and read so."""
        k = next((k for k, (s, _) in enumerate(stmts) if s.target.name == name), None)
        if k is None:
            raise _Skip
        s, ranges = stmts[k]
        ranges = dict(ranges)
        sub: dict[str, ir.Expr] = {}
        for i, radices in zip(s.target.index, axes):
            if len(radices) == 1:
                continue
            if not isinstance(i, ir.Var):
                continue    # (a split expression already: its variables index the parts below)
            parts = [_fresh(f"{i.name}_{j}", ranges) for j in range(len(radices))]
            for v, n in zip(parts, radices):
                ranges[v] = n
            sub[i.name] = _mixed(parts, radices)
        scan = scan_of(s.value)
        if scan is not None and scan.axis in sub:
            raise _Skip
        s = dataclasses.replace(s, target=map_expr_pre(s.target, lambda e: _subst(e, sub)),
                                value=map_expr_pre(s.value, lambda e: _subst(e, sub)))
        stmts = stmts[:k] + [(s, ranges)] + stmts[k + 1:]
        out = []
        for s, ranges in stmts:   # every reference to `name` indexes its parts
            def rw(e, ranges=ranges):
                if not isinstance(e, ir.Ref) or e.name != name:
                    return e
                index: list = []
                for i, d in zip(e.index, self.types[name]):
                    index += _radices(i, d, ranges)[1]
                return dataclasses.replace(e, index=tuple(index))
            out.append((dataclasses.replace(s, target=map_expr_pre(s.target, rw), value=map_expr_pre(s.value, rw)),
                        ranges))
        self.types[name] = tuple(n for a in axes for n in a)
        return out

    # ------------------------------------------------------------------------------------------ variables
    def _split_vars(self, st) -> tuple[ir.Assign, dict]:
        """The statement with every variable read as `v // c` and `v % c` split in two, and its ranges."""
        s = st.stmt
        divs: dict[str, set] = {}
        for x in [y for e in (s.value,) + tuple(s.target.index) for y in walk(e)]:
            if isinstance(x, ir.BinOp) and x.op in ("//", "%") and isinstance(x.lhs, ir.Var) \
                    and isinstance(x.rhs, ir.Const) and isinstance(x.rhs.value, int):
                divs.setdefault(x.lhs.name, set()).add(x.rhs.value)
        split = {}
        for v, cs in divs.items():
            rng = st.ranges.get(v)
            if len(cs) != 1 or not isinstance(rng, int):
                raise _Skip
            c = next(iter(cs))
            if not 1 < c < rng or rng % c:
                raise _Skip
            split[v] = c
        scan = scan_of(s.value)
        if scan is not None and scan.axis in split:
            raise _Skip     # (a scan along a variable read as parts: its axis would be an expression)
        ranges = dict(st.ranges)
        if not split:
            return s, ranges
        parts = {}
        for v, c in split.items():
            hi, lo = _fresh(f"{v}_hi", ranges), _fresh(f"{v}_lo", ranges)
            ranges[hi], ranges[lo] = ranges[v] // c, c
            parts[v] = hi, lo

        def rw(e):
            if isinstance(e, ir.BinOp) and e.op in ("//", "%") and isinstance(e.lhs, ir.Var) and e.lhs.name in split:
                return ir.Var(parts[e.lhs.name][0 if e.op == "//" else 1], loc=e.loc)
            if isinstance(e, ir.Var) and e.name in split:
                hi, lo = parts[e.name]
                return dataclasses.replace(_mixed([hi, lo], (None, split[e.name])), loc=e.loc)
            return e
        return dataclasses.replace(s, target=map_expr_pre(s.target, rw), value=map_expr_pre(s.value, rw)), ranges

    # ------------------------------------------------------------------------------------------ tensor axes
    def _record(self, r: ir.Ref, ranges: dict, definition: bool = False) -> None:
        """The radices `r` splits its tensor's axes into, checked against the other references' (None: a plain
        variable of a definition's target, which takes any split: the definition is then rewritten)."""
        if r.name not in self.types:
            return
        axes = [None if definition and isinstance(i, ir.Var) else _radices(i, d, ranges)[0]
                for i, d in zip(r.index, self.types[r.name])]
        known = self.splits.setdefault(r.name, axes)
        for k, (a, b) in enumerate(zip(known, axes)):
            if a is None or (b is not None and len(a) == 1 and len(b) > 1):
                known[k] = b
            if a is not None and b is not None and a != b:
                if len(a) > 1 and len(b) > 1:
                    raise _Skip     # references that split a tensor's axes differently
                self.conflicts.add(r.name)   # whole and split: settled only if a redefinition splits the whole

    def _rewrite(self, stmts: list, viewed: dict, reshaped: set) -> ir.Func:
        """The function with the split variables, parameters read through views and results defined reshaped,
        analysed again (a rewrite that does not check leaves the function alone)."""
        def rewritten(s: ir.Assign, ranges: dict) -> ir.Assign:
            def rw(e):
                if not isinstance(e, ir.Ref) or e.name not in viewed:
                    return e
                index: list = []
                for i, d in zip(e.index, self.types[e.name]):
                    index += _radices(i, d, ranges)[1]
                return dataclasses.replace(e, index=tuple(index))
            return dataclasses.replace(s, target=map_expr_pre(s.target, rw), value=map_expr_pre(s.value, rw))
        body = iter(rewritten(s, ranges) for s, ranges in stmts)
        new_body = tuple(next(body) if isinstance(x, ir.Assign) else x for x in self.func.body)

        def retype(p: ir.Param) -> ir.Param:
            if p.name in reshaped:
                shape = tuple(self.types[p.name])
            elif p.name in viewed:
                shape = tuple(n for axes, d in zip(viewed[p.name], p.type.shape) for n in (axes or (d,)))
            else:
                return p
            return dataclasses.replace(p, type=ir.TensorType(p.type.dtype, shape),
                                       view=ir.View(p.type, tuple(_dim(n) for n in shape), loc=p.loc))
        out = dataclasses.replace(self.func, params=tuple(retype(p) for p in self.func.params),
                                  results=tuple(retype(p) for p in self.func.results), body=new_body)
        try:
            func_info(out)
        except GirError:
            raise _Skip from None
        return out


def _dim(n) -> ir.Expr:
    """A view dimension: an extent, or the size name of an axis left whole."""
    return ir.Const(n) if isinstance(n, int) else ir.Var(n)


def _mixed(parts: list, radices: tuple) -> ir.Expr:
    """The mixed-radix number of `parts` (outermost first; radices[k] is the extent of parts[k])."""
    e: ir.Expr = ir.Var(parts[0])
    for v, n in zip(parts[1:], radices[1:]):
        e = ir.BinOp("+", ir.BinOp("*", e, ir.Const(n)), ir.Var(v))
    return e


def _subst(e, sub: dict):
    return sub.get(e.name, e) if isinstance(e, ir.Var) else e


def _fresh(base: str, taken: dict) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


def _radices(i: ir.Expr, extent, ranges: dict) -> tuple[tuple, list]:
    """(the radices an index splits its axis into, the variables indexing them): ((extent,), [i]) when the index
    is not a mixed-radix combination of variables spanning the axis."""
    whole = ((extent,), [i])
    a = to_affine(i)
    if a is None or a.const or len(a.coeffs) < 2 or not isinstance(extent, int):
        return whole
    terms = sorted(((s, v) for v, s in a.coeffs.items()), reverse=True)
    if any(not isinstance(ranges.get(v), int) for _, v in terms):
        return whole
    span = 1
    for s, v in reversed(terms):
        if s != span:
            return whole
        span *= ranges[v]
    if span != extent:
        return whole
    return tuple(ranges[v] for _, v in terms), [ir.Var(v) for _, v in terms]
