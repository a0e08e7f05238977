"""Explicit MLU GIR → BANG-C-like program text (the language of targets/mlu, see targets/mlu/LANGUAGE.md).

Mapping: every func parameter, result and function-level `alloc @gdram` is a kernel pointer argument; `parallel
@core` is `taskId` (or `coreId` under `parallel @cluster`, which is `clusterId`); statements of a cluster scope
outside its core scope run on core 0 followed by `__sync_cluster()`; on-chip allocs become static `__nram__` /
`__mlu_shared__` arrays laid out by `passes.schedule_mlu.layout`; moves become `__memcpy` with the direction of
their levels and up to two stride levels; computes on 1-element tiles become scalar C, the rest `__bang_*` calls.

Software pipelining is an IR rewrite (passes/schedule_mlu/swpipe.py, the `software-pipeline` pass): this emitter
prints what it produced -- `with async` moves as `__memcpy_async`, `sync @core` as `__sync_io_move_compute()`, and
a tile allocated `with slots=k` as k consecutive tiles, its references' first index selecting one
(`emit_func(..., pipeline=True)` runs the pass first for callers that hand over scheduled kernels).

Last, `codegen/mlu/fuse.py` merges multiply and add/sub vector ops whose intermediate is dead into `__bang_fusion`
(`fuse=False` turns it off; `metadata["fused_ops"]` counts the merges).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from gir import ir
from gir.codegen import ast as C
from gir.codegen.mlu.printer import CTYPE, MluPrinter
from gir.errors import GirError
from gir.codegen.mlu.cexpr import ScalarExpr, index_ast
from gir.codegen.mlu.fuse import fuse_stmts
from gir.codegen.mlu.movedims import masked_run, reshaped_dims
from gir.codegen.mlu.instr import add, assign, call, f32, is_zero, mask_loop, mul
from gir.passes.schedule_mlu.staging import stage_func
from gir.passes.schedule_mlu.swpipe import is_one_trip, pipeline_func, slice_len as _const_len
from gir.walk import map_expr
from gir.codegen.mlu.vecops import COL, CONST, FULL, IDENT, ROW, SCALAR, Opd, VecEmitter
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.exactdiv import is_exact

DIR = {("gdram", "nram"): "GDRAM2NRAM", ("nram", "gdram"): "NRAM2GDRAM", ("gdram", "sram"): "GDRAM2SRAM",
       ("sram", "nram"): "SRAM2NRAM", ("nram", "nram"): "NRAM2NRAM", ("nram", "sram"): "NRAM2SRAM",
       ("sram", "gdram"): "SRAM2GDRAM", ("gdram", "gdram"): "GDRAM2GDRAM"}


@dataclass
class MluKernelSource:
    name: str
    source: str
    metadata: dict = field(default_factory=dict)  # task_dim, params (names in order), func
    kernel: C.KernelFunc | None = None            # the kernel AST `source` prints


@dataclass
class _Buf:
    name: str
    dtype: ir.DType
    shape: tuple
    level: str
    slots: int = 1      # pipeline slots: 2 (loaded or stored tiles), 3 (tiles both loaded and stored)
    dense: bool = False  # a 2-D tile of a `layout=dense` kernel: rows are not padded (pitch = columns)

    @property
    def double(self) -> bool:
        return self.slots > 1

    @property
    def pitch(self) -> int:
        return self.shape[-1] if self.dense else L.pitch(self.shape)

    @property
    def phys(self) -> int:
        if self.level == "gdram":
            n = 1
            for d in self.shape:
                n *= d
            return n
        n = L.round_up(self.shape[0] * self.shape[1], L.PITCH) if self.dense else L.phys_elems(self.shape)
        # whole 128-byte units, so that every pipeline slot starts aligned (64 elements are only 64 bytes of bool)
        return L.round_up(n, L.VECTOR_ALIGN // L.device_nbytes(self.dtype))


def emit_func(func: ir.Func, pipeline: bool = True, fuse: bool = True) -> list[MluKernelSource]:
    """``pipeline``: run the software-pipeline and dense-staging passes first (no-ops on kernels they already
    rewrote); ``fuse``: merge multiply and add/sub vector ops into `__bang_fusion` (codegen/mlu/fuse.py)."""
    from gir.passes.analysis.limits import mlu_index_overflow
    if pipeline:
        func = stage_func(pipeline_func(func))
    gbufs = {}
    for p in func.params + func.results:
        if any(isinstance(d, str) for d in p.type.shape):
            raise GirError(f"the MLU target needs concrete sizes; '{p.name}' has a symbolic shape", p.loc)
        gbufs[p.name] = _Buf(p.name, p.type.dtype, tuple(p.type.shape), "gdram")
    for item in func.body:
        if isinstance(item, ir.Alloc):
            gbufs[item.name] = _Buf(item.name, item.type.dtype, tuple(item.type.shape), "gdram")
    decls = {x.name: x.loc for x in func.params + func.results + tuple(i for i in func.body if isinstance(i, ir.Alloc))}
    for b in gbufs.values():   # every offset below is C `int` (the language has no 64-bit integers)
        too_big = mlu_index_overflow(b.name, b.phys)
        if too_big:
            raise GirError(too_big[0], decls.get(b.name), too_big[1])
    return [_KernelEmitter(func, k, gbufs, pipeline, fuse).run() for k in func.kernels]


def emit_module(module: ir.Module, pipeline: bool = True) -> list[MluKernelSource]:
    return [src for f in module.funcs for src in emit_func(f, pipeline)]


class _KernelEmitter:
    def __init__(self, func, kernel: ir.Kernel, gbufs, pipeline, fuse=True):
        self.func, self.k, self.gbufs, self.pipeline, self.fuse = func, kernel, gbufs, pipeline, fuse
        # `with layout=dense`: 2-D @nram tiles keep their rows unpadded (the tile recipe's [rows, 32] f32 slabs;
        # passes/schedule_mlu/tiles.py); every other kernel pads rows to 64 elements (layout.py)
        self.dense = dict(kernel.attrs).get("layout") == "dense"
        # `with pipeline=units`: work units decoded by one-trip loops (passes/schedule_mlu/swpipe.py); their
        # single-element computes are scalar code (compute)
        self.through = dict(kernel.attrs).get("pipeline") == "units"
        self.bufs: dict[str, _Buf] = dict(gbufs)
        self.out: list = []   # the statements (codegen/ast.py) of the block being built
        self.scratch: list[tuple[str, int]] = []
        self.scratch16: list[tuple[str, int, str]] = []   # 16-bit scratch vectors (name, elements, type)
        self.erf_slots = 0
        self.cur: dict[str, C.CExpr] = {}   # slotted tile name -> its slot index (of the compute being emitted)
        self.tasks = 1
        self.prologue: list = []   # statements before the body (column masks)

    # ------------------------------------------------------------ driver
    def run(self) -> MluKernelSource:
        self._collect(self.k.body)
        body = self.block(self.k.body)
        arrays = [C.Decl(b.dtype.value, b.name, size=b.phys * b.slots, space=b.level)
                  for b in self.bufs.values() if b.level in ("nram", "sram")]
        arrays += [C.Decl("f32", name, size=n, space="nram") for name, n in self.scratch]
        arrays += [C.Decl(dt, name, size=n, space="nram") for name, n, dt in self.scratch16]
        nram = sum(L.round_up(b.phys * b.slots * L.device_nbytes(b.dtype), L.VECTOR_ALIGN) for b in self.bufs.values()
                   if b.level == "nram") + sum(L.round_up(n * 4, L.VECTOR_ALIGN) for _, n in self.scratch) + \
            sum(L.round_up(n * 2, L.VECTOR_ALIGN) for _, n, _ in self.scratch16)
        params = tuple(C.Param(b.name, b.dtype.value, "tensor") for b in self.gbufs.values())
        body, fused = tuple(self.prologue) + body, 0
        if self.fuse:   # multiply-add pairs of the vector instructions as one __bang_fusion (fuse.py)
            types = {b.name: CTYPE[b.dtype.value] for b in self.bufs.values()}
            types.update((n, "float") for n, _ in self.scratch)
            types.update((n, CTYPE[dt]) for n, _, dt in self.scratch16)
            sizes = {b.name: b.phys * b.slots for b in self.bufs.values() if b.level in ("nram", "sram")}
            sizes.update(self.scratch)
            sizes.update((n, k) for n, k, _ in self.scratch16)
            body, fused = fuse_stmts(body, types, MluPrinter(), sizes)
        kernel = C.KernelFunc(self.k.name, params, body, shared=tuple(arrays))
        text = MluPrinter().kernel(kernel)
        return MluKernelSource(self.k.name, text, {"task_dim": self.tasks, "params": list(self.gbufs),
                                                   "func": self.func.name, "fused_ops": fused,
                                                   "nram_bytes": nram}, kernel)

    def _collect(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, ir.Alloc):
                if s.level.value not in ("nram", "sram"):
                    raise GirError(f"MLU kernels allocate @nram or @sram, not @{s.level.value}", s.loc)
                shape = tuple(s.type.shape)[1:] if s.slots > 1 else tuple(s.type.shape)
                dense = self.dense and len(shape) == 2 and not L.is_rowvec(shape)
                self.bufs[s.name] = _Buf(s.name, s.type.dtype, shape, s.level.value, s.slots, dense=dense)
            elif isinstance(s, (ir.Parallel, ir.For)):
                self._collect(s.body)
            elif isinstance(s, ir.If):
                self._collect(s.then + s.orelse)

    def emit(self, stmt) -> None:
        """Append a statement (codegen/ast.py) to the block being built."""
        self.out.append(stmt)

    # ------------------------------------------------------------ statements
    def stmt(self, s) -> None:
        if isinstance(s, ir.Alloc):
            return
        if isinstance(s, ir.Parallel):
            return self.parallel(s)
        if isinstance(s, ir.For):
            if is_one_trip(s):   # a work unit's decoded index: a scoped declaration
                return self.emit(C.Block((C.Decl("int", s.var, index_ast(s.lo)), *self.block(s.body))))
            return self.emit(C.For(s.var, index_ast(s.lo), index_ast(s.hi), self.block(s.body), s.step))
        if isinstance(s, ir.If):
            cond = _index_cond(s.cond) or ScalarExpr(None, None, None).expr(s.cond)[0]
            return self.emit(C.If(cond, self.block(s.then), self.block(s.orelse)))
        if isinstance(s, ir.Sync):
            return self.emit(C.Barrier(s.level.value if s.level in (ir.ParLevel.cluster, ir.ParLevel.all)
                                       else "core"))
        if isinstance(s, ir.Move):
            return self.move(s)
        if isinstance(s, ir.Assign):
            return self.compute(s)
        raise GirError(f"{type(s).__name__} is not supported by the MLU target", getattr(s, "loc", None))

    def block(self, stmts) -> tuple:
        """The statements of `stmts` as a block of their own."""
        saved, self.out = self.out, []
        try:
            for s in stmts:
                self.stmt(s)
            return tuple(self.out)
        finally:
            self.out = saved

    def parallel(self, s: ir.Parallel) -> None:
        lo, hi = index_ast(s.lo), index_ast(s.hi)
        if not is_zero(lo) or not (isinstance(hi, C.Num) and isinstance(hi.value, int)):
            raise GirError("MLU parallel scopes run over 0..constant", s.loc)
        hi = hi.value
        if s.level == ir.ParLevel.cluster:
            self.tasks = int(hi) * 4
            self.emit(C.Decl("int", s.var, C.Id("clusterId")))
            own = [x for x in s.body if not isinstance(x, (ir.Parallel, ir.Alloc, ir.Sync))]
            if own:   # the cluster's own statements run on its core 0
                self.emit(C.If(C.Bin("==", C.Id("coreId"), C.Num(0)), self.block(own)))
            for x in s.body:
                if isinstance(x, (ir.Parallel, ir.Sync)):
                    self.stmt(x)
            return
        if s.level != ir.ParLevel.core:
            raise GirError(f"@{s.level.value} is a GPU level; MLU kernels use @cluster and @core", s.loc)
        if self.tasks == 1:
            self.tasks = int(hi)
        self.emit(C.Decl("int", s.var, C.Id("coreId" if self.tasks != int(hi) else "taskId")))
        for x in s.body:
            self.stmt(x)

    # ------------------------------------------------------------ data movement
    def _ptr(self, name: str) -> C.CExpr:
        """The buffer's pointer: its slot's start for a slotted tile of the compute being emitted."""
        b = self.bufs[name]
        if b.double and name in self.cur:
            return C.Bin("+", C.Id(name), mul(self.cur[name], b.phys))
        return C.Id(name)

    def _slotted(self, r: ir.Ref, cur: dict) -> ir.Ref:
        """`r` without the slot index of a slotted tile; the slot's index (unless 0) goes into `cur`."""
        b = self.bufs.get(r.name)
        if b is None or b.slots == 1:
            return r
        if len(r.index) != len(b.shape) + 1 or isinstance(r.index[0], ir.Slice):
            raise GirError(f"'{r.name}' has {b.slots} pipeline slots: its first index selects one", r.loc)
        slot = index_ast(r.index[0])
        if not is_zero(slot):
            if cur.get(r.name, slot) != slot:
                raise GirError(f"one instruction reads two pipeline slots of '{r.name}'", r.loc)
            cur[r.name] = slot
        return dataclasses.replace(r, index=r.index[1:])

    def _dims(self, ref: ir.Ref):
        """([offset terms], [(length, elem stride, extent, start)] of sliced dims): the terms of the region's
        element offset (their sum, `add(*terms)`) and the starts as AST expressions."""
        b = self.bufs[ref.name]
        if len(ref.index) != len(b.shape):
            raise GirError(f"rank mismatch on '{ref.name}'", ref.loc)
        if b.level == "gdram":
            strides, acc = [], 1
            for d in reversed(b.shape):
                strides.insert(0, acc)
                acc *= d
        elif L.is_rowvec(b.shape):
            strides = [1, 0]
        elif len(b.shape) == 2:
            strides = [b.pitch, 1]
        else:
            strides = [1] * len(b.shape)
        offs, dims = [], []
        for i, st, ext in zip(ref.index, strides, b.shape):
            start = i.start if isinstance(i, ir.Slice) else i
            at = index_ast(start)
            if not is_zero(at):
                offs.append(mul(at, st))
            if isinstance(i, ir.Slice):
                length = -(-_const_len(i) // i.step)   # a[s:e:k]: every k-th element (stride k times)
                if length > 1:
                    dims.append([length, st * i.step, ext, at])
        return offs, dims

    def move(self, s: ir.Move) -> None:
        cur: dict = {}
        s = dataclasses.replace(s, dst=self._slotted(s.dst, cur), src=self._slotted(s.src, cur))
        slot = {n: C.Bin("+", C.Id(n), mul(t, self.bufs[n].phys)) for n, t in cur.items()}
        db, sb = self.bufs[s.dst.name], self.bufs[s.src.name]
        direction = DIR.get((sb.level, db.level))
        if direction is None:
            raise GirError(f"no MLU copy direction from @{sb.level} to @{db.level}", s.loc)
        if db.dtype != sb.dtype:
            raise GirError("moves cannot convert element types", s.loc)
        if s.other is not None:   # (the MLU's masked copy leaves the clipped elements as they were)
            raise GirError("the MLU target does not write a masked load's 'other' value; fill the tile before "
                           "the load instead", s.loc)
        doff, ddims = self._dims(s.dst)
        soff, sdims = self._dims(s.src)
        esz = L.device_nbytes(db.dtype)
        cnt = None
        if s.mask:
            g = sdims if sb.level == "gdram" else ddims
            for k, (length, _, ext, start) in enumerate(g):
                if k > 0 and (not isinstance(start, C.Num) or start.value + length > ext):
                    raise GirError("masked MLU moves clip only their outermost dimension", s.loc)
            if g:
                cnt = C.Call("min", (C.Num(g[0][0]), C.Bin("-", C.Num(g[0][2]), g[0][3])))
        if [d[0] for d in ddims] != [d[0] for d in sdims]:   # a reshaping move (codegen/mlu/movedims.py)
            if s.mask:   # one segment of the clipped rows (the dense-staging pass's runs)
                per = masked_run(sdims if sb.level == "gdram" else ddims, ddims if sb.level == "gdram" else sdims,
                                 s.loc)
                args = [add(slot.get(s.dst.name, C.Id(s.dst.name)), *doff),
                        add(slot.get(s.src.name, C.Id(s.src.name)), *soff),
                        C.Bin("*", cnt, C.Num(per * esz)), C.Id(direction)]
                self.emit(call("memcpy_async" if s.async_ else "memcpy", *args))
                return
            ddims, sdims = reshaped_dims(ddims, sdims, False, s.loc)
        # merge dims contiguous on both sides
        dims = [(d[0], d[1], e[1]) for d, e in zip(ddims, sdims)]
        merged: list[list[int]] = []
        for length, ds, ss in dims:
            if merged and cnt is None and merged[-1][1] == length * ds and merged[-1][2] == length * ss:
                merged[-1] = [merged[-1][0] * length, ds, ss]
            else:
                merged.append([length, ds, ss])
        inner = 1
        if merged and merged[-1][1] == 1 and merged[-1][2] == 1:
            inner = merged.pop()[0]
        levels = merged
        if len(levels) > 2:
            raise GirError("MLU moves support at most two strided levels", s.loc)
        counts = [C.Num(lv[0]) for lv in levels]
        size = C.Num(inner * esz)
        if cnt is not None:
            if levels:
                counts[0] = cnt
            else:
                size = C.Bin("*", C.Bin("*", cnt, C.Num(inner // ddims[0][0] if ddims else 1)), C.Num(esz))
        dptr = slot.get(s.dst.name, C.Id(s.dst.name))
        sptr = slot.get(s.src.name, C.Id(s.src.name))
        args = [add(dptr, *doff), add(sptr, *soff), size, C.Id(direction)]
        for lv, n in zip(reversed(levels), reversed(counts)):
            args += [lv[1] * esz, lv[2] * esz, C.Bin("-", n, C.Num(1))]
        self.emit(call("memcpy_async" if s.async_ else "memcpy", *args))

    # ------------------------------------------------------------ compute
    def compute(self, s: ir.Assign) -> None:
        cur: dict = {}

        def strip(x):
            return self._slotted(x, cur) if isinstance(x, ir.Ref) else x
        s = ir.Assign(strip(s.target), map_expr(s.value, strip), loc=s.loc)
        self.cur = cur
        try:
            self._compute(s)
        finally:
            self.cur = {}

    def _compute(self, s: ir.Assign) -> None:
        refs = [s.target] + [x for x in _leaves(s.value) if isinstance(x, ir.Ref)]
        if all(_region_size(r) == 1 and not self._vector_buf(r) for r in refs):
            return self.scalar_compute(s)
        if (self.through or any(_offset(r) and not L.is_rowvec(self.bufs[r.name].shape) for r in refs)) and \
                all(_region_size(r) == 1 and self.bufs[r.name].level == "nram" for r in refs) and \
                not any(isinstance(x, ir.Reduce) or (isinstance(x, ir.Call) and x.fn in _TILE_ONLY)
                        for x in _leaves(s.value)):
            # single elements of vectors (a unit's statistic written into the core's results at the unit's
            # position, in `pipeline=units` kernels; single elements of tiles and vectors at an offset, where a
            # vector op would start at the buffer's first element: a long scan's offsets): scalar code
            return self.scalar_compute(s)
        out: list = []
        vec = VecEmitter(out, self._scratch_full, self._mask_full, self._tail_consts, self._scratch16,
                         exact_div=is_exact(self.k))
        vec.emit(self.opd(s.target), s.value, self.opd)
        for x in out:
            self.emit(x)

    def _vector_buf(self, r: ir.Ref) -> bool:
        b = self.bufs[r.name]
        return b.level == "nram" and (len(b.shape) == 2 or b.shape[0] > 1)

    def opd(self, e) -> Opd:
        if isinstance(e, ir.Const):
            return Opd(CONST, value=f32(float(e.value)))
        if isinstance(e, ir.Var):
            return Opd(CONST, value=C.Cast("float", C.Id(e.name)))
        if not isinstance(e, ir.Ref):
            raise GirError("vector compute operands are tiles or constants", getattr(e, "loc", None))
        b = self.bufs[e.name]
        if b.level != "nram":
            raise GirError(f"compute operands live in @nram, '{e.name}' is @{b.level}", e.loc)
        ptr, dt = self._ptr(e.name), b.dtype.value
        base = C.Bin("*", self.cur[e.name], C.Num(b.phys)) if b.double and e.name in self.cur else C.Num(0)
        if not self._vector_buf(e):
            return Opd(SCALAR, ptr, value=C.Index(e.name, base), dtype=dt)
        lens = [_const_len(i) if isinstance(i, ir.Slice) else 1 for i in e.index]
        if len(b.shape) == 2 and not L.is_rowvec(b.shape) and not isinstance(e.index[0], ir.Slice):
            # one row `t[r, 0:C]` of a 2-D tile (a scan's row step): a vector over the row's pitch at its offset
            if not isinstance(e.index[1], ir.Slice) or not is_zero(index_ast(e.index[1].start)):
                raise GirError("a row of an @nram tile is a vector operand only from column 0", e.loc)
            off = C.Bin("*", index_ast(e.index[0]), C.Num(b.pitch))
            return Opd(COL, C.Bin("+", ptr, off), b.pitch, cols=lens[1], dtype=dt, whole=lens[1] == b.shape[1])
        if L.is_rowvec(b.shape):
            start = index_ast(e.index[0].start) if isinstance(e.index[0], ir.Slice) else C.Num(0)
            if not is_zero(start):   # a region at an offset (hoisted row vectors): copies only (vecops)
                base = start if is_zero(base) else C.Bin("+", base, start)
            return Opd(ROW, ptr, b.phys, rows=lens[0], dtype=dt, name=e.name, base=base, shifted=not is_zero(start))
        if len(b.shape) == 1:
            return Opd(COL, ptr, b.phys, cols=lens[0], dtype=dt, whole=lens[0] == b.shape[0])
        start = index_ast(e.index[0].start) if isinstance(e.index[0], ir.Slice) else C.Num(0)
        if not is_zero(start):   # rows r0..r0 + R of a tile (a slab's sub-tile): a vector over those rows (whole
            off = C.Bin("*", start, C.Num(b.pitch))   # 64-element groups, 32 for 4-byte types: the tile must
            unit = 32 if L.device_nbytes(b.dtype) == 4 else L.PITCH   # extend that far)
            return Opd(FULL, C.Bin("+", ptr, off), L.round_up(lens[0] * b.pitch, unit), rows=lens[0],
                       pitch=b.pitch, cols=lens[1],
                       prow=lens[0], dtype=dt, name=e.name, base=off if is_zero(base) else C.Bin("+", base, off),
                       whole=lens[1] == b.shape[1])
        return Opd(FULL, ptr, b.phys, rows=lens[0], pitch=b.pitch, cols=lens[1],
                   prow=L.phys_rows(b.shape), dtype=dt, name=e.name, base=base, whole=lens[1] == b.shape[1])

    def _scratch_full(self, like: Opd, k: int = 0) -> Opd:
        name = f"scratch{k}_{like.length}"
        if (name, like.length) not in self.scratch:
            self.scratch.append((name, like.length))
        return Opd(like.kind, C.Id(name), like.length, like.rows, like.pitch, like.cols, like.prow, dtype="f32")

    def _mask_full(self, like: Opd) -> C.Id:
        name = f"colmask_{like.length}_{like.cols}_{like.pitch}"   # (1 for columns < cols of every pitch)
        if (name, like.length) not in self.scratch:
            self.scratch.append((name, like.length))
            self.scratch.append((name + "_row", like.pitch))
            self.prologue += [
                mask_loop(name + "_row", like.pitch, like.cols),
                call("bang_write_value", C.Id(name), like.length, f32(0.0)),
                call("bang_cycle_add", C.Id(name), C.Id(name), C.Id(name + "_row"), like.length, like.pitch)]
        return C.Id(name)

    def _scratch16(self, dtype: str, n: int) -> C.Id:
        """A 16-bit scratch vector of n elements (vecops `round16`), one per type and length."""
        name = f"round_{dtype}_{n}"
        if (name, n, dtype) not in self.scratch16:
            self.scratch16.append((name, n, dtype))
        return C.Id(name)

    def _tail_consts(self, op: str, n: int, real: int) -> tuple[C.Id, C.Id]:
        """Two kernel-wide constant vectors of n floats: 1 for the first `real` elements and 0 after, and the
        identity of the reduction `op` (vecops `_fill_tail`)."""
        mask, fill = f"tailmask_{n}_{real}", f"tailfill_{op}_{n}"
        if (mask, n) not in self.scratch:
            self.scratch.append((mask, n))
            self.prologue.append(mask_loop(mask, n, real))
        if (fill, n) not in self.scratch:
            self.scratch.append((fill, n))
            self.prologue.append(call("bang_write_value", C.Id(fill), n, IDENT[op]))
        return C.Id(mask), C.Id(fill)

    def scalar_compute(self, s: ir.Assign) -> None:
        def elem(r: ir.Ref) -> C.Index:
            terms, _ = self._dims(r)
            b = self.bufs[r.name]
            if b.double and r.name in self.cur:
                terms = [C.Bin("*", self.cur[r.name], C.Num(b.phys)), *(terms or [C.Num(0)])]
            return C.Index(r.name, add(*terms))

        def kind_of(r: ir.Ref) -> str:
            return "float" if self.bufs[r.name].dtype.is_float else "int"

        def scratch() -> str:   # a scratch's name
            name = f"erf_s{self.erf_slots}"
            self.erf_slots += 1
            self.scratch.append((name, 32))
            return name
        sx = ScalarExpr(elem, kind_of, scratch)
        value, _ = sx.expr(s.value)
        for x in sx.pre:
            self.emit(x)
        self.emit(assign(elem(s.target), value))


_TILE_ONLY = ("transpose", "reverse", "gather_cols")


def _index_cond(e) -> C.CExpr | None:
    """A comparison of two index expressions without `//` and `%` as a C expression (the pipeline's `0 < v`,
    `v + 1 < T` for an affine T), else None: ScalarExpr, whose `//` and `%` floor as Python's (C's truncate)."""
    if not (isinstance(e, ir.BinOp) and e.op in ("<", "<=", ">", ">=", "==", "!=")) or \
            any(isinstance(x, ir.BinOp) and x.op in ("//", "%") for x in _leaves(e)):
        return None
    try:
        return C.Bin(e.op, index_ast(e.lhs), index_ast(e.rhs))
    except GirError:
        return None   # kernel-only builtins over whole tiles


def _region_size(r: ir.Ref) -> int:
    n = 1
    for i in r.index:
        if isinstance(i, ir.Slice):
            n *= _const_len(i)
    return n


def _leaves(e):
    from gir.shapes import _walk
    return _walk(e)


def _offset(r: ir.Ref) -> bool:
    """Whether a region starts anywhere but at element 0 of its buffer."""
    return any(not (isinstance(x, ir.Const) and x.value == 0)
               for i in r.index for x in ((i.start,) if isinstance(i, ir.Slice) else (i,)))
