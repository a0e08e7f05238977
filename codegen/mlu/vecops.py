"""Tile computes (one explicit-GIR `Assign` on NRAM tiles) → `__bang_*` vector calls.

Operands are classified by their tile: full `[R, C]` (pitch P, rows Rp), row vector `[R, 1]`, column vector `[C]`,
scalar (1-element tile, read as `buf[0]`) or constant. Broadcasts map to BANG forms: full∘col → `__bang_cycle_*`,
full∘row → one `*_scalar` op per row, full∘scalar/const → `*_scalar`.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.codegen import ast as C
from gir.codegen.mlu.cexpr import minmax
from gir.codegen.mlu.instr import assign, call, f32, is_zero, per_row
from gir.errors import GirError
from gir.passes.schedule_mlu import layout as L

FULL, ROW, COL, SCALAR, CONST = "full", "row", "col", "scalar", "const"
BIN = {"+": "add", "-": "sub", "*": "mul", "/": "div", "max": "maximum", "min": "minimum", "pow": "pow",
       "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}   # compares store 1 / 0
MIRROR = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}                      # s OP a  ==  a MIRROR[OP] s
CYCLE = ("add", "sub", "mul", "div", "maximum", "minimum")
IDENT = {"sum": f32(0.0), "max": f32(float("-inf")), "min": f32(float("inf"))}   # of the masked reductions
COMMUTES = ("add", "mul", "maximum", "minimum", "eq", "ne")
UNARY = ir.UNARY_FUNCS   # each is the vector op __bang_active_<fn> (targets/mlu/vector.py)
CONVERT = {("f32", "i32"): "bang_int322float", ("f32", "f16"): "bang_half2float", ("f32", "bf16"): "bang_bfloat162float",
           ("f16", "f32"): "bang_float2half", ("bf16", "f32"): "bang_float2bfloat16",
           ("f32", "bool"): "bang_uchar2float", ("bool", "f32"): "bang_float2uchar",   # bool: uint8 0/1
           ("i32", "f32"): "bang_float2int32"}



@dataclass(frozen=True)
class Opd:
    kind: str
    ptr: C.CExpr = C.Num(0)   # the pointer (vector kinds)
    length: int = 0      # elements a vector op covers (physical)
    rows: int = 1        # logical rows (full / row)
    pitch: int = 1       # full: row pitch; row/col: 1
    cols: int = 1        # logical columns (full / col)
    prow: int = 1        # physical rows of a full tile
    value: C.CExpr = C.Num(0)   # scalar / const
    dtype: str = "f32"
    name: str = ""       # buffer name and element offset of the current slot (for element reads `name[base + r]`)
    base: C.CExpr = C.Num(0)
    shifted: bool = False   # an [R, 1] region at a non-zero start (base includes it): copies only
    whole: bool = False     # the region covers every column of its buffer (its pads are free to overwrite)

    def at(self, i: C.CExpr) -> C.Index:
        """Element `i` of the region (counted from its base)."""
        return C.Index(self.name, i if is_zero(self.base) else C.Bin("+", self.base, i))


class VecEmitter:
    def __init__(self, out: list, scratch_full, mask_full=None, tail_consts=None, scratch16=None,
                 exact_div: bool = False):
        self.out = out
        self.exact_div = exact_div         # divide by a row statistic exactly (passes/schedule_mlu/exactdiv.py)
        self.mask_full = mask_full         # (Opd) -> C pointer of a 1/0 column-mask tile of that shape
        self.scratch_full = scratch_full   # (Opd like) -> C pointer of a scratch tile of the same size
        self.tail_consts = tail_consts     # (op, n, real) -> C pointers of a 1/0 mask of n (real ones first)
        #                                    and of n identities of op
        self.scratch16 = scratch16         # (dtype, n) -> C pointer of a 16-bit scratch vector of n elements

    def emit(self, dst: Opd, value, operand) -> None:
        """`operand(ir_expr) -> Opd` resolves a leaf (Ref / Const)."""
        if isinstance(value, (ir.Ref, ir.Const)):
            a = operand(value)
            if dst.shifted or a.shifted:   # [R, 1] copies at offsets (hoisted row vectors)
                if not (dst.kind == ROW and a.kind == ROW):
                    raise GirError("regions at an offset are supported only in copies between [R, 1] tiles",
                                   getattr(value, "loc", None))
                if dst.shifted and not a.shifted and dst.dtype == a.dtype and dst.rows >= MOVE_ROWS:
                    # a tile's results into their per-core vector: one on-chip move
                    self.out.append(call("memcpy", _start(dst), _start(a), dst.rows * L.device_nbytes(dst.dtype),
                                         C.Id("NRAM2NRAM")))
                else:
                    self.out.append(per_row(dst.rows, assign(dst.at(_R), a.at(_R))))
                return
            return self.copy(dst, a)
        plain = operand

        def operand(e):  # noqa: F811
            o = plain(e)
            if o.shifted:
                raise GirError("regions at an offset are supported only in copies between [R, 1] tiles",
                               getattr(e, "loc", None))
            return o
        if dst.shifted:
            raise GirError("regions at an offset are supported only in copies between [R, 1] tiles",
                           getattr(value, "loc", None))
        if isinstance(value, ir.Reduce):
            return self.reduce(dst, value, operand(value.arg))
        if isinstance(value, ir.BinOp) and value.op in BIN:
            return self.binary(dst, BIN[value.op], operand(value.lhs), operand(value.rhs))
        if isinstance(value, ir.UnOp) and value.op == "-":
            return self.unary(dst, "neg", operand(value.operand))
        if isinstance(value, ir.Call):
            if value.fn in BIN and len(value.args) == 2:
                return self.binary(dst, BIN[value.fn], *(operand(a) for a in value.args))
            if value.fn in UNARY:
                return self.unary(dst, value.fn, operand(value.args[0]))
            if value.fn == "select" and len(value.args) == 3:
                return self.select(dst, [operand(a) for a in value.args])
            if value.fn == "clamp" and len(value.args) == 3:
                return self.clamp(dst, *(operand(a) for a in value.args))
            if value.fn == "gather_cols" and len(value.args) == 2:
                return self.gather_cols(dst, *(operand(a) for a in value.args))
            if value.fn == "transpose" and len(value.args) == 1:
                return self.transpose(dst, operand(value.args[0]), value.loc)
            if value.fn == "transpose" and len(value.args) == 2:
                r = value.args[1]
                return self.transpose_rows(dst, operand(value.args[0]), r.value if isinstance(r, ir.Const) else None,
                                           value.loc)
            if value.fn == "reverse" and len(value.args) in (1, 2):
                return self.reverse(dst, operand(value.args[0]), value)
            if value.fn in ("f32", "f16", "bf16", "bool", "i32"):
                a = operand(value.args[0])
                if value.fn in ("f16", "bf16") and dst.dtype == a.dtype == "f32" and a.kind == dst.kind and \
                        a.kind in (FULL, ROW, COL):
                    return self.round16(dst, a, value.fn)
                name = CONVERT.get((dst.dtype, a.dtype))
                if name is None:
                    raise GirError(f"no MLU conversion from {a.dtype} to {dst.dtype}", value.loc)
                # the same logical layout on both sides; a 1-byte buffer's length also holds the padding that
                # keeps its pipeline slots 128-byte aligned (codegen/mlu/emit.py), which the wider side lacks
                n = min(dst.length, a.length)
                # whole 128-byte units on the narrow side too: rows at an offset of an f32 slab are rounded to 32
                # elements (emit.py `opd`), 64 bytes of half; such regions are sub-tiles of row-padded slabs, so the
                # rounded length stays inside both buffers
                if min(L.device_nbytes(dst.dtype), L.device_nbytes(a.dtype)) == 2:
                    n = L.round_up(n, L.VECTOR_ALIGN // 2)
                self.out.append(call(name, dst.ptr, a.ptr, n))
                return
        raise GirError("compute not supported by the MLU vector emitter (use scalar tiles)", getattr(value, "loc", None))

    # ------------------------------------------------------------ forms
    def copy(self, dst: Opd, a: Opd) -> None:
        if a.kind in (CONST, SCALAR):
            self.out.append(call("bang_write_value", dst.ptr, dst.length, a.value))
        elif a.kind == dst.kind:   # the shorter length: a dense tile's row is shorter than a padded vector
            self.out.append(call("bang_mul_scalar", dst.ptr, a.ptr, f32(1.0), min(dst.length, a.length)))
        else:
            self.expand(dst, a)

    def expand(self, dst: Opd, a: Opd) -> None:
        """Broadcast a row / col / scalar operand into a full tile."""
        if a.kind == COL:
            self.out.append(call("bang_write_value", dst.ptr, dst.length, f32(0.0)))
            self.out.append(call("bang_cycle_add", dst.ptr, dst.ptr, a.ptr, _cycle_length(dst), dst.pitch))
        elif a.kind == ROW:
            self.out.append(per_row(dst.rows, call("bang_write_value", _row(dst.ptr, dst.pitch), dst.pitch, a.at(_R))))
        else:
            self.out.append(call("bang_write_value", dst.ptr, dst.length, a.value))

    def gather_cols(self, dst: Opd, a: Opd, idx: Opd) -> None:
        """`dst[r] = a[r, idx[r]]` (0 outside 0..cols-1): one scalar read per row at a value-dependent column."""
        if dst.kind != ROW or a.kind not in (FULL, ROW) or idx.kind != ROW or not a.name:
            raise GirError("gather_cols() needs an [R, 1] target, an [R, C] @nram tile and [R, 1] indices")
        cols, pitch = (a.cols, a.pitch) if a.kind == FULL else (1, 1)   # an [R, 1] tile is a row vector
        t, c = C.Id("t_"), C.Id("c_")
        self.out.append(per_row(dst.rows, C.Decl("int", "t_", C.Cast("int", idx.at(_R))),
                                C.Decl("int", "c_", C.Call("min", (C.Call("max", (t, C.Num(0))), C.Num(cols - 1)))),
                                assign(dst.at(_R), C.Bin("*", a.at(C.Bin("+", C.Bin("*", _R, C.Num(pitch)), c)),
                                                         C.Cast("float", C.Bin("==", t, c))))))

    def transpose(self, dst: Opd, a: Opd, loc) -> None:
        """`dst[0:C, 0:R] = transpose(a[0:R, 0:C])` on whole, dense (unpadded) buffers: `__bang_transpose`."""
        dense = all(o.kind == FULL and o.cols == o.pitch and o.rows == o.prow for o in (dst, a))
        if not dense or (dst.rows, dst.cols) != (a.cols, a.rows) or dst.ptr == a.ptr or dst.dtype != a.dtype:
            raise GirError("the MLU emitter transposes whole 2-D @nram buffers with row lengths that are multiples "
                           "of 64, into a distinct buffer of the reversed shape", loc)
        self.out.append(call("bang_transpose", dst.ptr, a.ptr, a.rows, a.cols))

    def transpose_rows(self, dst: Opd, a: Opd, r: int, loc) -> None:
        """`dst = transpose(a, r)`: the elements of a whole, dense @nram tile `a` read as an [r, n / r] matrix,
        transposed, into the n elements of a whole, dense tile `dst` (a view of other shapes on the same bytes:
        the scan's sub-segments, passes/schedule_mlu/scan_subseg.py)."""
        def count(o: Opd):
            if o.kind == FULL and o.cols == o.pitch and o.rows == o.prow:
                return o.rows * o.cols
            if o.kind == COL and o.cols == o.length:
                return o.cols
            return None
        n = count(a)
        if n is None or count(dst) != n or not isinstance(r, int) or r <= 0 or n % r or dst.ptr == a.ptr or \
                dst.dtype != a.dtype:
            raise GirError("transpose(a, r) reads a whole, unpadded @nram tile as r rows into a distinct whole tile "
                           "of as many elements", loc)
        self.out.append(call("bang_transpose", dst.ptr, a.ptr, r, n // r))

    def reverse(self, dst: Opd, a: Opd, node: ir.Call) -> None:
        """`dst[0:R, 0:P] = reverse(a[0:R, 0:P][, AXIS])` on the first R rows of distinct @nram buffers of the same
        pitch P: axis 1 (rows must be dense, P == C) is one `__bang_mirror` (each row reversed); axis 0 (row order
        reversed) is a mirror of the R*P elements as one row into a scratch tile, then a per-row mirror back."""
        from gir.verify_kernel import reverse_axis
        axis = reverse_axis(node)
        same = dst.kind == a.kind == FULL and (dst.rows, dst.pitch, dst.cols) == (a.rows, a.pitch, a.cols)
        if axis is None or not same or dst.ptr == a.ptr or dst.dtype != a.dtype or \
                (axis == 1 and a.cols != a.pitch) or a.pitch * L.device_nbytes(a.dtype) % 128:
            raise GirError("the MLU emitter reverses [R, C] @nram regions starting at row 0 into a distinct buffer of "
                           "the same pitch (axis 1: C == P; rows of whole 128-byte units)", node.loc)
        if axis == 1:
            self.out.append(call("bang_mirror", dst.ptr, a.ptr, a.rows, a.pitch))
            return
        tmp = self.scratch_full(a, 0).ptr   # a float scratch tile at least as large as a's buffer
        tmp = tmp if a.dtype == "f32" else C.Cast(a.dtype + "*", tmp)
        self.out.append(call("bang_mirror", tmp, a.ptr, 1, a.rows * a.pitch))
        self.out.append(call("bang_mirror", dst.ptr, tmp, a.rows, a.pitch))

    def unary(self, dst: Opd, fn: str, a: Opd) -> None:
        if a.kind != dst.kind:
            self.expand(dst, a)
            a = dst
        self.out.append(call(f"bang_active_{fn}", dst.ptr, a.ptr, dst.length))

    def binary(self, dst: Opd, fn: str, a: Opd, b: Opd) -> None:
        vec = lambda o: o.kind in (FULL, ROW, COL)  # noqa: E731
        if not vec(a) and not vec(b):
            self.copy(dst, a)
            return self.binary(dst, fn, dst, b)
        if vec(a) and vec(b) and a.kind == b.kind == dst.kind:
            n = min(dst.length, a.length, b.length)   # see copy()
            self.out.append(call(f"bang_{fn}", dst.ptr, a.ptr, b.ptr, n))
            return
        if not vec(b) or (not vec(a) and fn in COMMUTES):
            if not vec(b):
                return self._scalar_form(dst, fn, a, b.value, swapped=False)
            return self._scalar_form(dst, fn, b, a.value, swapped=False)
        if not vec(a):
            return self._scalar_form(dst, fn, b, a.value, swapped=True)
        # two vector operands of different kinds
        if a.kind == FULL and b.kind == COL and fn in CYCLE:
            self.out.append(call(f"bang_cycle_{fn}", dst.ptr, a.ptr, b.ptr, _cycle_length(dst), dst.pitch))
            return
        if a.kind == COL and b.kind == FULL and fn in COMMUTES:
            return self.binary(dst, fn, b, a)
        if a.kind == FULL and b.kind == ROW and fn != "pow":
            self._per_row(dst, fn, a, b, swapped=False)
            return
        if a.kind == ROW and b.kind == FULL and fn != "pow":
            self._per_row(dst, fn, b, a, swapped=True)
            return
        # general: materialise the narrower operand as a full tile first
        if a.kind != FULL:
            if b.kind == FULL and dst.ptr == b.ptr:
                tmp = self.scratch_full(dst, 0)
                self.expand(tmp, a)
                return self.binary(dst, fn, tmp, b)
            self.expand(dst, a)
            return self.binary(dst, fn, dst, b)
        tmp = self.scratch_full(dst, 0)
        self.expand(tmp, b)
        self.binary(dst, fn, a, tmp)

    def select(self, dst: Opd, opds: list) -> None:
        """`__bang_select(dst, cond, a, b)`; operands of another kind are broadcast into scratch tiles first."""
        ptrs = []
        for k, o in enumerate(opds):
            if o.kind == dst.kind:
                ptrs.append(o.ptr)
            else:
                tmp = self.scratch_full(dst, k)
                self.expand(tmp, o)
                ptrs.append(tmp.ptr)
        self.out.append(call("bang_select", dst.ptr, *ptrs, dst.length))

    def clamp(self, dst: Opd, x: Opd, lo: Opd, hi: Opd) -> None:
        """min(max(x, lo), hi) as two vector ops (maximum/minimum propagate NaN, as numpy.clip); through a scratch
        tile when `hi` is the destination's own buffer."""
        tmp = self.scratch_full(dst, 2) if hi.kind in (FULL, ROW, COL) and hi.ptr == dst.ptr else dst
        self.binary(tmp, "maximum", x, lo)
        self.binary(dst, "minimum", tmp, hi)

    def _scalar_form(self, dst: Opd, fn: str, a: Opd, s: str, swapped: bool) -> None:
        if swapped and fn in MIRROR:
            fn, swapped = MIRROR[fn], False
        if a.kind != dst.kind:
            self.expand(dst, a)
            a = dst
        if swapped and fn not in COMMUTES:
            if fn in ("sub", "div"):
                fn = "r" + fn
            else:  # s pow a
                tmp = self.scratch_full(dst, 0) if dst.ptr == a.ptr else dst
                self.out.append(call("bang_write_value", tmp.ptr, dst.length, s))
                self.out.append(call(f"bang_{fn}", dst.ptr, tmp.ptr, a.ptr, dst.length))
                return
        if fn == "div" and not self.exact_div:   # x / s as x * (1 / s): one reciprocal, a simple op (as per row)
            self.out.append(call("bang_mul_scalar", dst.ptr, a.ptr, C.Bin("/", f32(1.0), s), dst.length))
            return
        self.out.append(call(f"bang_{fn}_scalar", dst.ptr, a.ptr, s, dst.length))

    def _per_row(self, dst: Opd, fn: str, a: Opd, row: Opd, swapped: bool) -> None:
        if swapped and fn in MIRROR:
            fn, swapped = MIRROR[fn], False
        if swapped and fn not in COMMUTES:
            fn = "r" + fn
        p = dst.pitch
        if fn == "div" and not self.exact_div:   # x / s[r] as x * (1 / s[r]): one reciprocal per row, a simple op
            self.out.append(per_row(dst.rows, call("bang_mul_scalar", _row(dst.ptr, p), _row(a.ptr, p),
                                                   C.Bin("/", f32(1.0), row.at(_R)), p)))
            return
        self.out.append(per_row(dst.rows, call(f"bang_{fn}_scalar", _row(dst.ptr, p), _row(a.ptr, p), row.at(_R), p)))

    def reduce(self, dst: Opd, e: ir.Reduce, a: Opd) -> None:
        if a.kind == FULL and dst.kind == COL and e.axes == (0,) and e.op in ("sum", "max", "min"):
            # column reduction over the first a.rows rows; pad columns (pitch > cols) are reduced too and unused
            self.out.append(call(f"bang_reduce_{e.op}_cols", dst.ptr, a.ptr, a.rows, a.pitch))
            return
        if a.kind == COL and dst.kind == SCALAR and e.op in ("sum", "max", "min"):   # whole (padded) tile
            start = L.tail_start(1, a.length, a.cols, a.length, a.dtype, a.whole)
            # the padding past the region holds what earlier ops left: the identity there, in place (below) or
            # through a masked copy (the elif)
            if start is not None:
                self._fill_tail(e.op, a, 1, a.length, start)
            elif a.cols < a.length:
                row = Opd(COL, a.ptr, a.length, pitch=a.length, cols=a.cols, dtype=a.dtype)
                tmp, fill = self.scratch_full(a, 0), self.scratch_full(a, 1)
                self.out.append(call("bang_write_value", fill.ptr, a.length, IDENT[e.op]))
                self.out.append(call("bang_select", tmp.ptr, self.mask_full(row), a.ptr, fill.ptr, a.length))
                a = tmp
            self.out.append(call(f"bang_reduce_{e.op}", dst.ptr, a.ptr, a.length))
            return
        if a.kind == ROW and dst.kind == SCALAR and e.axes == (0,) and e.op in ("sum", "max", "min"):
            # an [R, 1] row vector to one value: a scalar loop over the R rows (R small: group_norm's channels)
            acc = C.Bin("+", dst.value, a.at(_R)) if e.op == "sum" else minmax(e.op, dst.value, a.at(_R))
            self.out.append(assign(dst.value, a.at(C.Num(0))))
            self.out.append(per_row(a.rows, assign(dst.value, acc), lo=1))
            return
        if a.kind == ROW and dst.kind == ROW and e.axes == (1,):   # N == 1: full tiles are [R, 1] row vectors
            return self.copy(dst, a)
        if a.kind != FULL or dst.kind != ROW or e.axes != (1,) or e.op not in ("sum", "max", "min"):
            raise GirError("the MLU vector emitter reduces full tiles over axis 1 into a row vector", e.loc)
        start = L.tail_start(a.rows, a.pitch, a.cols, a.length, a.dtype, a.whole)
        if start is not None:
            self._fill_tail(e.op, a, a.rows, a.pitch, start)
        if a.cols == a.pitch or start is not None:
            self.out.append(call(f"bang_reduce_{e.op}_rows", dst.ptr, a.ptr, a.rows, a.pitch))
            return
        tmp, fill = self.scratch_full(a, 0), self.scratch_full(a, 1)
        self.out.append(call("bang_write_value", fill.ptr, a.length, IDENT[e.op]))
        self.out.append(call("bang_select", tmp.ptr, self.mask_full(a), a.ptr, fill.ptr, a.length))
        self.out.append(call(f"bang_reduce_{e.op}_rows", dst.ptr, tmp.ptr, a.rows, a.pitch))

    def round16(self, dst: Opd, a: Opd, dtype: str) -> None:
        """`dst = f16(a)` on f32 tiles: a's values rounded to the 16-bit type and widened again (what a later
        statement reads of a 16-bit result), through a 16-bit scratch vector of the tile's length."""
        n = L.round_up(min(dst.length, a.length), L.VECTOR_ALIGN // 2)
        h = self.scratch16(dtype, n)
        self.out.append(call(CONVERT[(dtype, "f32")], h, a.ptr, n))
        self.out.append(call(CONVERT[("f32", dtype)], dst.ptr, h, n))

    def _fill_tail(self, op: str, a: Opd, rows: int, span: int, start: int) -> None:
        """The identity of `op` into the pads of each of `rows` rows of `span` elements, in place: a select over
        the 128-byte units from `start` (the first holding a pad) to the row's end."""
        n = span - start
        mask, fill = self.tail_consts(op, n, a.cols - start)
        at = C.Bin("+", a.ptr if rows == 1 else _row(a.ptr, span), C.Num(start))
        sel = call("bang_select", at, mask, at, fill, n)
        self.out.append(sel if rows == 1 else per_row(rows, sel))


_R = C.Id("r_")   # the row of a per-row loop (instr.per_row)


def _row(ptr: C.CExpr, pitch: int) -> C.CExpr:
    """`ptr + r_ * pitch`: row r_ of a tile."""
    return C.Bin("+", ptr, C.Bin("*", _R, C.Num(pitch)))


def _cycle_length(dst: Opd) -> int:
    """Elements of a `__bang_cycle_*` op over a full tile: a multiple of the row pitch (the cycle). A dense
    tile's physical length is rounded up to 64 elements, which a pitch such as 224 does not divide: its whole rows
    instead (dense rows are whole 128-byte units)."""
    if dst.length % dst.pitch == 0:
        return dst.length
    return dst.prow * dst.pitch


# an [R, 1] result copied into a per-core vector moves as one NRAM-to-NRAM __memcpy from this many rows on (a
# synchronous move's latency and stall against R scalar copies: measured on mlu-sim, R = 8 and 20 were faster
# as scalar loops -- row_max 2048^2 1.124x vs 1.135x, sum_last 1.0189x vs 1.0199x -- and R = 64 much slower,
# row_max at N = 7 14.1x vs 9.8x)
MOVE_ROWS = 32


def _start(o: Opd) -> C.CExpr:
    """The address of a region's first element (`name + base`)."""
    return C.Id(o.name) if is_zero(o.base) else C.Bin("+", C.Id(o.name), o.base)
