"""Few long rows on many cores: every row of a row-model function cut into parts, one part per MLU core, kept in
NRAM while the cores combine their partial row statistics through GDRAM (`split-rows` recipe).

The row recipes give each core whole rows: a softmax over logits of 8 x 128256 (a decoding step) kept 8 of the 32
cores busy (6.8x the DMA roofline), one row of 128256 floats kept one (53x). Here the M rows are cut into P =
tasks // M parts of W columns (W a multiple of 64; the last part holds the rest), and task u takes part u % P of
row u // P:

    load the part of every [M, N] / [N] input into NRAM (row inputs, scalars)
    for each pass of the row model (its reductions grouped by dependence depth, as longrows.py):
        row values known so far; the part's full values that need them
        partial reduction of the part -> store to a GDRAM [M, P] buffer at (row, part)
        sync @all                                     (every partial stored before any is read)
        load the row's P partials, reduce them        (the row statistic, in every part's core)
    the last row values and full values; store the part of every [M, N] output (row outputs: part 0)

The input is read once (the parts stay in NRAM between the passes), so the traffic is the compulsory bytes plus
P partials per row and pass. Applies when M * 2 <= tasks and the function's full values for one part fit NRAM
(counted from the kernel, tiles_nram.py; computed full values share vectors by liveness); the column index as a
value (argmax: indexops.py's iota input `cj_`) is built on chip, an iota once per core plus the part's first
column. Every step is at the kernel's top level under conditions on the task (a `sync @all`
must not be inside a loop or a condition), so a task beyond M * P only takes part in the barriers.
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.indexops import COLV, _iota
from gir.passes.schedule_mlu.longrows import REDUCE, op_value, _passes
from gir.passes.schedule_mlu.rowmodel import COL, CONST, FULL, ROW, SCALAR, NotRowModel, RowModel
from gir.passes.schedule_mlu.tiles_nram import kernel_nram

F32 = ir.DType.f32
COMBINE = {"rsum": "sum", "rmax": "max", "rmin": "min"}


def split_rows_items(model: RowModel, name: str, tasks: int = 32, nram: int = 768 * 1024) -> list:
    """[the GDRAM partial buffers..., the kernel]; NotRowModel when the rows are enough for the cores, a row has
    fewer than two parts, or the model has per-column results."""
    m, n = model.m, model.n
    parts_max = tasks // m
    if parts_max < 2:
        raise NotRowModel(f"{m} rows are enough for {tasks} cores")
    if any(k == COL for k in model.outputs.values()):
        raise NotRowModel("per-column results")
    for p in range(parts_max, 1, -1):   # the most parts whose last one is the others' width or >= 64 columns
        width = L.round_up(-(-n // p), L.PITCH)   # (a last part of one column would be a scalar tile)
        parts = -(-n // width)
        tail = n - (parts - 1) * width
        if parts >= 2 and (tail == width or tail >= L.PITCH):
            break
    else:
        raise NotRowModel(f"rows of {n} elements are one part")
    split = _Split(model, name, tasks, parts, width, own_tail=True)
    items = split.items()
    if split.tail != width and max(kernel_nram(k) for k in items if isinstance(k, ir.Kernel)) > nram:
        items = _Split(model, name, tasks, parts, width, own_tail=False).items()   # (reductions of the last
    return items                                                                   # part then through masks)


class _Split:
    def __init__(self, model: RowModel, name: str, tasks: int, parts: int, width: int, own_tail: bool):
        self.model, self.name, self.tasks, self.parts, self.width = model, name, tasks, parts, width
        self.tail = model.n - (parts - 1) * width
        self.own_tail = own_tail and self.tail != width   # the last part's values in vectors of its width
        self.ops = list(model.ops)
        self.avail, self.need = _passes(model, self.ops, {})
        self.kinds = dict(model.inputs)
        for op in self.ops:
            self.kinds[op.dst.name] = op.dst.kind
        self.scalars = [x for x, k in model.inputs.items() if k == SCALAR]
        self.reds = [op for op in self.ops if op.fn in REDUCE]
        self.npass = max((self.avail[op.dst.name] for op in self.reds), default=0)
        self.buf = self.share_buffers()
        task = B.v("task_")
        self.row = ir.BinOp("//", task, B.c(parts))
        self.part = ir.BinOp("%", task, B.c(parts))

    def share_buffers(self) -> dict[str, str]:
        """value -> the NRAM vector holding it (its tile `NAME_t`, `NAME_l` for the last part). Vectors are shared
        by liveness, in the order the kernel computes (each pass's full values, its partial reductions, the stores
        after the last pass): the inputs start in vectors of their own; a value computed element-wise from an
        operand read for the last time takes that operand's vector (in place: `x - m` into x's vector), else a
        vector freed earlier, else a new one. So a softmax keeps one vector per part, not four."""
        vec = {x for x, k in self.kinds.items() if k in (FULL, COL) and x not in self.model.inputs}
        seq = []   # (value defined or None, values read)
        for p in range(self.npass + 1):
            seq += [(op.dst.name, [a.name for a in op.args if a.kind != CONST]) for op in self.ops
                    if op.dst.kind in (FULL, COL) and self.need[op.dst.name] == p]
            seq += [(None, [op.args[0].name]) for op in self.reds if self.avail[op.dst.name] == p + 1]
        seq.append((None, [x for x, k in self.model.outputs.items() if k == FULL]))
        last = {}
        for i, (_, reads) in enumerate(seq):
            for x in reads:
                last[x] = i
        out = {x: x for x, k in self.model.inputs.items() if k in (FULL, COL)}
        held = {x: x for x in out}   # vector -> the value it holds now (None: free)
        free: list[str] = []
        for i, (dst, reads) in enumerate(seq):
            dying = sorted(x for x in set(reads) if x in out and last.get(x) == i and held.get(out[x]) == x)
            for x in dying:
                held[out[x]] = None
            if dst in vec and dst not in out:
                if dying:
                    out[dst] = out[dying.pop(0)]
                elif free:
                    out[dst] = free.pop()
                else:
                    out[dst] = f"f{len(held)}_"
                held[out[dst]] = dst
            free += [out[x] for x in dying]
        return out

    # -- tiles -------------------------------------------------------------------------------------------------
    def tile(self, x: str, w: int | None = None, land: bool = False) -> ir.Ref:
        """The tile of value x (`land`: its 16-bit landing tile); the last part's full and column values have
        tiles of their own, exactly its width (a narrower region of a wider tile would be reduced through a
        column mask, built in scalar code)."""
        if x in self.scalars:
            return B.ref(f"{x}_t", B.sl(0, 1))
        if self.kinds.get(x, ROW) in (FULL, COL):   # (one row: a vector)
            last = w == self.tail and self.own_tail
            if land:   # (a 16-bit value's own landing tile: shared vectors are f32)
                return B.ref(f"{x}_{'k' if last else 'h'}", B.sl(0, w))
            return B.ref(f"{self.buf.get(x, x)}_{'l' if last else 't'}", B.sl(0, w))
        return B.ref(f"{x}_h" if land else f"{x}_t", B.sl(0, 1))

    def allocs(self) -> list:
        out = []
        dtypes = self.model.dtypes
        made = set()
        for x, k in sorted(self.kinds.items()):
            if x in self.scalars:
                out.append(B.alloc(f"{x}_t", dtypes[x], (1,), "nram"))
                continue
            widths = [self.width] + ([self.tail] if self.own_tail else []) if k in (FULL, COL) else [1]
            for w in widths:
                tiles = [(self.tile(x, w).name, F32)]
                if dtypes.get(x, F32) != F32:
                    tiles.append((self.tile(x, w, land=True).name, dtypes[x]))
                for name, dt in tiles:
                    if (name, dt) not in made:
                        made.add((name, dt))
                        out.append(B.alloc(name, dt, (w,), "nram"))
        if COLV in self.model.inputs:
            out += [B.alloc("gs_", F32, (1,), "nram"), B.alloc("rs_", F32, (1,), "nram")]
            if not any(k == FULL for k in self.model.inputs.values()):
                out.append(B.alloc("gc_", F32, (self.width,), "nram"))
        for op in self.reds:
            out += [B.alloc(f"p_{op.dst.name}_t", F32, (1,), "nram"),
                    B.alloc(f"q_{op.dst.name}_t", F32, (self.parts,), "nram")]
        return out

    # -- steps -------------------------------------------------------------------------------------------------
    def by_width(self, step) -> list:
        """`step(w, c0)` for this task's part: W columns, or the last part's rest (statements under conditions)."""
        active = ir.BinOp("<", B.v("task_"), B.c(self.model.m * self.parts))
        c0 = B.mul(self.part, self.width)
        if self.tail == self.width:
            return [ir.If(active, tuple(step(self.width, c0)))]
        last = ir.BinOp("==", self.part, B.c(self.parts - 1))
        return [ir.If(active, (ir.If(last, tuple(step(self.tail, c0)), tuple(step(self.width, c0))),))]

    def loads(self, w: int, c0) -> list:
        out = []
        for x, k in sorted(self.model.inputs.items()):
            if x == COLV:   # the part's columns: the iota (self.iota) plus its first column
                rs = B.ref("rs_", B.sl(0, 1))
                iota = B.ref(self.tile(x, self.width).name, B.sl(0, w))
                out += [ir.Assign(rs, c0), ir.Assign(self.tile(x, w), ir.BinOp("+", iota, rs))]
                continue
            if k not in (FULL, COL):
                continue
            dt = self.model.dtypes[x]
            t = self.tile(x, w)
            land = t if dt == F32 else self.tile(x, w, land=True)
            src = B.ref(x, self.row, B.sl(c0, w)) if k == FULL else B.ref(x, B.sl(c0, w))
            out.append(B.move("load", land, src))
            if dt != F32:
                out.append(ir.Assign(t, ir.Call("f32", (land,))))
        return out

    def iota(self) -> list:
        """0..W-1 into the column index's vector, doubling through a vector not yet in use (an input's)."""
        if COLV not in self.model.inputs:
            return []
        spare = next((x for x, k in sorted(self.model.inputs.items()) if k == FULL), None)
        tmp = self.tile(spare, self.width).name if spare else "gc_"
        return _iota(self.tile(COLV, self.width).name, tmp, self.width, False)

    def opd(self, a, w):
        return B.c(a.const) if a.kind == CONST else self.tile(a.name, w)

    def full_ops(self, p: int, w: int) -> list:
        return [ir.Assign(self.tile(op.dst.name, w), op_value(op, [self.opd(a, w) for a in op.args]))
                for op in self.ops if op.dst.kind in (FULL, COL) and self.need[op.dst.name] == p
                and not (op.fn == "copy" and self.opd(op.args[0], w) == self.tile(op.dst.name, w))]

    def row_ops(self, p: int) -> list:
        return [ir.Assign(self.tile(op.dst.name), op_value(op, [self.opd(a, 1) for a in op.args]))
                for op in self.ops if op.fn not in REDUCE and op.dst.kind in (ROW, SCALAR)
                and self.avail.get(op.dst.name) == p]

    def partials(self, p: int, w: int) -> list:
        out = []
        for op in self.reds:
            if self.avail[op.dst.name] != p:
                continue
            part = B.ref(f"p_{op.dst.name}_t", B.sl(0, 1))
            arg = self.opd(op.args[0], w)
            out.append(ir.Assign(part, ir.Reduce(COMBINE[op.fn], arg)))
            out.append(B.move("store", B.ref(self.buffer(op), self.row, B.sl(self.part, 1)), part))
        return out

    def combine(self, p: int) -> list:
        out = []
        for op in self.reds:
            if self.avail[op.dst.name] != p:
                continue
            q = B.ref(f"q_{op.dst.name}_t", B.sl(0, self.parts))
            out.append(B.move("load", q, B.ref(self.buffer(op), self.row, B.sl(0, self.parts))))
            out.append(ir.Assign(self.tile(op.dst.name), ir.Reduce(COMBINE[op.fn], q)))
        return out

    def buffer(self, op) -> str:
        return f"{op.dst.name}_parts_"

    def stores(self, w: int, c0) -> list:
        out = []
        for x, k in sorted(self.model.outputs.items()):
            if k != FULL:
                continue
            out += self.cast_store(x, self.tile(x, w), B.ref(x, self.row, B.sl(c0, w)), self.tile(x, w, land=True))
        return out

    def cast_store(self, x: str, src: ir.Ref, dst: ir.Ref, h: ir.Ref) -> list:
        dt = self.model.dtypes[x]
        out = []
        if dt != F32:
            out.append(ir.Assign(h, ir.Call(dt.value, (src,))))
            src = h
        return out + [B.move("store", dst, src)]

    def items(self) -> list:
        m = self.model
        active = ir.BinOp("<", B.v("task_"), B.c(m.m * self.parts))
        body: list = [B.move("load", self.tile(x), B.ref(x)) for x in self.scalars] + self.iota()
        rows_in = []
        for x, k in sorted(m.inputs.items()):
            if k == ROW:
                t = self.tile(x)
                dt = m.dtypes[x]
                land = t if dt == F32 else self.tile(x, land=True)
                rows_in.append(B.move("load", land, B.ref(x, B.sl(self.row, 1))))
                if dt != F32:
                    rows_in.append(ir.Assign(t, ir.Call("f32", (land,))))
        body.append(ir.If(active, tuple(rows_in + self.row_ops(0))))
        body += self.by_width(lambda w, c0: self.loads(w, c0) + self.full_ops(0, w) + self.partials(1, w))
        for p in range(1, self.npass + 1):
            body.append(ir.Sync(ir.ParLevel.all))
            body.append(ir.If(active, tuple(self.combine(p) + self.row_ops(p))))
            body += self.by_width(lambda w, c0, p=p: self.full_ops(p, w) + self.partials(p + 1, w)
                                  + (self.stores(w, c0) if p == self.npass else []))
        if not self.npass:
            body += self.by_width(self.stores)
        row_out = []
        for x, k in sorted(m.outputs.items()):
            if k == ROW:
                row_out += self.cast_store(x, self.tile(x), B.ref(x, B.sl(self.row, 1)), self.tile(x, land=True))
        if row_out:
            first = ir.BinOp("==", self.part, B.c(0))
            body.append(ir.If(active, (ir.If(first, tuple(row_out)),)))
        body = [x for x in body if not _empty(x)]
        par = ir.Parallel("task_", B.c(0), B.c(self.tasks), ir.ParLevel.core, tuple(self.allocs() + body))
        bufs = [B.alloc(self.buffer(op), F32, (m.m, self.parts), "gdram") for op in self.reds]
        return bufs + [ir.Kernel(self.name, (par,), (("task_dim", str(self.tasks)),))]


def _empty(s) -> bool:
    """An `if` with nothing to do in either branch (a pass without row values, a last pass without full values)."""
    return isinstance(s, ir.If) and all(_empty(x) for x in s.then) and all(_empty(x) for x in s.orelse)
