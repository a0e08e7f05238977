"""Structural verification of the explicit layer: scopes, levels, regions, shapes, dtypes.

Semantic properties that hold "for all sizes" (bounds, races, alignment, overflow)
are proven by the z3/isl checks in `passes/`; this module checks what the text says.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from gir import ir
from gir.affine import free_vars, is_quasi_affine, slice_extent, to_affine
from gir.errors import DiagnosticCollector

GPU_ORDER = {ir.ParLevel.block: 0, ir.ParLevel.warp: 1, ir.ParLevel.thread: 1, ir.ParLevel.lane: 2}
MLU_ORDER = {ir.ParLevel.cluster: 0, ir.ParLevel.core: 1}
ALLOC_SCOPE = {  # level → (parallel level it must be inside, levels it must be outside)
    ir.Level.shared: (ir.ParLevel.block, {ir.ParLevel.warp, ir.ParLevel.lane, ir.ParLevel.thread}),
    ir.Level.reg: (None, set()),
    ir.Level.sram: (ir.ParLevel.cluster, {ir.ParLevel.core}),
    ir.Level.nram: (ir.ParLevel.core, set()),
    ir.Level.wram: (ir.ParLevel.core, set()),
}
VEC_WIDTHS = (1, 2, 4, 8, 16)


@dataclass
class Buffer:
    name: str
    type: ir.TensorType
    level: ir.Level


@dataclass
class Scope:
    buffers: dict[str, Buffer]
    vars: dict[str, ir.ParLevel | None] = field(default_factory=dict)  # loop vars → parallel level or None
    levels: list[ir.ParLevel] = field(default_factory=list)


def region_shape(ref: ir.Ref) -> tuple[int, ...] | None:
    """Lengths of the slice dimensions of a region (point dimensions dropped); None if not constant."""
    shape = []
    for i in ref.index:
        if isinstance(i, ir.Slice):
            n = slice_extent(i.start, i.stop)
            if n is None:
                return None
            shape.append(max(0, -(-n // i.step)))
    return tuple(shape)


def reverse_axis(call: ir.Call) -> int | None:
    """The axis the kernel-only `reverse(a[, AXIS])` flips (1, the last axis of the 2-D tile, by default), or None
    when the second argument is not the integer literal 0 or 1. Shared by the verifier, the SIMT simulator and the
    MLU emitter so that all three read the builtin the same way."""
    if len(call.args) == 1:
        return 1
    ax = call.args[1] if len(call.args) == 2 else None
    ok = isinstance(ax, ir.Const) and not isinstance(ax.value, bool) and ax.value in (0, 1)
    return ax.value if ok and isinstance(ax.value, int) else None


class KernelVerifier:
    def __init__(self, func: ir.Func, globals_: dict[str, Buffer], diag: DiagnosticCollector):
        self.func = func
        self.globals = globals_
        self.diag = diag
        self.sizes = set(func.size_symbols())
        self.family: str | None = None
        self.block_lo: dict[str, ir.Expr] = {}   # @block variable -> its lower bound (chain indices start at 0)
        self.chain_status: set[str] = set()

    def kernel(self, k: ir.Kernel) -> None:
        self.family = None
        self.chain_status: set[str] = set()   # status tensors of the kernel's chains (one chain each)
        scope = Scope(dict(self.globals))
        if not k.body:
            self.diag.error(f"kernel '{k.name}' is empty", k.loc)
        for s in k.body:
            if not isinstance(s, ir.Parallel):
                self.diag.error("a kernel body must start with a parallel scope (@block, @cluster or @core)",
                                getattr(s, "loc", k.loc))
                continue
            self.stmt(s, scope)

    def _family(self, fam: str, loc) -> None:
        if self.family is None:
            self.family = fam
        elif self.family != fam:
            self.diag.error(f"mixes {fam.upper()} and {self.family.upper()} primitives in one kernel", loc)

    # ------------------------------------------------------------- statements
    def block(self, stmts, scope: Scope) -> None:
        inner = Scope(dict(scope.buffers), dict(scope.vars), list(scope.levels))
        for s in stmts:
            self.stmt(s, inner)

    def stmt(self, s, scope: Scope) -> None:
        handler = getattr(self, "_" + type(s).__name__.lower(), None)
        if handler is None:
            self.diag.error(f"{type(s).__name__} is not allowed inside a kernel", getattr(s, "loc", None))
            return
        handler(s, scope)

    def _parallel(self, s: ir.Parallel, scope: Scope) -> None:
        self._family(s.level.family, s.loc)
        if s.level == ir.ParLevel.all:
            self.diag.error("@all names every task of a launch in `sync @all`; it is not a parallel level", s.loc)
            return
        order = GPU_ORDER if s.level.family == "gpu" else MLU_ORDER
        depth = sum(1 for lv in scope.levels if lv == s.level)
        if s.level in scope.levels and (scope.levels[-1] != s.level or depth >= 3):
            self.diag.error(f"@{s.level.value} scopes nest only directly inside each other, at most 3 deep "
                            "(a multi-dimensional grid)", s.loc)
        elif scope.levels and scope.levels[-1] != s.level and order.get(scope.levels[-1], -1) >= order[s.level]:
            self.diag.error(f"@{s.level.value} cannot be nested inside @{scope.levels[-1].value}", s.loc)
        if s.level == ir.ParLevel.lane and ir.ParLevel.warp not in scope.levels:
            self.diag.error("@lane must be inside a @warp scope", s.loc)
        if (s.level in (ir.ParLevel.warp, ir.ParLevel.lane) and ir.ParLevel.thread in scope.levels) or (
                s.level == ir.ParLevel.thread and ir.ParLevel.warp in scope.levels):
            self.diag.error("@thread cannot be combined with @warp/@lane in one kernel", s.loc)
        self.bounds(s.lo, s.hi, scope, s.loc)
        if s.level == ir.ParLevel.block:
            self.block_lo[s.var] = s.lo
        inner = self.bind_var(s.var, s.level, scope, s.loc)
        inner.levels.append(s.level)
        for st in s.body:
            self.stmt(st, inner)

    def _for(self, s: ir.For, scope: Scope) -> None:
        self.bounds(s.lo, s.hi, scope, s.loc)
        if s.step < 1:
            self.diag.error("loop step must be positive", s.loc)
        inner = self.bind_var(s.var, None, scope, s.loc)
        for st in s.body:
            self.stmt(st, inner)

    def _if(self, s: ir.If, scope: Scope) -> None:
        self.scalar_expr(s.cond, scope, "condition")
        self.block(s.then, scope)
        self.block(s.orelse, scope)

    def bind_var(self, name, level, scope, loc) -> Scope:
        if name in scope.vars or name in scope.buffers or name in self.sizes:
            self.diag.error(f"'{name}' shadows an existing name", loc)
        inner = Scope(dict(scope.buffers), dict(scope.vars), list(scope.levels))
        inner.vars[name] = level
        return inner

    def bounds(self, lo, hi, scope, loc) -> None:
        for e in (lo, hi):
            if not is_quasi_affine(e):
                self.diag.error("loop bounds must be affine in sizes and enclosing variables "
                                "(with //, %, cdiv by constants, min, max)", getattr(e, "loc", None) or loc)
            self.names(e, scope)

    def names(self, e, scope) -> None:
        for name in free_vars(e):
            if name not in scope.vars and name not in self.sizes:
                self.diag.error(f"unknown name '{name}'", getattr(e, "loc", None),
                                "only sizes and enclosing loop/parallel variables may appear here")

    def scalar_expr(self, e, scope, what) -> None:
        self.names(e, scope)
        for x in _refs(e):
            self.diag.error(f"a {what} may not read tensors", x.loc)

    def _alloc(self, s: ir.Alloc, scope: Scope) -> None:
        self._family(s.level.family, s.loc)
        if s.level.off_chip:
            self.diag.error(f"@{s.level.value} buffers are allocated at function level, not in a kernel", s.loc)
        else:
            need, outside = ALLOC_SCOPE[s.level]
            if s.level == ir.Level.reg and not ({ir.ParLevel.thread, ir.ParLevel.lane} & set(scope.levels)):
                self.diag.error("@reg buffers belong inside a @thread or @lane scope", s.loc)
            if need is not None and need not in scope.levels:
                self.diag.error(f"@{s.level.value} buffers belong inside a @{need.value} scope", s.loc)
            bad = outside & set(scope.levels)
            if bad:
                self.diag.error(f"@{s.level.value} buffers are per {need.value}; allocate outside "
                                f"@{sorted(b.value for b in bad)[0]}", s.loc)
            for d in s.type.shape:
                if not isinstance(d, int):
                    self.diag.error(f"on-chip buffer '{s.name}' needs constant sizes, not '{d}'", s.type.loc or s.loc)
                elif d < 1:
                    self.diag.error(f"buffer '{s.name}' has an empty dimension", s.type.loc or s.loc)
        if s.slots != 1 and (s.level.family != "mlu" or s.level.off_chip or s.slots < 2 or
                             not s.type.shape or s.type.shape[0] != s.slots):
            self.diag.error(f"'slots={s.slots}' needs an on-chip MLU buffer whose first dimension is {s.slots} "
                            "(one tile per pipeline slot)", s.loc)
        if s.name in scope.buffers or s.name in scope.vars or s.name in self.sizes:
            self.diag.error(f"duplicate definition of '{s.name}'", s.loc)
        scope.buffers[s.name] = Buffer(s.name, s.type, s.level)

    def _sync(self, s: ir.Sync, scope: Scope) -> None:
        self._family(s.level.family, s.loc)
        if s.level == ir.ParLevel.block and ir.ParLevel.block not in scope.levels:
            self.diag.error("sync @block outside a @block scope", s.loc)
        if s.level in (ir.ParLevel.lane, ir.ParLevel.thread):
            self.diag.error(f"sync @{s.level.value} is meaningless: threads do not wait for themselves", s.loc)
        if s.level == ir.ParLevel.warp and ir.ParLevel.warp not in scope.levels and ir.ParLevel.thread not in scope.levels:
            self.diag.error("sync @warp outside a warp or thread scope", s.loc)
        if s.level == ir.ParLevel.all and ir.ParLevel.core not in scope.levels:
            self.diag.error("sync @all outside a @core scope", s.loc)

    def _move(self, s: ir.Move, scope: Scope) -> None:
        dst, src = self.region(s.dst, scope), self.region(s.src, scope)
        if dst is None or src is None:
            return
        if s.kind == "load" and (not src.level.off_chip or dst.level.off_chip):
            self.diag.error("load moves from @global/@gdram to an on-chip buffer", s.loc,
                            f"here: @{src.level.value} -> @{dst.level.value}; use copy or store")
        if s.kind == "store" and (src.level.off_chip or not dst.level.off_chip):
            self.diag.error("store moves from an on-chip buffer to @global/@gdram", s.loc,
                            f"here: @{src.level.value} -> @{dst.level.value}; use copy or load")
        if dst.type.dtype != src.type.dtype:
            self.diag.error(f"data movement cannot convert {src.type.dtype.value} to {dst.type.dtype.value}", s.loc,
                            "convert with a compute instruction")
        a, b = region_shape(s.dst), region_shape(s.src)
        if a is not None and b is not None and 0 not in a + b and a != b and _squeeze(a) != _squeeze(b) \
                and not _reshaping(s, a, b, dst, src):
            self.diag.error(f"region shapes differ: destination {list(a)} vs source {list(b)}", s.loc)
        if s.vec not in VEC_WIDTHS:
            self.diag.error(f"vector width must be one of {VEC_WIDTHS}", s.loc)
        elif a is not None and s.vec > 1:
            inner = a[-1] if a else 1
            if inner % s.vec:
                self.diag.error(f"vector width {s.vec} does not divide the innermost region length {inner}", s.loc)
            if self.family == "gpu" and s.vec * dst.type.dtype.nbytes > 16:
                self.diag.error(f"vector access of {s.vec * dst.type.dtype.nbytes} bytes; GPUs move at most 16",
                                s.loc)
        if s.other is not None and s.kind != "load":
            self.diag.error("'other' only applies to masked loads", s.loc)
        if s.async_ and self.family == "gpu":
            self.diag.error("'async' moves are the MLU's (completed by `sync @core`); GPU moves are synchronous",
                            s.loc)
        if s.other is not None and not s.mask:
            self.diag.error("'other' needs 'mask'", s.loc)

    def region(self, ref: ir.Ref, scope: Scope) -> Buffer | None:
        buf = scope.buffers.get(ref.name)
        if buf is None:
            self.diag.error(f"undefined buffer '{ref.name}'", ref.loc)
            return None
        if not buf.level.off_chip:
            self._family(buf.level.family, ref.loc)
        if len(ref.index) != buf.type.rank:
            self.diag.error(f"'{ref.name}' has rank {buf.type.rank} but is indexed with {len(ref.index)} indices",
                            ref.loc)
            return None
        for i in ref.index:
            parts = (i.start, i.stop) if isinstance(i, ir.Slice) else (i,)
            for p in parts:
                refs = _refs(p)
                for r in refs:
                    self.diag.error("data-dependent indexing is not supported", r.loc)
                if not refs and not is_quasi_affine(p):
                    self.diag.error("region indices must be affine in sizes and loop variables", p.loc or ref.loc)
                self.names(p, scope)
            if isinstance(i, ir.Slice):
                n = slice_extent(i.start, i.stop)
                if n is None:
                    self.diag.error("slice length must be a constant (stop - start)", i.loc or ref.loc)
                elif n <= 0:
                    self.diag.error("empty slice", i.loc or ref.loc)
        return buf

    def _assign(self, s: ir.Assign, scope: Scope) -> None:
        dst = self.region(s.target, scope)
        if dst is not None and dst.level.off_chip:
            self.diag.error(f"compute writes @{dst.level.value} tensor '{dst.name}' directly", s.target.loc,
                            "compute on on-chip tiles and move results with store")
        f64 = dst is not None and dst.type.dtype == ir.DType.f64
        self.compute_expr(s.value, scope, f64)
        shape = region_shape(s.target)
        if isinstance(s.value, ir.Call) and s.value.fn == "transpose" and len(s.value.args) == 2:   # (a view)
            inner, r = self.expr_shape(s.value.args[0], scope), transpose_rows(s.value)
            if None not in (shape, inner, r) and (math.prod(inner) != math.prod(shape) or math.prod(inner) % r):
                self.diag.error(f"transpose(a, {r}) reads a tile of shape {list(inner)} as {r} rows into a region "
                                f"of shape {list(shape)}: the element counts must agree and divide by the rows", s.loc)
            return
        vshape = self.expr_shape(s.value, scope)
        if shape is not None and vshape is not None and not _broadcasts(vshape, shape):
            self.diag.error(f"value of shape {list(vshape)} does not broadcast to the target region {list(shape)}",
                            s.loc)

    def compute_expr(self, e, scope, f64: bool = False) -> None:
        """`f64`: the target tile is f64; so is the arithmetic when a tile read or a cast is (literals of f64
        range are fine there)."""
        f64 = f64 or any(isinstance(x, ir.Call) and x.fn == "f64" or isinstance(x, ir.Ref) and x.name in
                         scope.buffers and scope.buffers[x.name].type.dtype == ir.DType.f64 for x in _subexprs(e))
        for x in _subexprs(e):
            if isinstance(x, ir.Ref):
                buf = self.region(x, scope)
                if buf is not None and buf.level.off_chip:
                    self.diag.error(f"compute reads @{buf.level.value} tensor '{x.name}' directly", x.loc,
                                    "load it into an on-chip buffer first")
            elif isinstance(x, ir.Const):
                from gir.shapes import check_literal
                check_literal(x, self.diag, f64)
            elif isinstance(x, ir.Var) and x.name not in scope.vars and x.name not in self.sizes:
                self.diag.error(f"unknown name '{x.name}'", x.loc)
            elif isinstance(x, ir.Call):
                from gir.shapes import KNOWN_FUNCS
                if x.fn == "transpose":   # kernel-only builtin: a 2-D tile with its axes swapped; transpose(a, r):
                    # a's elements read as r rows, transposed, into the target's elements (whole tiles)
                    if len(x.args) not in (1, 2):
                        self.diag.error(f"transpose() takes 1 or 2 arguments, got {len(x.args)}", x.loc)
                    elif len(x.args) == 2 and transpose_rows(x) is None:
                        self.diag.error("transpose(a, r) takes a positive integer row count r", x.loc)
                elif x.fn == "gather_cols":   # kernel-only: out[r, 0] = a[r, idx[r, 0]] (0 when out of range)
                    if len(x.args) != 2:
                        self.diag.error(f"gather_cols() takes 2 arguments, got {len(x.args)}", x.loc)
                elif x.fn == "reverse":   # kernel-only: reverse(a[, AXIS]) flips one axis of a 2-D tile (default 1)
                    if len(x.args) not in (1, 2):
                        self.diag.error(f"reverse() takes 1 or 2 arguments, got {len(x.args)}", x.loc)
                    elif len(x.args) == 2 and reverse_axis(x) is None:
                        self.diag.error("reverse() takes an axis of 0 or 1 as its second argument", x.loc)
                elif x.fn not in KNOWN_FUNCS or (KNOWN_FUNCS[x.fn] != len(x.args) and x.fn not in ("max", "min")):
                    self.diag.error(f"unknown function or wrong arity: {x.fn}/{len(x.args)}", x.loc)

    def expr_shape(self, e, scope) -> tuple[int, ...] | None:
        if isinstance(e, (ir.Const, ir.Var)):
            return ()
        if isinstance(e, ir.Ref):
            return region_shape(e)
        if isinstance(e, ir.Reduce):
            if e.op in ir.ARG_REDUCTIONS:
                self.diag.error(f"{e.op}() is an operator-layer reduction; a kernel reduces tiles with sum, max, "
                                "min, mean or prod", e.loc)
                return None
            inner = self.expr_shape(e.arg, scope)
            if inner is None:
                return None
            axes = tuple(range(len(inner))) if e.axes is None else e.axes
            if any(a >= len(inner) or a < 0 for a in axes):
                self.diag.error(f"axis out of range for a tile of rank {len(inner)}", e.loc)
                return None
            return tuple(n for k, n in enumerate(inner) if k not in axes)
        if isinstance(e, ir.Call) and e.fn == "transpose" and len(e.args) == 1:
            inner = self.expr_shape(e.args[0], scope)
            if inner is None:
                return None
            if len(inner) != 2:
                self.diag.error(f"transpose() needs a 2-D tile, got shape {list(inner)}", e.loc)
                return None
            return (inner[1], inner[0])
        if isinstance(e, ir.Call) and e.fn == "reverse" and len(e.args) in (1, 2):
            inner = self.expr_shape(e.args[0], scope)
            if inner is not None and len(inner) != 2:
                self.diag.error(f"reverse() needs a 2-D tile, got shape {list(inner)}", e.loc)
                return None
            return inner
        if isinstance(e, ir.Call) and e.fn == "gather_cols" and len(e.args) == 2:
            a, idx = (self.expr_shape(x, scope) for x in e.args)
            if a is None or idx is None:
                return None
            if len(a) != 2 or idx not in ((a[0], 1), (a[0],)):
                self.diag.error(f"gather_cols() needs a [R, C] tile and [R, 1] indices, got {list(a)} and "
                                f"{list(idx)}", e.loc)
                return None
            return (a[0], 1)
        children = [e.lhs, e.rhs] if isinstance(e, ir.BinOp) else [e.operand] if isinstance(e, ir.UnOp) else \
            list(e.args) if isinstance(e, ir.Call) else []
        shapes = [self.expr_shape(c, scope) for c in children]
        if any(s is None for s in shapes):
            return None
        out: tuple[int, ...] = ()
        for sh in shapes:
            merged = _broadcast(out, sh)
            if merged is None:
                self.diag.error(f"tile shapes {list(out)} and {list(sh)} do not broadcast", getattr(e, "loc", None))
                return None
            out = merged
        return out

    def _xreduce(self, s: ir.XReduce, scope: Scope) -> None:
        buf = self.region(s.target, scope)
        if buf is not None and buf.level != ir.Level.reg:
            self.diag.error("allreduce works on @reg values", s.loc)
        level = scope.vars.get(s.var)
        if s.var not in scope.vars or level not in (ir.ParLevel.lane, ir.ParLevel.thread):
            self.diag.error(f"allreduce must be over an enclosing @lane or @thread variable, not '{s.var}'", s.loc)
        if s.op not in ("sum", "max", "min", "prod"):
            self.diag.error(f"unknown reduction '{s.op}'", s.loc)
        if s.width is not None and (s.width < 2 or s.width > 64 or s.width & (s.width - 1)):
            self.diag.error("allreduce width must be a power of two between 2 and 64", s.loc)

    def _chain(self, s: ir.Chain, scope: Scope) -> None:
        self._family("gpu", s.loc)
        dst, src, st = (self.region(r, scope) for r in (s.target, s.src, s.status))
        for r, buf in ((s.target, dst), (s.src, src)):
            if buf is not None and (buf.level.off_chip or region_shape(r) not in ((1,), ())):
                self.diag.error("chain combines one on-chip element: a [0:1] region of a @reg or @shared buffer",
                                r.loc or s.loc)
        if dst is not None and src is not None and dst.type.dtype != src.type.dtype:
            self.diag.error(f"chain cannot convert {src.type.dtype.value} to {dst.type.dtype.value}", s.loc)
        words = 3 if src is not None and src.type.dtype.nbytes == 8 else 1
        if src is not None and src.type.dtype.nbytes not in (4, 8):
            self.diag.error(f"chain carries 32- or 64-bit values (f32, i32, f64, i64), not {src.type.dtype.value}",
                            s.loc)
        if st is not None and (not st.level.off_chip or st.type.dtype != ir.DType.i64 or
                               region_shape(s.status) not in ({(1,), ()} if words == 1 else {(3,)})):
            what = "one element" if words == 1 else "a [k:k + 3] region (flag, aggregate, prefix: a 64-bit value)"
            self.diag.error(f"the chain's status is {what} of an @global i64 tensor", s.status.loc or s.loc)
        if st is not None and s.status.name in {p.name for p in self.func.params + self.func.results}:
            self.diag.error(f"the chain's status words are scratch: allocate them at function level, not in "
                            f"'{s.status.name}', a parameter or result", s.status.loc or s.loc)
        if st is not None and not _steps_with(s.status, s.var):
            self.diag.error(f"the chain's status index must step with '{s.var}' (each block its own word, the "
                            "earlier blocks' words at the same index with an earlier value)", s.status.loc or s.loc)
        for v in [v for v, lv in scope.vars.items() if lv is None]:
            if st is not None and not _steps_with(s.status, v):
                self.diag.error(f"a chain in the loop over '{v}' needs status words of its own for each trip: its "
                                f"status index must step with '{v}'", s.status.loc or s.loc)
        if st is not None and s.status.name in self.chain_status:
            self.diag.error(f"a second chain on the status tensor '{s.status.name}' in this kernel: each chain needs "
                            "status words of its own", s.status.loc or s.loc)
        self.chain_status.add(s.status.name)
        if scope.vars.get(s.var) != ir.ParLevel.block:
            self.diag.error(f"chain must be over an enclosing @block variable, not '{s.var}'", s.loc)
        elif not (isinstance(self.block_lo.get(s.var), ir.Const) and self.block_lo[s.var].value == 0):
            self.diag.error(f"the @block variable '{s.var}' of a chain must start at 0", s.loc)
        if ir.ParLevel.thread not in scope.levels:
            self.diag.error("chain is reached by the threads of a block: put it inside the @thread scope", s.loc)
        if s.op not in ("sum", "max", "min", "prod"):
            self.diag.error(f"unknown chain operation '{s.op}' (sum, prod, max, min)", s.loc)


def _steps_with(ref: ir.Ref, var: str) -> bool:
    """Does some index of `ref` hold `var` affinely with a nonzero coefficient (and none hold it otherwise)?"""
    found = False
    for i in ref.index:
        if isinstance(i, ir.Slice):
            parts = (i.start, i.stop)
        else:
            parts = (i,)
        for p in parts:
            if var not in free_vars(p):
                continue
            aff = to_affine(p)
            if aff is None:
                return False
            found = found or bool(aff.coeffs.get(var))
    return found


def _reshaping(s: ir.Move, a, b, dst, src) -> bool:
    """An MLU load or store between a run of one @gdram axis and an @nram tile of the same number of elements
    (row-major order; the MLU emitter checks that the tile's region is contiguous): a chunk of a long row seen as
    rows of a tile; or between a contiguous @gdram region and a 1-D @nram run; or an @nram copy packing a
    region's rows into a 1-D run (or spreading them from one): a transpose's short rows moved as one transfer.
    Masked: an @gdram region and a 1-D @nram run, both clipped to the same prefix (dense-staging's runs)."""
    if math.prod(a) != math.prod(b):
        return False
    if s.kind == "copy":   # NRAM rows packed into (or spread from) a 1-D NRAM run of the same count
        return not s.mask and dst.level == src.level == ir.Level.nram and 1 in (len(_squeeze(a)), len(_squeeze(b)))
    off = src if s.kind == "load" else dst
    on = dst if s.kind == "load" else src
    run = a if s.kind == "store" else b
    tile = b if s.kind == "store" else a
    return (s.kind in ("load", "store") and off.level.off_chip and on.level == ir.Level.nram
            and (len(_squeeze(tile)) == 1 or not s.mask and len(_squeeze(run)) == 1))


def transpose_rows(e: ir.Call) -> int | None:
    """The row count r of `transpose(a, r)` (a positive integer constant), else None."""
    r = e.args[1] if len(e.args) == 2 else None
    if isinstance(r, ir.Const) and isinstance(r.value, int) and not isinstance(r.value, bool) and r.value > 0:
        return r.value
    return None


def _squeeze(shape):
    return tuple(n for n in shape if n != 1)


def _broadcast(a, b):
    out = []
    for x, y in zip(((1,) * (len(b) - len(a)) + tuple(a)), ((1,) * (len(a) - len(b)) + tuple(b))):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


def _broadcasts(src, dst) -> bool:
    if len(src) > len(dst):
        return _squeeze(src) == _squeeze(dst)
    merged = _broadcast(src, dst)
    return merged == tuple(dst) or _squeeze(src) == _squeeze(dst)


def _subexprs(e):
    from gir.shapes import _walk
    return _walk(e)


def _refs(e):
    return [x for x in _subexprs(e) if isinstance(x, ir.Ref)]
