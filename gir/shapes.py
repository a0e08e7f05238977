"""Semantic analysis of the operator layer: tensor types, index ranges, reduction binding.

`analyze_func` checks every rule of the operator layer and reports violations as
diagnostics; its result (`FuncInfo`) is what the evaluator and the scheduler use.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir import ir
from gir.affine import Affine, guarded_refs, index_form_error, to_affine
from gir import views
from gir.errors import DiagnosticCollector, GirError, Loc
from gir.scan import check_scan_stmt
from gir.kinds import KIND_BOOL, KIND_FLOAT, KIND_INT, KNOWN_FUNCS, KindChecker, check_i32_literals, check_literal  # noqa: F401
from gir.walk import reductions_preorder, walk as _walk  # noqa: F401  (re-exported)



@dataclass
class StmtInfo:
    stmt: ir.Assign
    out_vars: tuple[str, ...]
    ranges: dict[str, ir.Dim]
    # preorder number of each Reduce node in the value → the index vars it reduces over
    reduce_vars: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @property
    def all_vars(self) -> tuple[str, ...]:
        return tuple(self.ranges)


@dataclass
class FuncInfo:
    func: ir.Func
    types: dict[str, ir.TensorType]
    stmts: list[StmtInfo]
    intermediates: tuple[str, ...]

    def type_of(self, name: str) -> ir.TensorType:
        return self.types[name]


class _FuncAnalyzer(KindChecker):
    def __init__(self, func: ir.Func, diag: DiagnosticCollector):
        self.func = func
        self.diag = diag
        self.types: dict[str, ir.TensorType] = {}
        self.defined_at: dict[str, Loc | None] = {}
        self.sizes = set(func.size_symbols())
        self.inputs = {p.name for p in func.params}
        self.results = {p.name: p for p in func.results}
        self.attempted: set[str] = set()
        self.failed: set[str] = set()  # intermediates whose definition was rejected (no cascades)
        self.quiet: set[str] = set()  # index vars of a statement already covered by a reported error
        self.declared: dict[str, str] = {}  # index var → result whose declaration gave its range

    def run(self) -> FuncInfo:
        for p in self.func.params + self.func.results:
            if p.name in self.types:
                self.diag.error(f"duplicate definition of '{p.name}'", p.loc,
                                f"first defined at {self.defined_at[p.name]}")
                continue
            if p.name in self.sizes:
                self.diag.error(f"'{p.name}' is both a tensor and a size name", p.loc)
            self.types[p.name] = p.type
            self.defined_at[p.name] = p.loc
        input_sizes = views.input_sizes(self.func)  # with a reshape view's sizes (gir/views.py)
        input_sizes |= set(views.derived_sizes(self.func))  # those checked by views.check_func
        for r in self.func.results:
            for d in r.type.shape:
                if isinstance(d, str) and d not in input_sizes:
                    self.diag.error(f"size '{d}' of result '{r.name}' is not the size of any input",
                                    r.type.loc or r.loc, "every size must be known from the inputs' shapes")
        assigned: set[str] = set()
        infos = []
        for item in self.func.body:
            if isinstance(item, ir.Alloc):
                if item.name in self.types:
                    self.diag.error(f"duplicate definition of '{item.name}'", item.loc)
                self.types[item.name] = item.type
                self.defined_at[item.name] = item.loc
                assigned.add(item.name)
            if isinstance(item, ir.Assign):
                info = self.stmt(item, assigned)
                if info is not None:
                    infos.append(info)
                elif item.target.name not in self.types:
                    self.failed.add(item.target.name)
        for r in self.func.results:
            if r.name not in self.attempted and not self.func.is_explicit:
                self.diag.error(f"result '{r.name}' is never assigned", r.loc)
        inter = tuple(n for n in assigned if n not in self.results)
        return FuncInfo(self.func, dict(self.types), infos, inter)

    # ---------------------------------------------------------------- statement
    def stmt(self, s: ir.Assign, assigned: set[str]) -> StmtInfo | None:
        errors_before = len(self.diag.diagnostics)
        t = s.target
        self.quiet, self.declared = set(), {}
        self.attempted.add(t.name)
        if t.name in self.inputs:
            self.diag.error(f"cannot assign to input '{t.name}'", t.loc)
            return None
        if t.name in assigned:
            self.diag.error(f"duplicate definition of '{t.name}'", t.loc,
                            f"first defined at {self.defined_at.get(t.name)}")
            return None
        if t.name in self.sizes:
            self.diag.error(f"'{t.name}' is a size name and cannot be assigned", t.loc)
            return None
        out_vars: list[str] = []
        for idx in t.index:
            if not isinstance(idx, ir.Var):
                self.diag.error("left-hand side indices must be plain index variables", getattr(idx, "loc", t.loc))
                return None
            if idx.name in out_vars:
                self.diag.error(f"index '{idx.name}' appears twice on the left-hand side", idx.loc)
                return None
            if idx.name in self.sizes or idx.name in self.types:
                self.diag.error(f"index '{idx.name}' has the name of a {'size' if idx.name in self.sizes else 'tensor'}",
                                idx.loc)
                return None
            out_vars.append(idx.name)
        if not check_scan_stmt(s, out_vars, self.diag):  # placement and axis of cumsum/... (gir/scan.py)
            return None
        if not self.func.is_explicit:  # a result read before its definition would make a cycle
            for x in _walk(s.value):
                if (isinstance(x, ir.Ref) and x.name in self.results and x.name not in assigned
                        and (x.name == t.name or x.name not in self.attempted)):
                    self.diag.error(f"result '{x.name}' is read before it is assigned", x.loc,
                                    "statements run in order; assign the result first or use an intermediate")
                    return None
        ranges: dict[str, tuple[ir.Dim, Loc | None]] = {}
        if t.name in self.results:
            rtype = self.results[t.name].type
            if rtype.rank != len(t.index):
                self.diag.error(f"'{t.name}' has rank {rtype.rank} but is indexed with {len(t.index)} indices", t.loc)
                return None
            for v, d in zip(out_vars, rtype.shape):
                ranges[v] = (d, self.results[t.name].loc)
                self.declared[v] = t.name
        self.collect_ranges(s.value, ranges, set(out_vars))
        self.f64_arithmetic = self.uses_f64(s.value)   # literals: f64 range (gir/kinds.py check_literal)
        kind = self.expr_kind(s.value, set(out_vars) | set(ranges))
        missing = [v for v in out_vars if v not in ranges]
        for v in missing:
            self.diag.error(f"index '{v}' has no range: it indexes no tensor dimension directly", t.loc)
        in_indices = {v.name for r in _walk(s.value) if isinstance(r, ir.Ref)
                      for i in r.index for v in _walk(i) if isinstance(v, ir.Var)}
        for x in _walk(s.value):
            if isinstance(x, ir.Var) and x.name not in self.sizes and x.name not in ranges and x.name not in out_vars:
                if x.name in self.quiet:
                    pass
                elif x.name in self.types:
                    self.diag.error(f"tensor used without indices '{x.name}'", x.loc)
                elif x.name in in_indices:
                    self.diag.error(f"index '{x.name}' has no range: it is used only inside index expressions",
                                    x.loc, "an index variable gets its range by indexing a tensor dimension directly")
                else:
                    self.diag.error(f"unknown name '{x.name}'", x.loc,
                                    "an index variable gets its range by indexing a tensor dimension directly")
                ranges[x.name] = (1, None)  # reported once
                self.quiet.add(x.name)
        reduce_vars = self.bind_reductions(s, set(out_vars))
        if len(self.diag.diagnostics) > errors_before:
            return None
        self.check_index_bounds(s.value, {v: r[0] for v, r in ranges.items()})
        if len(self.diag.diagnostics) > errors_before:
            return None
        shape = tuple(ranges[v][0] for v in out_vars)
        target_i64 = t.name in self.results and self.results[t.name].type.dtype == ir.DType.i64
        if kind == KIND_INT and not target_i64 and not self.uses_i64(s.value):
            check_i32_literals(s.value, self.diag)
        if t.name in self.results:
            rtype = self.results[t.name].type
            if rtype.shape != shape:
                self.diag.error(f"shape mismatch: '{t.name}' is declared {list(rtype.shape)} but assigned {list(shape)}",
                                t.loc)
                return None
            self.check_assign_kind(rtype.dtype, kind, s)
        else:
            dtype = {KIND_FLOAT: ir.DType.f32, KIND_BOOL: ir.DType.bool}.get(kind, ir.DType.i32)
            if kind == KIND_INT and self.uses_i64(s.value):
                dtype = ir.DType.i64
            if kind == KIND_FLOAT and self.uses_f64(s.value):
                dtype = ir.DType.f64
            self.types[t.name] = ir.TensorType(dtype, shape)
        assigned.add(t.name)
        self.defined_at[t.name] = t.loc
        return StmtInfo(s, tuple(out_vars), {v: r[0] for v, r in ranges.items()}, reduce_vars)

    def check_index_bounds(self, e, ranges: dict[str, ir.Dim]) -> None:
        """Every affine index stays inside its dimension for all sizes >= 1.

        Index variables range independently over boxes, so the extremes of an affine index are reached at the
        corners: each extreme is an affine function of the sizes, which is >= 0 for all sizes >= 1 exactly when
        its size coefficients are >= 0 and its value at sizes = 1 is >= 0."""
        from gir.passes.analysis.index_bounds import needs_exact_check, requirements

        for ref, guards in guarded_refs(e):
            if ref.name not in self.types or needs_exact_check(ref, guards):
                continue  # quasi-affine or guarded: checked exactly with isl below
            for dim, idx in zip(self.types[ref.name].shape, ref.index):
                aff = to_affine(idx) if not isinstance(idx, ir.Slice) else None
                if aff is None or isinstance(idx, ir.Var):
                    continue
                lo, hi = Affine({}, aff.const), Affine({}, aff.const)
                for name, c in aff.coeffs.items():
                    if name in self.sizes:
                        lo, hi = lo + Affine({name: c}), hi + Affine({name: c})
                        continue
                    top = _dim_affine(ranges.get(name, 1)) - Affine({}, 1)  # the variable's largest value
                    lo, hi = (lo + top.scale(c), hi) if c < 0 else (lo, hi + top.scale(c))
                for bad, what in ((lo, "below 0"), (_dim_affine(dim) - Affine({}, 1) - hi, f"past the extent {dim}")):
                    value_at_1 = bad.const + sum(bad.coeffs.values())
                    if value_at_1 < 0 or any(c < 0 for c in bad.coeffs.values()):
                        self.diag.error(f"index of '{ref.name}' is out of bounds: it can go {what}", getattr(idx, "loc", None) or ref.loc,
                                        "index variables range over the whole extent of the dimensions they index")
                        break
        for req in requirements(self.func, self.types, e, ranges)[0]:
            idx = req.ref.index[req.axis]
            self.diag.error(f"index of '{req.ref.name}' is out of bounds: it can go {req.what}, at every size",
                            getattr(idx, "loc", None) or req.ref.loc,
                            "checked exactly under the guards of the selects around it (isl)")

    def check_assign_kind(self, dtype: ir.DType, kind: str, s: ir.Assign) -> None:
        if kind == KIND_BOOL and dtype != ir.DType.bool:
            self.diag.error(f"cannot assign a boolean value to '{s.target.name}' of type {dtype.value}",
                            s.value.loc or s.loc, f"convert explicitly, e.g. {dtype.value}(...)")
        elif kind == KIND_FLOAT and not dtype.is_float:
            self.diag.error(f"cannot assign a floating-point value to '{s.target.name}' of type {dtype.value}",
                            s.value.loc or s.loc, f"convert explicitly, e.g. {dtype.value}(...)")
        elif kind == KIND_INT and dtype == ir.DType.bool:
            self.diag.error(f"cannot assign an integer value to boolean '{s.target.name}'", s.value.loc or s.loc)

    def uses_f64(self, e) -> bool:
        """Reads an f64 tensor or casts to f64: float arithmetic in f64 (docs/gir.md, "Element types")."""
        return any(isinstance(x, ir.Ref) and x.name in self.types and self.types[x.name].dtype == ir.DType.f64
                   or isinstance(x, ir.Call) and x.fn == "f64" for x in _walk(e))

    def uses_i64(self, e) -> bool:
        return any(isinstance(x, ir.Ref) and x.name in self.types and self.types[x.name].dtype == ir.DType.i64
                   for x in _walk(e))

    # ------------------------------------------------------------------ ranges
    def collect_ranges(self, e, ranges, out_vars) -> None:
        for x in _walk(e):
            if not isinstance(x, ir.Ref):
                continue
            if x.name not in self.types:
                self.quiet.update(v.name for i in x.index for v in _walk(i) if isinstance(v, ir.Var))
                if x.name in self.failed:
                    continue  # its definition was already reported
                if x.name in self.sizes:
                    self.diag.error(f"'{x.name}' is a size, not a tensor", x.loc)
                else:
                    self.diag.error(f"undefined tensor '{x.name}'", x.loc)
                continue
            ttype = self.types[x.name]
            if len(x.index) != ttype.rank:
                self.quiet.update(v.name for i in x.index for v in _walk(i) if isinstance(v, ir.Var))
                self.diag.error(f"'{x.name}' has rank {ttype.rank} but is indexed with {len(x.index)} indices", x.loc)
                continue
            for dim, idx in zip(ttype.shape, x.index):
                if isinstance(idx, ir.Slice):
                    self.diag.error("slices are only allowed inside kernels", idx.loc)
                    continue
                if isinstance(idx, ir.Var) and idx.name not in self.sizes:
                    if idx.name in self.types:
                        self.diag.error(f"'{idx.name}' is a tensor, not an index", idx.loc)
                        continue
                    if idx.name in ranges and ranges[idx.name][0] != dim:
                        prev, where = ranges[idx.name]
                        if idx.name in self.declared:
                            self.diag.error(f"shape mismatch: index '{idx.name}' ranges over {dim} here, but "
                                            f"'{self.declared[idx.name]}' is declared with {prev} in its position",
                                            idx.loc, f"the declaration is at {where}")
                            continue
                        self.diag.error(f"shape mismatch: index '{idx.name}' ranges over {dim} here but over {prev} "
                                        f"elsewhere", idx.loc, f"the other use is at {where}")
                        continue
                    ranges.setdefault(idx.name, (dim, idx.loc))
                else:
                    self.check_index_expr(idx)

    def check_index_expr(self, idx) -> None:
        for x in _walk(idx):
            if isinstance(x, ir.Ref):
                self.diag.error("data-dependent indexing is not supported: an index may not read a tensor", x.loc)
                return
            if isinstance(x, ir.Reduce) or isinstance(x, ir.Call) and not (x.fn in ("min", "max") and len(x.args) == 2):
                self.diag.error("an index must be an affine expression of index variables and sizes", x.loc)
                return
            if isinstance(x, ir.Const) and not isinstance(x.value, int) or isinstance(x, ir.Const) and isinstance(x.value, bool):
                self.diag.error(f"index expressions must be integers, not {x.value!r}", x.loc)
                return
        problem = index_form_error(idx, self.sizes)
        if problem is not None:
            self.diag.error(problem[0], problem[1] or getattr(idx, "loc", None),
                            "indices are quasi-affine: +, -, * by constants, // and % by positive constants")

    # ------------------------------------------------------------- reductions
    def bind_reductions(self, s: ir.Assign, out_vars: set[str]) -> dict[int, tuple[str, ...]]:
        """Each non-output index is reduced by the innermost reduction that holds all its uses."""
        paths: dict[str, list[tuple[int, ...]]] = {}
        first_loc: dict[str, Loc | None] = {}
        counter = [0]

        def walk(x, path):
            if isinstance(x, ir.Reduce):
                n = counter[0]
                counter[0] += 1
                walk(x.arg, path + (n,))
            elif isinstance(x, ir.Var):
                if x.name not in out_vars and x.name not in self.sizes:
                    paths.setdefault(x.name, []).append(path)
                    first_loc.setdefault(x.name, x.loc)
            elif isinstance(x, ir.Ref):
                for i in x.index:
                    walk(i, path)
            elif isinstance(x, ir.BinOp):
                walk(x.lhs, path)
                walk(x.rhs, path)
            elif isinstance(x, ir.UnOp):
                walk(x.operand, path)
            elif isinstance(x, ir.Call):
                for a in x.args:
                    walk(a, path)
        walk(s.value, ())
        bound: dict[int, list[str]] = {n: [] for n in range(counter[0])}
        for var, ps in paths.items():
            if any(not p for p in ps):
                if var in self.quiet:  # already reported
                    continue
                self.diag.error(f"index '{var}' is not on the left-hand side and not inside a reduction",
                                first_loc[var], "add it to the left-hand side, or reduce over it, e.g. sum(...)")
                continue
            # sibling reductions each reduce their own uses; nested ones bind at the innermost common one
            groups: dict[int, list[tuple[int, ...]]] = {}
            for p in ps:
                groups.setdefault(p[0], []).append(p)
            for group in groups.values():
                common = group[0]
                for p in group[1:]:
                    k = 0
                    while k < min(len(common), len(p)) and common[k] == p[k]:
                        k += 1
                    common = common[:k]
                bound[common[-1]].append(var)
        for n, reds in enumerate(reductions_preorder(s.value)):
            if not bound.get(n) and n in bound:
                self.diag.error(f"{reds.op}() reduces over nothing: every index inside it is on the left-hand side",
                                reds.loc, "a reduction needs an index that appears only inside it")
            if reds.op in ir.ARG_REDUCTIONS and len(bound.get(n, ())) > 1:
                self.diag.error(f"{reds.op}() reduces over {len(bound[n])} indices ({', '.join(bound[n])}); it "
                                "gives a position along one index", reds.loc,
                                "keep one index inside it and the others on the left-hand side")
            if reds.axes is not None:
                self.diag.error("axis= is only allowed in kernels; the operator layer reduces implicitly", reds.loc)
        return {n: tuple(v) for n, v in bound.items()}

    # ------------------------------------------------------------------- kinds
def _dim_affine(d: ir.Dim) -> Affine:
    return Affine({d: 1}) if isinstance(d, str) else Affine({}, d)


def analyze_func(func: ir.Func, diag: DiagnosticCollector) -> FuncInfo:
    return _FuncAnalyzer(func, diag).run()


def func_info(func: ir.Func) -> FuncInfo:
    """Analyze and raise GirError on any violation."""
    diag = DiagnosticCollector()
    info = analyze_func(func, diag)
    diag.raise_if_any()
    return info


__all__ = ["FuncInfo", "StmtInfo", "analyze_func", "func_info", "reductions_preorder", "GirError"]
