"""The general tile recipe of the MLU scheduler: functions the row model cannot take (reductions and broadcasts
over any axis, any number of statements) as one pipelined kernel on `[rows, lanes]` NRAM tiles.

Every index of every statement is one of the function's *axes* (union-find over the tensors' dimensions: `x`'s
second dimension and `mx`'s first are the same axis when a statement indexes both with one variable). The axes
are ordered as the tensors lay them out (outermost first; a tensor that indexes two axes in the other order is a
transpose, which this recipe does not take). Then:

* **flattening**: two neighbouring axes that every tensor holds together, adjacent and in that order (and that
  every reduction reduces together or not at all) become one axis, through a reshape view of each tensor
  (`x: f32[N, C, H, W] as [N, C, H * W]`; views cost no data movement, gir/views.py). A function that becomes
  a row-model function that way (`y[a, b, c, d] = x[a, b, c, d] * w[c, d]` is `[A * B, C * D]` rows with a
  per-column `w`) is handed to the row model;
* **lanes** `L`: the last axis. It must be the last dimension of every tensor that has it. Tiles hold `W` lanes
  (chunks of the lane axis, whole 128-byte units, or the whole axis), so element-wise work is one vector op over
  the tile;
* **rows** `T`: the one other axis reductions reduce (or, without such reductions, the last axis before the
  lanes). A reduction over `T` is a column reduction of the tile (`__bang_reduce_*_cols`, one vector op over
  rows: no transpose); a reduction over the lanes a row reduction (`__bang_reduce_*_rows`);
* **units** `U`: the other axes, one point of each per work unit (with a chunk of lanes, and a part of `T` when
  `T` is streamed), units cyclic over the 32 cores.

Kernel shapes (passes/schedule_mlu/tiles_held.py, tiles_slab.py, tiles_stream.py; planned by tiles_kernel.py):

* `held`: some value reduced over `T` is used again at every row (softmax over a middle or leading axis,
  normalisation statistics): a unit's whole `[T, W]` slab is one NRAM tile. The loop over a core's units is
  software-pipelined by the emitter (load unit i+1 / compute unit i / store unit i-1): the statistics never leave
  NRAM and the input is read once;
* `slab`: the same when the slab fits NRAM once but not in three pipeline slots (a column softmax over 4096
  rows): each unit loads its slab in sub-tiles (pipelined, the first statistics computed as they land),
  runs the passes the reductions need on chip, and stores in sub-tiles (pipelined);
* `stream`: reductions over `T` only produce results (`dgamma[j] = sum(dy[i, j] * xhat[i, j])` next to a
  row-wise `dx`): each unit walks `T` in tiles of `R` rows (pipelined), accumulating those reductions in
  NRAM; when the units are too few for the cores, `T` is cut into parts whose partial results a second small
  kernel combines.

f16 / bf16 tensors land in 16-bit tiles and are computed in f32 (rounded once per result); casts to f16 / bf16
inside an expression round on chip. `NotTile` (a `NotRowModel`) when the function is outside the recipe.
The axes and the flattening: passes/schedule_mlu/tiles_axes.py.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from gir import ir
from gir.errors import GirError
from gir.passes.builtin.exprs import KIND_INT, expr_kind
from gir.passes.schedule_mlu.constfold import fold
from gir.passes.schedule_mlu.exactdiv import count_scale
from gir.passes.schedule_mlu.rowmodel import BINOPS, NotRowModel, boolean_value, const_is
from gir.passes.schedule_mlu.tiles_axes import Axes, NotTile, _reduced_axes, find_axes, flatten

FULL, ROW, COL, SCAL, CONST = "full", "row", "col", "scalar", "const"
FLOATS = (ir.DType.f32, ir.DType.f16, ir.DType.bf16)
REDUCE_OPS = ("sum", "max", "min", "mean")


# ------------------------------------------------------------------------------------------------ the graph
@dataclass(frozen=True)
class Val:
    kind: str            # full row col scalar const
    name: str = ""
    const: float = 0.0


@dataclass(frozen=True)
class Op:
    """dst = fn(args). fn: a BINOPS value, a unary function, 'copy', 'select', 'r16' / 'rbf16' (round to f16 /
    bf16 and back), 'lsum' / 'lmax' / 'lmin' (over the lanes: full -> row, col -> scalar), 'tsum' / 'tmax' /
    'tmin' (over the rows: full -> col, row -> scalar)."""
    dst: Val
    fn: str
    args: tuple


def _kind(has_t: bool, has_l: bool) -> str:
    return FULL if has_t and has_l else ROW if has_t else COL if has_l else SCAL


def _has(kind: str) -> tuple[bool, bool]:
    return {FULL: (True, True), ROW: (True, False), COL: (False, True), SCAL: (False, False),
            CONST: (False, False)}[kind]


@dataclass
class Tiles:
    """The analysed function: axes (after flattening), the lane / row / unit axes, values and ops."""
    func: ir.Func
    axes: Axes
    lane: object
    row: object
    units: list                          # unit axes, outermost first
    ops: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)     # param name -> kind
    outputs: dict = field(default_factory=dict)    # result name -> kind
    vals: dict = field(default_factory=dict)       # value name -> frozenset of unit axes it depends on
    held: bool = False                             # a reduction over the rows is used again at every row
    accumulated: list = field(default_factory=list)  # stream mode: ops reducing over rows (tile -> accumulator)

    @property
    def n_lanes(self) -> int:
        return self.axes.ext[self.lane]

    @property
    def n_rows(self) -> int:
        return self.axes.ext[self.row]

    def dtype(self, name: str) -> ir.DType:
        return self.axes.types[name].dtype


def analyze(func: ir.Func) -> Tiles:
    """The tile view of a (flattened, sizes specialised) function, or NotTile."""
    from gir.shapes import func_info
    try:
        info = func_info(func)
    except GirError as e:
        raise NotTile(f"not analysable: {e}") from None
    axes = find_axes(func, info)
    from gir.passes.schedule_mlu.iotas import ACTIVE   # (the index-tensor variant: i32 indices, exact in f32)
    for name, t in axes.types.items():
        if t.dtype not in FLOATS and not (ACTIVE and t.dtype == ir.DType.i32):
            raise NotTile(f"'{name}' is {t.dtype.value}")
    if len(axes.order) < 2:
        raise NotTile("fewer than two axes")
    lane = axes.order[-1]
    for name, dims in axes.dims.items():
        if lane in dims and dims[-1] != lane:
            raise NotTile(f"'{name}' holds the lane axis elsewhere than last (a transpose)")
    reds = _reduced_axes(info, axes)
    tred = set().union(*reds) - {lane} if reds else set()
    if len(tred) > 1:
        raise NotTile("reductions over two axes other than the last")
    row = next(iter(tred)) if tred else axes.order[-2]
    units = [a for a in axes.order if a not in (lane, row)]
    t = Tiles(func, axes, lane, row, units)
    _Builder(t, info).build()
    return t


class _Builder:
    def __init__(self, t: Tiles, info):
        from gir.passes.schedule_mlu.exactdiv import in_exact_scope, needs_exact_division
        self.t, self.info = t, info
        self.exact = in_exact_scope() or needs_exact_division([st.stmt for st in info.stmts], info.types)
        self.memo: dict = {}
        self.count = 0
        self.defined: dict[str, Val] = {}
        self.params = [p.name for p in t.func.params]   # in declaration order: deterministic kernels
        self.results = [p.name for p in t.func.results]

    def kind_of_axes(self, axes) -> str:
        return _kind(self.t.row in axes, self.t.lane in axes)

    def udeps(self, axes) -> frozenset:
        return frozenset(a for a in axes if a in self.t.units)

    def build(self) -> None:
        t = self.t
        for name in self.params:
            v = Val(self.kind_of_axes(t.axes.dims[name]), name)
            t.inputs[name] = v.kind
            t.vals[name] = self.udeps(t.axes.dims[name])
            self.defined[name] = v
        for k, st in enumerate(self.info.stmts):
            self.k, self.reduce_no, self.st = k, 0, st
            target = st.stmt.target.name
            tk = self.kind_of_axes(t.axes.dims[target])
            val = self.expr(st.stmt.value)
            if val.kind != CONST and not _sub(val.kind, tk):
                raise NotTile("a statement's value has axes its target lacks")
            last = t.ops[-1] if t.ops else None
            if last is not None and last.dst == val and val.kind == tk and val.name.startswith("v_") \
                    and not any(val in op.args for op in t.ops[:-1]):
                t.ops[-1] = Op(Val(tk, target), last.fn, last.args)
                t.vals[target] = t.vals.pop(val.name)
                self.memo = {key: (Val(tk, target) if m == val else m) for key, m in self.memo.items()}
            else:
                t.ops.append(Op(Val(tk, target), "copy", (val,)))
                t.vals[target] = self.udeps(t.axes.dims[target])
            self.defined[target] = Val(tk, target)
        for name in self.results:
            if name not in self.defined or name in self.params:
                raise NotTile(f"result '{name}' is not computed")
            t.outputs[name] = self.defined[name].kind
        self._classify()

    def _classify(self) -> None:
        """Held (a row reduction used again at the rows) or streamed (row reductions only feed results)."""
        t = self.t
        tainted: set[str] = set()
        for op in t.ops:
            tin = any(a.name in tainted for a in op.args if a.kind != CONST)
            if op.fn in ("tsum", "tmax", "tmin"):
                tainted.add(op.dst.name)
            elif tin:
                if _has(op.dst.kind)[0]:
                    t.held = True
                tainted.add(op.dst.name)
        if not t.held:
            t.accumulated = [op for op in t.ops if op.fn in ("tsum", "tmax", "tmin")]

    # ------------------------------------------------------------ expressions
    def fresh(self, kind: str, deps: frozenset) -> Val:
        self.count += 1
        v = Val(kind, f"v_{self.count}")
        self.t.vals[v.name] = deps
        return v

    def apply(self, fn: str, args: list, kind: str | None = None) -> Val:
        if all(a.kind == CONST for a in args) and kind is None:
            value = fold(fn, [a.const for a in args])   # (constfold.py: `(2.0 + 3.3)`, `neg(1.25)`)
            if value is None:
                raise NotTile("a constant expression")
            return Val(CONST, const=value)
        key = (fn, tuple(args), kind)
        if key in self.memo:
            return self.memo[key]
        if kind is None:
            ht = any(_has(a.kind)[0] for a in args)
            hl = any(_has(a.kind)[1] for a in args)
            kind = _kind(ht, hl)
        deps = frozenset().union(*(self.t.vals[a.name] for a in args if a.kind != CONST))
        dst = self.fresh(kind, deps)
        self.t.ops.append(Op(dst, fn, tuple(args)))
        self.memo[key] = dst
        return dst

    def expr(self, e) -> Val:
        if isinstance(e, ir.Const):
            if isinstance(e.value, bool):
                raise NotTile("a boolean constant")
            return Val(CONST, const=float(e.value))
        if isinstance(e, ir.Ref):
            if e.name not in self.defined:
                raise NotTile(f"'{e.name}' is read before it is computed")
            return self.defined[e.name]
        if isinstance(e, ir.UnOp):
            if e.op != "-":
                raise NotTile("logical not")
            return self.apply("neg", [self.expr(e.operand)])
        if isinstance(e, ir.BinOp):
            if e.op not in BINOPS:
                raise NotTile(f"operator {e.op}")
            if e.op == "!=" and const_is(e.rhs, 0) and boolean_value(e.lhs, self.info.types):
                return self.expr(e.lhs)   # a 0 / 1 value is its own `!= 0` (boolarith.py's and / or)
            a, b = self.expr(e.lhs), self.expr(e.rhs)
            if e.op == "/" and b.kind != CONST and _rank(b.kind) < _rank(a.kind) and _sub(b.kind, a.kind) \
                    and not self.exact:   # (exactdiv.py: a step function reads a quotient)
                # a / b with b broadcast (a row / column / unit statistic): a * (1 / b), the reciprocal once
                # per statistic and a simple-class multiply per element instead of a div-class op
                return self.apply("mul", [a, self.apply("recip", [b])])
            return self.apply(BINOPS[e.op], [a, b])
        if isinstance(e, ir.Call):
            if (e.fn == "f32" or (e.fn in ("i32", "bool") and boolean_value(e.args[0], self.info.types))) \
                    and len(e.args) == 1:
                return self.expr(e.args[0])   # (a compare's or a bool tensor's 1.0 / 0.0 is its own i32 / bool)
            if e.fn == "i32" and len(e.args) == 1 and expr_kind(e.args[0], self.info.types) == KIND_INT:
                return self.expr(e.args[0])   # (an integer's own value: an index tensor's min, an argmax's)
            if e.fn in ("f16", "bf16") and len(e.args) == 1:
                return self.apply("r16" if e.fn == "f16" else "rbf16", [self.expr(e.args[0])])
            if e.fn in ir.UNARY_FUNCS and len(e.args) == 1:
                return self.apply(e.fn, [self.expr(e.args[0])])
            if e.fn == "clamp" and len(e.args) == 3:
                x, lo, hi = (self.expr(a) for a in e.args)
                return self.apply("min", [self.apply("max", [x, lo]), hi])
            if e.fn == "select" and len(e.args) == 3:
                return self.apply("select", [self.expr(a) for a in e.args])
            if e.fn in BINOPS and len(e.args) == 2:
                return self.apply(BINOPS[e.fn], [self.expr(a) for a in e.args])
            raise NotTile(f"function {e.fn}")
        if isinstance(e, ir.Reduce):
            if e.op not in REDUCE_OPS:
                raise NotTile(f"reduction {e.op}")
            vs = self.st.reduce_vars.get(self.reduce_no, ())
            self.reduce_no += 1
            red = {self.t.axes.svars[self.k][v] for v in vs}
            if red - {self.t.row, self.t.lane}:
                raise NotTile("a reduction over a unit axis")
            v = self.expr(e.arg)
            if v.kind == CONST:
                raise NotTile("a reduction of a constant")
            op = "sum" if e.op == "mean" else e.op
            count = 1
            for axis, prefix, bit in ((self.t.lane, "l", 1), (self.t.row, "t", 0)):
                if axis not in red:
                    continue
                count *= self.t.axes.ext[axis]
                if _has(v.kind)[bit]:
                    ht, hl = _has(v.kind)
                    kind = _kind(ht and bit != 0, hl and bit != 1)
                    v = self.apply(prefix + op, [v], kind)
                elif op == "sum":
                    v = self.apply("mul", [v, Val(CONST, const=float(self.t.axes.ext[axis]))])
            if e.op == "mean":   # (exactdiv.py: by the count where a step function reads the mean)
                op, c = count_scale(count, self.exact)
                v = self.apply(BINOPS[op], [v, Val(CONST, const=c)])
            return v
        raise NotTile(f"expression {type(e).__name__}")


def _rank(kind: str) -> int:
    return {CONST: 0, SCAL: 1, ROW: 2, COL: 2, FULL: 3}[kind]


def _sub(a: str, b: str) -> bool:
    """Kind `a`'s axes are among kind `b`'s."""
    ha, hb = _has(a), _has(b)
    return (not ha[0] or hb[0]) and (not ha[1] or hb[1])


# ------------------------------------------------------------------------------------------------ entry
def tile_schedule(spec: ir.Func, info, tasks: int = 32, nram: int = 768 * 1024, remarks=None,
                  allow_sram: bool = True, max_rows: int = 64, views: bool = True) -> ir.Func:
    """The scheduled function (params / results possibly viewed with merged axes, body: GDRAM temporaries and
    kernels) of `spec` (sizes specialised) under the tile recipe, or NotTile. `views`: axes may be merged (the
    caller declares the tensors as the returned function does)."""
    from gir.passes.schedule_mlu import tiles_kernel as K
    if views:   # interleaved pairs (RoPE): passes/schedule_mlu/tiles_pairs.py
        from gir.passes.schedule_mlu.tiles_pairs import pair_schedule
        try:
            return pair_schedule(spec, info, tasks)
        except NotTile:
            pass
    flat, changed = flatten(spec, info) if views else (spec, False)
    name = f"{spec.name}_mlu"
    if changed:   # merged axes may make a row-model function (the row model's own schedule then)
        from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
        from gir.passes.schedule_mlu.placement import NoTileFits, solve_placement
        from gir.passes.schedule_mlu.rowmodel import analyze_rows
        try:
            model = analyze_rows(flat, {})
            pl = solve_placement(model, tasks=tasks, allow_sram=allow_sram, max_rows=max_rows, nram=nram)
            return dataclasses.replace(flat, body=(lower_rows(model, RowPlan(pl.rows, tasks, pl.sram), name),))
        except (NotRowModel, NoTileFits):
            pass
    t = analyze(flat)
    from gir.passes.schedule_mlu.cost import estimate

    def rank(items) -> float:   # the MLU cost model's time of the plan's kernels
        return estimate(dataclasses.replace(flat, body=tuple(items))).seconds
    moved = sum(math.prod(p.type.shape) * p.type.dtype.nbytes for p in flat.params + flat.results)
    # plans are timed when the function moves at least RANK_BYTES (below, DMA latencies dominate every plan and
    # the analytic order stands: compile time)
    items, plan = K.build(t, name, tasks, min(nram - 48 * 1024, K.NRAM_BUDGET),
                          rank if moved >= K.RANK_BYTES else None, allow_sram)
    units = (1 if plan.head else plan.parts) * -(-t.n_lanes // plan.W)
    for a in t.units:
        units *= t.axes.ext[a]
    size = sum(math.prod(t.axes.ext[a] for a in t.axes.dims[n]) * t.dtype(n).nbytes
               for n in list(t.inputs) + list(t.outputs))
    if remarks is not None and units < tasks // 2 and size >= (4 << 20):   # (small programs: latency-bound anyway)
        from gir.passes.remarks import Remark
        remarks.append(Remark("schedule-mlu", "missed", f"'{spec.name}' has {units} independent work units for "
                              f"{tasks} cores: the others idle (a unit holds all {t.n_rows} rows its statistics "
                              "need)", spec.loc))
    return dataclasses.replace(flat, body=tuple(items))
