"""Explicit GIR kernel → kernel AST (`codegen.ast`), the same for every C-style GPU backend.

Mapping (docs/codegen.md has the full table): @block → blockIdx, @thread / @warp×@lane → threadIdx
(with `if (id < extent)` guards where a scope is narrower than the launch), @shared → `__shared__`
arrays, @reg → local arrays indexed by compile-time constants (regions are unrolled element by element,
constant-trip loops get `#pragma unroll`), moves with `vec` → 16/8/4-byte vector accesses, `mask` →
per-element bounds predicates with a whole-vector fast path, allreduce → xor-shuffle butterfly.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from gir.codegen import ast as C
from gir.codegen.exprs import Compute, add, cname, combine, index_expr, mul, read_elem, write_elem
from gir.codegen.launch import LaunchPlan, extent_expr, plan_launch
from gir import ir
from gir.affine import Affine, free_vars, slice_extent, to_affine
from gir.chain import per_thread, stride_coeffs
from gir.walk import stmt_exprs, walk_stmts
from gir.errors import GirError

MAX_UNROLL = 64  # loops with a constant trip count up to this get `#pragma unroll`
MAX_TILE = 1024  # elements per instruction (regions are unrolled element by element)


@dataclass
class Buf:
    name: str
    cname: str
    dtype: str
    shape: tuple  # ints (on chip) or ints/size names (global)
    level: ir.Level

    def dim(self, d: int) -> C.CExpr:
        n = self.shape[d]
        return C.Num(n) if isinstance(n, int) else C.Id(cname(n))


@dataclass
class Region:
    buf: Buf
    index: tuple  # per buffer dim: ir.Expr (point) or ir.Slice
    shape: tuple[int, ...]

    def dim_exprs(self, ridx: tuple[int, ...]) -> list[tuple[C.CExpr, Affine | None]]:
        """The index of element `ridx` of the region along every buffer dimension (C and affine form)."""
        out, it = [], iter(ridx)
        for i in self.index:
            if isinstance(i, ir.Slice):
                e = next(it) * i.step
                aff = to_affine(i.start)
                out.append((add(index_expr(i.start), C.Num(e)), None if aff is None else aff + Affine({}, e)))
            else:
                out.append((index_expr(i), to_affine(i)))
        return out

    def offset(self, ridx: tuple[int, ...]) -> C.CExpr:
        off: C.CExpr = C.Num(0)
        for d, (e, _) in enumerate(self.dim_exprs(ridx)):
            off = add(mul(off, self.buf.dim(d)), e)
        return off

    def aligned(self, ridx: tuple[int, ...], elems: int) -> bool:
        """Is the element offset a multiple of `elems` for all variable values (on-chip buffers)?"""
        total = Affine({}, 0)
        stride = 1
        for d in reversed(range(len(self.index))):
            aff = self.dim_exprs(ridx)[d][1]
            if aff is None or not isinstance(self.buf.shape[d], int):
                return False
            total = total + aff.scale(stride)
            stride *= self.buf.shape[d]
        return total.const % elems == 0 and all(c % elems == 0 for c in total.coeffs.values())

    @property
    def contiguous(self) -> bool:
        last = self.index[-1] if self.index else None
        return isinstance(last, ir.Slice) and last.step == 1

    def in_bounds(self, ridx: tuple[int, ...]) -> list[C.CExpr]:
        terms = []
        for d, (e, aff) in enumerate(self.dim_exprs(ridx)):
            n = self.buf.shape[d]
            if aff is None or aff.const < 0 or any(c < 0 for c in aff.coeffs.values()):
                terms.append(C.Bin(">=", e, C.Num(0)))
            if not (isinstance(e, C.Num) and isinstance(n, int) and e.value < n):
                terms.append(C.Bin("<", e, self.buf.dim(d)))
        return terms


def conj(terms: list[C.CExpr]) -> C.CExpr:
    out: C.CExpr | None = None
    for t in terms:
        out = t if out is None else C.Bin("&&", out, t)
    return out if out is not None else C.Num(True, "b")


@dataclass
class Ctx:
    """Where a statement sits: inside a thread scope? under a guard narrower than the block?"""
    in_threads: bool = False  # inside @thread or @lane
    in_warp: bool = False
    guarded: bool = False
    thread_vars: dict = field(default_factory=dict)  # var → ("thread", dim, ext) | ("lane", ext)


class KernelLowerer:
    def __init__(self, func: ir.Func, kernel: ir.Kernel, target, index_type: str, sizes: dict[str, int]):
        self.func, self.kernel, self.target = func, kernel, target
        self.index_type = index_type
        self.index_kind = "l" if index_type == "int64" else "i"
        self.sizes = sizes
        self.size_names = set(func.size_symbols())
        self.buffers: dict[str, Buf] = {}
        for p in func.params + func.results:
            self.buffers[p.name] = Buf(p.name, cname(p.name), p.type.dtype.value, p.type.shape, ir.Level.global_)
        for it in func.body:
            if isinstance(it, ir.Alloc):
                self.buffers[it.name] = Buf(it.name, cname(it.name), it.type.dtype.value, it.type.shape, it.level)
        self.shared: list[C.Decl] = []
        self.counter = itertools.count()
        self.plan: LaunchPlan = plan_launch(kernel, sizes, self.size_names)
        self.block = self.plan.block_dims()
        self.uses_chain = False   # the prelude then carries the look-back helpers (cstyle.CHAIN_HELPERS)

    def fresh(self, prefix: str) -> str:
        return f"gir_{prefix}{next(self.counter)}"

    # --------------------------------------------------------------- regions
    def region(self, ref: ir.Ref) -> Region:
        buf = self.buffers.get(ref.name)
        if buf is None:
            raise GirError(f"undefined buffer '{ref.name}'", ref.loc)
        shape = []
        for i in ref.index:
            if isinstance(i, ir.Slice):
                n = slice_extent(i.start, i.stop)
                if n is None:
                    raise GirError("slice length must be a constant (stop - start)", i.loc or ref.loc)
                shape.append(max(0, -(-n // i.step)))
        if math.prod(shape) > MAX_TILE:
            raise GirError(f"region of {math.prod(shape)} elements is too large for one thread "
                           f"(at most {MAX_TILE})", ref.loc)
        return Region(buf, ref.index, tuple(shape))

    # ------------------------------------------------------------ top level
    def lower(self) -> C.KernelFunc:
        body = []
        for s in self.kernel.body:
            body += self.stmt(s, Ctx())
        threads = math.prod(self.block)
        return C.KernelFunc(self.kernel.name, self.params(), tuple(body), threads, tuple(self.shared),
                            self.index_type)

    def params(self) -> tuple[C.Param, ...]:
        used, written = set(), set()
        sizes = set()
        for s in walk_stmts(self.kernel.body):
            for e in stmt_exprs(s):
                sizes |= free_vars(e) & self.size_names
                used |= {r.name for r in _refs(e)}
            if isinstance(s, ir.Move):
                written.add(s.dst.name)
            elif isinstance(s, ir.Chain):
                written.add(s.status.name)
        out = []
        for name, buf in self.buffers.items():
            if name in used and buf.level.off_chip:
                out.append(C.Param(buf.cname, buf.dtype, "tensor", const=name not in written))
                sizes |= {d for d in buf.shape if isinstance(d, str)}
        for name in self.func.size_symbols():
            if name in sizes:
                out.append(C.Param(cname(name), "index", "size"))
        return tuple(out)

    # ------------------------------------------------------------ statements
    def stmts(self, body, ctx: Ctx) -> list[C.CStmt]:
        return [c for s in body for c in self.stmt(s, ctx)]

    def stmt(self, s, ctx: Ctx) -> list[C.CStmt]:
        if isinstance(s, ir.Parallel):
            return self.parallel(s, ctx)
        if isinstance(s, ir.For):
            trip = _trip(s)
            return [C.For(cname(s.var), index_expr(s.lo), index_expr(s.hi), tuple(self.stmts(s.body, ctx)),
                          s.step, unroll=trip is not None and trip <= MAX_UNROLL)]
        if isinstance(s, ir.If):
            return [C.If(index_expr(s.cond), tuple(self.stmts(s.then, ctx)), tuple(self.stmts(s.orelse, ctx)))]
        if isinstance(s, ir.Alloc):
            return self.alloc(s)
        if isinstance(s, ir.Sync):
            if ctx.guarded:
                raise GirError("sync inside a scope narrower than the thread block would deadlock", s.loc)
            return [C.Barrier("block" if s.level == ir.ParLevel.block else "warp")]
        if isinstance(s, ir.Move):
            out = self.move(s)
        elif isinstance(s, ir.Assign):
            out = self.compute(s)
        elif isinstance(s, ir.XReduce):
            out = self.allreduce(s, ctx)
        elif isinstance(s, ir.Chain):
            return self.chain(s, ctx)
        else:
            raise GirError(f"{type(s).__name__} is not supported in a GPU kernel", getattr(s, "loc", None))
        return self.single(out, ctx)

    def single(self, out: list[C.CStmt], ctx: Ctx) -> list[C.CStmt]:
        """Statements outside thread scopes run once per block (or per warp): thread/lane 0 does them."""
        if ctx.in_threads:
            return out
        if ctx.in_warp:
            cond = C.Bin("==", C.Bin("%", C.Special("thread_idx", 0), C.Num(self.plan.lane_stride)), C.Num(0))
        else:
            terms = [C.Bin("==", C.Special("thread_idx", d), C.Num(0)) for d in range(3) if self.block[d] > 1]
            if not terms:
                return out
            cond = conj(terms)
        return [C.If(cond, tuple(out))]

    def alloc(self, s: ir.Alloc) -> list[C.CStmt]:
        n = math.prod(s.type.shape)
        buf = Buf(s.name, cname(s.name), s.type.dtype.value, s.type.shape, s.level)
        if s.level == ir.Level.shared:
            taken = {d.name for d in self.shared}
            if buf.cname in taken:
                buf.cname = self.fresh(buf.cname + "_")
            self.shared.append(C.Decl(buf.dtype, buf.cname, size=n, space="shared"))
            self.buffers[s.name] = buf
            return []
        if s.level != ir.Level.reg:
            raise GirError(f"@{s.level.value} buffers do not exist on GPUs", s.loc)
        self.buffers[s.name] = buf
        return [C.Decl(buf.dtype, buf.cname, size=n)]

    def parallel(self, p: ir.Parallel, ctx: Ctx) -> list[C.CStmt]:
        plan, lo = self.plan, index_expr(p.lo)
        dim = plan.dims[id(p)]
        inner = Ctx(ctx.in_threads, ctx.in_warp, ctx.guarded, dict(ctx.thread_vars))
        guard = None
        if p.level == ir.ParLevel.block:
            hw: C.CExpr = C.Special("block_idx", dim)
            if len(plan.grid[dim]) > 1:
                guard = C.Bin("<", hw, index_expr(extent_expr(p)))
        else:
            ext = _extent_value(p, self.sizes)
            if p.level == ir.ParLevel.thread:
                hw, launch = C.Special("thread_idx", dim), self.block[dim]
                inner.thread_vars[p.var] = ("thread", dim, ext)
                inner.in_threads = True
            elif p.level == ir.ParLevel.warp:
                hw, launch = C.Bin("/", C.Special("thread_idx", 0), C.Num(plan.lane_stride)), max(plan.warps)
                inner.in_warp = True
            elif p.level == ir.ParLevel.lane:
                hw, launch = C.Bin("%", C.Special("thread_idx", 0), C.Num(plan.lane_stride)), plan.lane_stride
                if plan.lane_stride > self.target.warp_size:
                    raise GirError(f"@lane extent {plan.lane_stride} exceeds the {self.target.name} warp size "
                                   f"{self.target.warp_size}", p.loc)
                if max(plan.warps) == 1:
                    hw = C.Special("thread_idx", 0)
                inner.thread_vars[p.var] = ("lane", 0, ext)
                inner.in_threads = True
            else:
                raise GirError(f"@{p.level.value} scopes do not exist on GPUs", p.loc)
            if ext != launch:
                guard = C.Bin("<", hw, C.Num(ext))
                inner.guarded = True
        body: list[C.CStmt] = [C.Decl("index", cname(p.var), add(C.Cast("index", hw), lo))]
        rest = self.stmts(p.body, inner)
        body += [C.If(guard, tuple(rest))] if guard is not None else rest
        return [C.Block(tuple(body))]

    # ------------------------------------------------------------- movement
    def move(self, s: ir.Move) -> list[C.CStmt]:
        dst, src = self.region(s.dst), self.region(s.src)
        de = list(itertools.product(*(range(n) for n in dst.shape)))
        se = list(itertools.product(*(range(n) for n in src.shape)))
        if len(de) != len(se):
            raise GirError("region sizes differ", s.loc)
        dtype = dst.buf.dtype
        width = s.vec if s.vec > 1 and len(de) % s.vec == 0 else 1
        nbytes = width * ir.DType(dtype).nbytes
        masked = [r for r in (dst, src) if r.buf.level.off_chip] if s.mask else []
        out: list[C.CStmt] = []
        for c in range(0, len(de), width):
            pairs = list(zip(de[c:c + width], se[c:c + width]))
            scalar = [self.masked_elem(dst, d, src, e, masked, s.other, dtype) for d, e in pairs]
            if width == 1:
                out += scalar
                continue
            vec = self.vector_move(dst, src, pairs, dtype, nbytes)
            if not masked:
                out += vec
                continue
            terms: list[C.CExpr] = []
            for r in masked:
                key = 0 if r is dst else 1
                for t in r.in_bounds(pairs[0][key]) + r.in_bounds(pairs[-1][key]):
                    if t not in terms:
                        terms.append(t)
                terms.append(C.AddrAligned(r.buf.cname, r.offset(pairs[0][key]), nbytes))
            out.append(C.If(conj(terms), tuple(vec), tuple(scalar)))
        return out

    def masked_elem(self, dst: Region, d, src: Region, e, masked, other, dtype) -> C.CStmt:
        lhs = C.Index(dst.buf.cname, dst.offset(d))
        copy = C.Assign(lhs, C.Index(src.buf.cname, src.offset(e)))
        if not masked:
            return copy
        terms = [t for r in masked for t in r.in_bounds(d if r is dst else e)]
        orelse = ()
        if other is not None:
            kind = ("d" if dtype == "f64" else "f") if isinstance(other, float) else "i"
            orelse = (C.Assign(lhs, write_elem(dtype, C.Num(other, kind), kind)),)
        return C.If(conj(terms), (copy,), orelse)

    def vector_move(self, dst: Region, src: Region, pairs, dtype: str, nbytes: int) -> list[C.CStmt]:
        width = len(pairs)

        def vec_ok(r: Region, ridx) -> bool:
            return r.contiguous and (r.buf.level.off_chip or r.aligned(ridx, width))

        d0, s0 = pairs[0]
        dv, sv = vec_ok(dst, d0), vec_ok(src, s0)
        dref = C.VecRef(dst.buf.cname, dst.offset(d0), dtype, nbytes)
        sref = C.VecRef(src.buf.cname, src.offset(s0), dtype, nbytes, const=True)
        if dv and sv:
            return [C.Assign(dref, sref)]
        if not dv and not sv:
            return [C.Assign(C.Index(dst.buf.cname, dst.offset(d)), C.Index(src.buf.cname, src.offset(e)))
                    for d, e in pairs]
        tmp = self.fresh("v")
        body: list[C.CStmt] = [C.Decl(dtype, tmp, size=width)]
        if sv:
            body.append(C.Assign(C.VecRef(tmp, C.Num(0), dtype, nbytes), sref))
            body += [C.Assign(C.Index(dst.buf.cname, dst.offset(d)), C.Index(tmp, C.Num(k)))
                     for k, (d, _) in enumerate(pairs)]
        else:
            body += [C.Assign(C.Index(tmp, C.Num(k)), C.Index(src.buf.cname, src.offset(e)))
                     for k, (_, e) in enumerate(pairs)]
            body.append(C.Assign(dref, C.VecRef(tmp, C.Num(0), dtype, nbytes, const=True)))
        return [C.Block(tuple(body))]

    # --------------------------------------------------------------- compute
    def compute(self, s: ir.Assign) -> list[C.CStmt]:
        tr = self.region(s.target)
        if tr.buf.level.off_chip:
            raise GirError("compute instructions write on-chip buffers only", s.loc)
        elems = list(itertools.product(*(range(n) for n in tr.shape)))
        pre: list[C.CStmt] = []
        comp = Compute(self, pre)
        values = [comp.at(s.value, idx, tr.shape) for idx in elems]
        offsets = [tr.offset(idx) for idx in elems]
        # write through temps only if some element reads another element of the target
        staged = any(x.base == tr.buf.cname and x.index != off
                     for (v, _), off in zip(values, offsets) for x in _indexes(v))
        writes: list[C.CStmt] = []
        for idx, (v, k) in zip(elems, values):
            if staged:
                tmp = self.fresh("t")
                pre.append(C.Decl({"f": "float", "d": "double", "i": "int", "l": "i64", "b": "bool"}[k], tmp, v))
                v = C.Id(tmp)
            writes.append(C.Assign(C.Index(tr.buf.cname, tr.offset(idx)), write_elem(tr.buf.dtype, v, k)))
        return [C.Block(tuple(pre + writes))] if pre else writes

    def chain(self, s: ir.Chain, ctx: Ctx) -> list[C.CStmt]:
        """`gir_chain_OP(word, g, value, stride)` (cstyle.CHAIN_HELPERS) runs the decoupled look-back: in every
        thread for a chain per thread (the status index names a thread variable), else in thread 0, which leaves
        the block's exclusive prefix in a shared slot that every thread reads between two barriers."""
        thread_chain = per_thread(s, ctx.thread_vars)
        if not ctx.in_threads or (ctx.guarded and not thread_chain):
            raise GirError("chain must be reached by every thread of the block (inside an unguarded @thread scope)",
                           s.loc)
        src, dst, st = self.region(s.src), self.region(s.target), self.region(s.status)
        self.uses_chain = True
        stride: C.CExpr = C.Num(0)
        for d, coeff in enumerate(stride_coeffs(s)):
            stride = add(mul(stride, st.buf.dim(d)), C.Num(coeff))
        call = C.Call(f"gir_chain_{s.op}", (C.Bin("+", C.Id(st.buf.cname), st.offset((0,) * len(st.shape))),
                                            C.Cast("i64", index_expr(ir.Var(s.var))),
                                            C.Index(src.buf.cname, src.offset((0,) * len(src.shape))),
                                            C.Cast("i64", stride)))
        to = C.Index(dst.buf.cname, dst.offset((0,) * len(dst.shape)))
        if thread_chain:
            return [C.Assign(to, call)]
        slot = self.fresh("chain")
        self.shared.append(C.Decl(src.buf.dtype, slot, size=1, space="shared"))
        at = C.Index(slot, C.Num(0))
        first = [C.Bin("==", C.Special("thread_idx", d), C.Num(0)) for d in range(3) if self.block[d] > 1]
        publish = C.Assign(at, call)
        return [C.If(conj(first), (publish,)) if first else publish, C.Barrier("block"), C.Assign(to, at),
                C.Barrier("block")]

    def allreduce(self, s: ir.XReduce, ctx: Ctx) -> list[C.CStmt]:
        info = ctx.thread_vars.get(s.var)
        if info is None:
            raise GirError(f"allreduce over '{s.var}', which is not an enclosing @lane/@thread variable", s.loc)
        kind, dim, ext = info
        width = s.width or ext
        lanes = self.plan.lane_stride if kind == "lane" else self.block[0]
        if width & (width - 1) or width > self.target.warp_size:
            raise GirError(f"allreduce width {width} must be a power of two up to the {self.target.name} warp size "
                           f"{self.target.warp_size}", s.loc)
        if dim != 0 or lanes % width or (ctx.guarded and ext % width):
            raise GirError("allreduce needs its lanes to be consecutive hardware lanes: reduce over the "
                           "innermost thread dimension, whose extent must be a multiple of the width", s.loc)
        threads = math.prod(self.block)
        if threads % self.target.warp_size and threads > self.target.warp_size:
            raise GirError(f"allreduce in a block of {threads} threads (not a multiple of the warp size)", s.loc)
        mask = (1 << min(threads, 32)) - 1
        reg = self.region(s.target)
        out: list[C.CStmt] = []
        for idx in itertools.product(*(range(n) for n in reg.shape)):
            ref = C.Index(reg.buf.cname, reg.offset(idx))
            v, k = read_elem(reg.buf.dtype, ref)
            k = "i" if k == "b" else k
            acc = self.fresh("a")
            body: list[C.CStmt] = [C.Decl({"f": "float", "d": "double", "i": "int", "l": "i64"}[k], acc, v)]
            off = width // 2
            while off >= 1:
                other = C.Intrinsic("shfl_xor", (C.Id(acc), C.Num(off), C.Num(width), C.Num(mask)))
                body.append(C.Assign(C.Id(acc), combine(s.op, C.Id(acc), k, other, k)[0]))
                off //= 2
            body.append(C.Assign(ref, write_elem(reg.buf.dtype, C.Id(acc), k)))
            out.append(C.Block(tuple(body)))
        return out


def _extent_value(p: ir.Parallel, sizes) -> int:
    from gir.codegen.launch import _const_extent
    return _const_extent(p, sizes)


def _trip(s: ir.For) -> int | None:
    a, b = to_affine(s.lo), to_affine(s.hi)
    if a is None or b is None or not (b - a).is_const:
        return None
    return max(0, -(-(b - a).const // s.step))


def _refs(e) -> list[ir.Ref]:
    from gir.shapes import _walk
    return [x for x in _walk(e) if isinstance(x, ir.Ref)]


def _indexes(e: C.CExpr):
    """Every array read (`Index`) inside a C expression."""
    if isinstance(e, C.Index):
        yield e
    for attr in ("lhs", "rhs", "operand", "cond", "then", "orelse", "index"):
        child = getattr(e, attr, None)
        if child is not None and not isinstance(child, str):
            yield from _indexes(child)
    for child in getattr(e, "args", ()):
        yield from _indexes(child)


def describe_grid(plan: LaunchPlan) -> list[str]:
    return [plan.grid_text(d) for d in range(3)]


__all__ = ["KernelLowerer", "describe_grid"]
