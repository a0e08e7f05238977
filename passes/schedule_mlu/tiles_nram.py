"""NRAM sizing of MLU kernels: `footprint` (a list of kernels) and `kernel_nram` (one kernel), the NRAM bytes per
core that the BANG-C emitter (codegen/mlu/emit.py) declares for them, computed from the IR alone (passes sit below
codegen/): every @nram tile times its pipeline slots (the software-pipeline pass's, passes/schedule_mlu/swpipe.py,
run here when the kernel is not pipelined yet), 128-byte aligned, plus the float scratch tiles the vector forms of
its computes use (codegen/mlu/vecops.py: a broadcast operand materialised next to its destination, the masked row
reduction of padded rows, the row-order mirror, `c ** t` into t, a clamp into its own bound, the 16-bit vector an
f32 tile is rounded through) and the 32-element scratch of a vector-only function in scalar code. Placement
(placement.py) and the tile recipe size their tiles with it; tests/mlu_compile/test_mlu_nram_count.py checks it
equals what the emitter declares.
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.swpipe import pipeline_kernel, slice_len
from gir.verify_kernel import reverse_axis

VEC = ("full", "row", "col")
BIN = {"+": "add", "-": "sub", "*": "mul", "/": "div", "max": "maximum", "min": "minimum", "pow": "pow",
       "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
COMMUTES = ("add", "mul", "maximum", "minimum", "eq", "ne")
CYCLE = ("add", "sub", "mul", "div", "maximum", "minimum")
MIRROR = ("lt", "gt", "le", "ge")
VECTOR_ONLY = ("erf", "softplus", "silu", "gelu", "gelu_tanh")   # (codegen/mlu/cexpr.py: scratch in scalar code)
TILE_ONLY = ("transpose", "reverse", "gather_cols")


def footprint(t, items: list) -> int:
    """The largest NRAM bytes per core of the kernels of `items` (`t`: unused, the recipe's tile)."""
    return max((kernel_nram(k) for k in items if isinstance(k, ir.Kernel)), default=0)


def kernel_nram(k: ir.Kernel) -> int:
    return pipelined_nram(pipeline_kernel(k))


def pipelined_nram(k: ir.Kernel) -> int:
    """`kernel_nram` of a kernel the software-pipeline pass has already rewritten (not pipelined again)."""
    return _Count(k).total()


class _Count:
    def __init__(self, k: ir.Kernel):
        attrs = dict(k.attrs)
        self.dense, self.through = attrs.get("layout") == "dense", attrs.get("pipeline") == "units"
        self.allocs: dict[str, ir.Alloc] = {}
        self.assigns: list[ir.Assign] = []
        self._walk(k.body)
        self.scratch: dict[str, int] = {}
        self.scratch16: dict[str, int] = {}   # 16-bit scratch vectors (vecops `round16`)

    def _walk(self, stmts) -> None:
        for x in stmts:
            if isinstance(x, ir.Alloc) and x.level == ir.Level.nram:
                self.allocs[x.name] = x
            elif isinstance(x, (ir.Parallel, ir.For)):
                self._walk(x.body)
            elif isinstance(x, ir.If):
                self._walk(x.then + x.orelse)
            elif isinstance(x, ir.Assign):
                self.assigns.append(x)

    # ------------------------------------------------------------ layout (codegen/mlu/emit.py's _Buf)
    def shape(self, name: str) -> tuple:
        a = self.allocs[name]
        return tuple(a.type.shape)[1:] if a.slots > 1 else tuple(a.type.shape)

    def is_dense(self, name: str) -> bool:
        sh = self.shape(name)
        return self.dense and len(sh) == 2 and not L.is_rowvec(sh)

    def phys(self, name: str) -> int:
        sh, a = self.shape(name), self.allocs[name]
        n = L.round_up(sh[0] * sh[1], L.PITCH) if self.is_dense(name) else L.phys_elems(sh)
        return L.round_up(n, L.VECTOR_ALIGN // L.device_nbytes(a.type.dtype))

    def pitch(self, name: str) -> int:
        return self.shape(name)[-1] if self.is_dense(name) else L.pitch(self.shape(name))

    def index(self, r: ir.Ref) -> tuple:
        return tuple(r.index)[1:] if self.allocs[r.name].slots > 1 else tuple(r.index)

    def vector_buf(self, r: ir.Ref) -> bool:
        sh = self.shape(r.name)
        return len(sh) == 2 or sh[0] > 1

    def opd(self, e) -> tuple:
        """(kind, length, cols, pitch, name) of an operand as the emitter classifies it (emit.py `opd`)."""
        if not isinstance(e, ir.Ref) or e.name not in self.allocs:
            return ("const", 0, 0, 0, None)
        sh, index = self.shape(e.name), self.index(e)
        if not self.vector_buf(e):
            return ("scalar", 1, 1, 1, e.name)
        lens = [slice_len(i) if isinstance(i, ir.Slice) else 1 for i in index]
        if len(sh) == 2 and not L.is_rowvec(sh) and not isinstance(index[0], ir.Slice):
            return ("col", self.pitch(e.name), lens[1], self.pitch(e.name), e.name)
        if L.is_rowvec(sh):
            return ("row", self.phys(e.name), 1, 1, e.name)
        if len(sh) == 1:
            return ("col", self.phys(e.name), lens[0], 1, e.name)
        start = index[0].start
        if not (isinstance(start, ir.Const) and start.value == 0):
            unit = 32 if L.device_nbytes(self.allocs[e.name].type.dtype) == 4 else L.PITCH
            return ("full", L.round_up(lens[0] * self.pitch(e.name), unit), lens[1], self.pitch(e.name), e.name)
        return ("full", self.phys(e.name), lens[1], self.pitch(e.name), e.name)

    # ------------------------------------------------------------ scratch tiles (codegen/mlu/vecops.py)
    def need(self, k: int, length: int) -> None:
        self.scratch[f"scratch{k}_{length}"] = length

    def binary(self, dst: tuple, fn: str, a: tuple, b: tuple) -> None:
        """The scratch tiles of VecEmitter.binary(dst, fn, a, b); operand tuples as `opd`."""
        if a[0] not in VEC and b[0] not in VEC:
            return   # a copy into dst, then dst OP scalar
        if a[0] == b[0] == dst[0]:
            return
        if b[0] not in VEC or (a[0] not in VEC and fn in COMMUTES):
            return   # a *_scalar form (after expanding the vector into dst)
        if a[0] not in VEC:   # scalar OP vector, not commuting
            if fn not in COMMUTES and fn not in MIRROR and fn not in ("sub", "div") and \
                    (b[0] != dst[0] or b[4] == dst[4]):
                self.need(0, dst[1])   # c ** t with t expanded into (or being) dst: the constant tile first
            return
        if (a[0], b[0]) == ("full", "col") and fn in CYCLE:
            return
        if (a[0], b[0]) == ("col", "full") and fn in COMMUTES:
            return self.binary(dst, fn, b, a)
        if {a[0], b[0]} == {"full", "row"} and fn != "pow":
            return   # one *_scalar op per row
        if a[0] != "full":
            if b[0] == "full" and b[4] == dst[4]:
                self.need(0, dst[1])
                return self.binary(dst, fn, dst[:4] + ("scratch",), b)
            return self.binary(dst, fn, dst, b)   # a expanded into dst
        self.need(0, dst[1])   # b expanded into a scratch tile

    def assign(self, a: ir.Assign) -> None:
        refs = [a.target] + [x for x in _leaves(a.value) if isinstance(x, ir.Ref) and x.name in self.allocs]
        if a.target.name not in self.allocs:
            return
        if self._scalar_code(a, refs):
            n = sum(isinstance(x, ir.Call) and x.fn in VECTOR_ONLY for x in _leaves(a.value))
            for i in range(n):
                self.scratch[f"erf_s{len([s for s in self.scratch if s.startswith('erf_s')])}"] = 32
            return
        dst, v = self.opd(a.target), a.value
        if isinstance(v, ir.Reduce):
            src = self.opd(v.arg)
            masked_col = src[0] == "col" and dst[0] == "scalar" and src[2] < src[1]   # a region short of its tile
            if masked_col:
                src = src[:3] + (src[1],) + src[4:]   # (its mask: one row of the tile's length)
            if (masked_col or src[0] == "full" and dst[0] == "row" and v.axes == (1,) and src[2] != src[3]) and \
                    v.op in ("sum", "max", "min"):
                start = self.tail_start(v.arg, src, masked_col)
                if start is not None:   # in place, through two constant vectors
                    n = src[3] - start
                    self.scratch[f"tailmask_{n}_{src[2] - start}"] = n
                    self.scratch[f"tailfill_{v.op}_{n}"] = n
                    return
                self.need(0, src[1])
                self.need(1, src[1])
                mask = f"colmask_{src[1]}_{src[2]}_{src[3]}"
                self.scratch[mask] = src[1]
                self.scratch[mask + "_row"] = src[3]
        elif isinstance(v, ir.BinOp) and v.op in BIN:
            self.binary(dst, BIN[v.op], self.opd(v.lhs), self.opd(v.rhs))
        elif isinstance(v, ir.Call) and v.fn in BIN and len(v.args) == 2:
            self.binary(dst, BIN[v.fn], self.opd(v.args[0]), self.opd(v.args[1]))
        elif isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3:
            ops = [self.opd(x) for x in v.args]
            for j, o in enumerate(ops):
                if o[0] != dst[0]:
                    self.need(j, dst[1])
        elif isinstance(v, ir.Call) and v.fn == "clamp" and len(v.args) == 3:
            x, lo, hi = (self.opd(e) for e in v.args)
            tmp = dst
            if hi[0] in VEC and hi[4] == dst[4]:
                self.need(2, dst[1])
                tmp = dst[:4] + ("scratch",)
            self.binary(tmp, "maximum", x, lo)
            self.binary(dst, "minimum", tmp, hi)
        elif isinstance(v, ir.Call) and v.fn in ("f16", "bf16") and len(v.args) == 1:
            a = self.opd(v.args[0])
            if a[0] == dst[0] and a[0] in VEC and self._f32(a[4]) and self._f32(dst[4]):   # vecops `round16`
                n = L.round_up(min(a[1], dst[1]), L.VECTOR_ALIGN // 2)
                self.scratch16[f"round_{v.fn}_{n}"] = n
        elif isinstance(v, ir.Call) and v.fn == "reverse" and reverse_axis(v) == 0:
            self.need(0, self.opd(v.args[0])[1])   # the rows' order: a mirror through a scratch tile

    def _f32(self, name) -> bool:
        return name in self.allocs and self.allocs[name].type.dtype == ir.DType.f32

    def tail_start(self, r: ir.Ref, src: tuple, masked_col: bool) -> int | None:
        """vecops `_fill_tail`'s choice (layout.tail_start) for the reduced region `r`, `src` as `opd`."""
        sh, index = self.shape(r.name), self.index(r)
        lens = [slice_len(i) if isinstance(i, ir.Slice) else 1 for i in index]
        whole = lens[-1] == sh[-1] and (len(sh) == 1 or not L.is_rowvec(sh))
        rows = 1 if masked_col else lens[0]
        return L.tail_start(rows, src[3], src[2], src[1], self.allocs[r.name].type.dtype.value, whole)

    def _scalar_code(self, a: ir.Assign, refs: list) -> bool:
        """The emitter's scalar path (emit.py `_compute`): single elements of non-vector tiles, or of @nram
        tiles in `pipeline=units` kernels without reductions and tile-only builtins."""
        size1 = all(_region_size(self.index(r)) == 1 for r in refs)
        if size1 and not any(self.vector_buf(r) for r in refs):
            return True
        return self.through and size1 and not any(
            isinstance(x, ir.Reduce) or (isinstance(x, ir.Call) and x.fn in TILE_ONLY) for x in _leaves(a.value))

    def total(self) -> int:
        for a in self.assigns:
            self.assign(a)
        tiles = sum(L.round_up(self.phys(n) * a.slots * L.device_nbytes(a.type.dtype), L.VECTOR_ALIGN)
                    for n, a in self.allocs.items())
        return tiles + sum(L.round_up(n * 4, L.VECTOR_ALIGN) for n in self.scratch.values()) + \
            sum(L.round_up(n * 2, L.VECTOR_ALIGN) for n in self.scratch16.values())


def _region_size(index) -> int:
    n = 1
    for i in index:
        if isinstance(i, ir.Slice):
            n *= slice_len(i)
    return n


def _leaves(e):
    from gir.walk import walk
    return list(walk(e))
