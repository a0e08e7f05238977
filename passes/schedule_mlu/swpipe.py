"""`software-pipeline`: the MLU's load / compute / store pipelining as an IR rewrite (explicit MLU GIR in, explicit
MLU GIR out). It is the last pass of the mlu-sim compile pipeline, so `--print-ir-after-all` shows the pipelined
kernels; codegen/mlu prints them as they stand (async moves, slotted tiles, `sync @core`).

A loop `for v in 0..T` (step 1) whose body is loads (and on-chip copies of tiles just loaded), then computes
(assignments, or loops of assignments: a scan's row steps), then stores to GDRAM becomes a three-stage pipeline:

    if 0 < T { load t[0, ...] <- x[... at v = 0] with async }
    for v in 0..T {
        sync @core                                          # tile v loaded, tile v - 2 stored
        if v + 1 < T { load t[(v + 1) % 3, ...] <- x[... at v + 1] with async }
        if 0 < v { store y[... at v - 1] <- t[(v + 2) % 3, ...] with async }
        computes of tile v on slot v % 3
    }
    sync @core
    if 0 < T { store y[... at T - 1] <- t[(T - 1) % 3, ...] with async }
    sync @core

Tiles only loaded or only stored get two slots, tiles both loaded and stored three (with two, the load of tile
v + 1 would overwrite tile v - 1 before its store has read it). A tile whose moved rows advance with the loop
variable (rows k*S..k*S+S of a slab in iteration k) needs none: every iteration has rows of its own; nor does a
tile the loop stores without writing it (its data does not change between iterations). A slotted
tile's alloc gains a first dimension of that extent (`with slots=k`); its references outside pipelined loops use
slot 0. In `with pipeline=units` kernels a loop over work units whose body is nested one-trip loops decoding the
unit's indices is pipelined through them: the moves of iterations v + 1 and v - 1 substitute the decoded indices.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.affine import slice_extent, to_affine
from gir.errors import GirError
from gir.passes.base import ModulePass, PassContext
from gir.passes.builtin.exprs import substitute_vars
from gir.walk import map_expr, walk


@dataclass(frozen=True)
class SoftwarePipeline(ModulePass):
    """Pipeline the loads, computes and stores of MLU kernel loops (async moves into 2 or 3 tile slots)."""
    name: ClassVar[str] = "software-pipeline"
    consumes: ClassVar[str] = "gir"
    produces: ClassVar[str] = "gir"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        funcs = []
        for f in module.funcs:
            g = pipeline_func(f)
            if g is not f:
                ctx.bump("software-pipeline.loops", _count_pipelined(g) - _count_pipelined(f))
            funcs.append(g)
        return dataclasses.replace(module, funcs=tuple(funcs))


def pipeline_func(func: ir.Func) -> ir.Func:
    """`func` with the pipelinable loops of its MLU kernels pipelined (GPU kernels and functions without kernels
    are returned unchanged)."""
    if not any(_is_mlu(k) for k in func.kernels):
        return func
    body = tuple(pipeline_kernel(x) if isinstance(x, ir.Kernel) and _is_mlu(x) else x for x in func.body)
    return dataclasses.replace(func, body=body)


def pipeline_kernel(k: ir.Kernel) -> ir.Kernel:
    through = dict(k.attrs).get("pipeline") == "units"
    chosen, slots, fenced = choose_loops(k)
    if not chosen:
        return k
    return dataclasses.replace(k, body=_Rewriter(slots, through, chosen, fenced).block(k.body))


def choose_loops(k: ir.Kernel) -> tuple[set[int], dict[str, int], set[int]]:
    """(id() of the loops `pipeline_kernel` pipelines, the slots of their tiles, id() of those whose first loads
    copy an NRAM buffer computes may still be writing); the cost model times these loops as pipelined."""
    through = dict(k.attrs).get("pipeline") == "units"
    levels: dict[str, ir.Level] = {}
    preslotted: set[str] = set()   # tiles a kernel already allocates `with slots=k`: never slotted again
    slots: dict[str, int] = {}
    chosen: set[int] = set()       # id() of the loops to pipeline
    fenced: set[int] = set()       # ... whose first loads copy an NRAM buffer computes may still be writing

    def collect(stmts, after: list):
        for i, s in enumerate(stmts):
            rest = list(stmts[i + 1:]) + after   # what runs after s (conservatively: whole enclosing loop bodies)
            if isinstance(s, ir.Alloc):
                levels[s.name] = s.level
                if s.slots > 1:
                    preslotted.add(s.name)
            elif isinstance(s, ir.For):
                if pipelinable(s, through, levels) and safe(s, through, rest, preslotted):
                    chosen.add(id(s))
                    if _unit_copies(s, through, levels):
                        fenced.add(id(s))
                    for name, d in slot_depths(s, through).items():
                        slots[name] = max(slots.get(name, 1), d)
                collect(s.body, list(s.body) + rest)
            elif isinstance(s, ir.Parallel):
                collect(s.body, rest)
            elif isinstance(s, ir.If):
                collect(s.then, rest)
                collect(s.orelse, rest)
    collect(k.body, [])
    return chosen, slots, fenced


def safe(s: ir.For, through: bool, rest: list, preslotted: set) -> bool:
    """Whether pipelining `s` keeps its meaning: no tile it would slot is already slotted, carries a value from
    one iteration into the next (read before it is written in the body), or is read after the loop before being
    written again (the last iteration's value sits in slot (T - 1) % k, not 0); no GDRAM tensor is both loaded and
    stored by the loop (the load of iteration v + 1 is issued before the store of iteration v)."""
    body = unwrap(s, through)[1]
    moves = [x for x in body if isinstance(x, ir.Move)]
    if any(m.dst.name in preslotted or m.src.name in preslotted for m in moves):
        return False
    loads = {m.src.name for m in moves if m.kind == "load"}
    if loads & {m.dst.name for m in moves if m.kind == "store"}:
        return False
    depth = slot_depths(s, through)
    loaded = {m.dst.name for m in moves if m.kind in ("load", "copy")}
    computes = [a for x in body for a in ([x] if isinstance(x, ir.Assign) else x.body if _compute_loop(x) else [])]
    for name in depth:
        if name not in loaded and _first_use(computes, name) == "read":
            return False
        if _first_use(_flat(rest), name) == "read":
            return False
    return True


def _first_use(stmts, name: str) -> str | None:
    """"write" when the first of `stmts` (straight-line Assigns and Moves) referencing tile `name` defines it
    without reading it, "read" when it reads it, None when none references it."""
    for x in stmts:
        if isinstance(x, ir.Assign):
            reads = any(isinstance(r, ir.Ref) and r.name == name for r in walk(x.value))
            if reads:
                return "read"
            if x.target.name == name:
                return "write"
        elif isinstance(x, ir.Move):
            if x.src.name == name:
                return "read"
            if x.dst.name == name:
                return "write"
        elif isinstance(x, ir.XReduce) and x.target.name == name:
            return "read"
    return None


def _flat(stmts) -> list:
    """Assigns, Moves and XReduces of `stmts` in program order, through loops and both branches of ifs."""
    out = []
    for x in stmts:
        if isinstance(x, (ir.For, ir.Parallel)):
            out += _flat(x.body)
        elif isinstance(x, ir.If):
            out += _flat(x.then) + _flat(x.orelse)
        elif isinstance(x, (ir.Assign, ir.Move, ir.XReduce)):
            out.append(x)
    return out


def pipelinable(s: ir.For, through: bool, levels: dict) -> bool:
    """Loads (and on-chip copies of tiles just loaded, copies from SRAM, copies from an NRAM buffer the loop never
    writes), then computes, then stores; at least one move; the loop runs 0..T by 1."""
    phase, loaded, moved = 0, set(), False
    body = unwrap(s, through)[1]
    written = {x.dst.name for x in _flat(body) if isinstance(x, ir.Move)} | \
        {x.target.name for x in _flat(body) if isinstance(x, ir.Assign)}
    for x in body:
        if isinstance(x, ir.Move) and (x.kind == "load" or _sram_load(x, levels) or _unit_copy(x, levels, written)):
            p, moved = 0, True
            loaded.add(x.dst.name)
        elif _load_copy(x, loaded, levels):
            p = 0
        elif isinstance(x, ir.Assign) or _compute_loop(x):
            p = 1
        elif isinstance(x, ir.Move) and x.kind == "store" and not x.async_:
            p, moved = 2, True
        else:
            return False
        if p < phase:
            return False
        phase = p
    return moved and s.step == 1 and isinstance(s.lo, ir.Const) and s.lo.value == 0


def slot_depths(s: ir.For, through: bool) -> dict[str, int]:
    """Pipeline slots of the tiles the loop moves: 3 for tiles both loaded and stored, else 2; none for tiles whose
    moved rows advance with the loop variable."""
    body = unwrap(s, through)[1]
    moves = [(x.dst if x.kind in ("load", "copy") else x.src, "load" if x.kind == "copy" else x.kind)
             for x in body if isinstance(x, ir.Move)]
    fixed = {r.name for r, _ in moves if not _advancing(r, s.var)}
    loaded = {r.name for r, kind in moves if kind == "load"} & fixed
    # a tile stored but not written in the loop holds the same data in every iteration: no slots (it was written
    # before the loop, in slot 0, and storing it while the next iteration runs is no hazard)
    written = loaded | {a.target.name for x in body for a in ([x] if isinstance(x, ir.Assign) else x.body
                                                               if _compute_loop(x) else [])}
    stored = {r.name for r, kind in moves if kind == "store"} & fixed & written
    return {n: 3 if n in loaded and n in stored else 2 for n in loaded | stored}


def unwrap(s: ir.For, through: bool) -> tuple[list[ir.For], tuple]:
    """([one-trip loops], body): a loop body that is nested one-trip loops `for u in e..e + 1` (decoding a work
    unit's indices so that region starts stay affine), seen through them when `through`."""
    decode, body = [], s.body
    while through and len(body) == 1 and is_one_trip(body[0]):
        decode.append(body[0])
        body = body[0].body
    return decode, body


def is_one_trip(f) -> bool:
    return isinstance(f, ir.For) and f.step == 1 and isinstance(f.hi, ir.BinOp) and f.hi.op == "+" and \
        f.hi.lhs == f.lo and isinstance(f.hi.rhs, ir.Const) and f.hi.rhs.value == 1


class _Rewriter:
    def __init__(self, slots: dict[str, int], through: bool, chosen: set[int], fenced: set[int] = frozenset()):
        self.slots, self.through, self.chosen, self.fenced = slots, through, chosen, fenced

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            out.extend(self.stmt(s, {}))
        return tuple(out)

    def stmt(self, s, slot: dict) -> list:
        """`s` rewritten; `slot`: tile name -> slot expression of its references here (others: slot 0)."""
        if isinstance(s, ir.Alloc):
            k = self.slots.get(s.name, 1)
            if k == 1:
                return [s]
            shape = (k,) + tuple(s.type.shape)
            return [dataclasses.replace(s, type=dataclasses.replace(s.type, shape=shape), slots=k)]
        if isinstance(s, ir.For):
            if id(s) in self.chosen:
                return self.pipelined(s)
            return [dataclasses.replace(s, body=self.sub(s.body, slot))]
        if isinstance(s, ir.Parallel):
            return [dataclasses.replace(s, body=self.sub(s.body, slot))]
        if isinstance(s, ir.If):
            return [dataclasses.replace(s, then=self.sub(s.then, slot), orelse=self.sub(s.orelse, slot))]
        if isinstance(s, ir.Assign):
            return [ir.Assign(self.ref(s.target, slot), map_expr(s.value, lambda x: self.ref(x, slot)), loc=s.loc)]
        if isinstance(s, ir.Move):
            return [dataclasses.replace(s, dst=self.ref(s.dst, slot), src=self.ref(s.src, slot))]
        if isinstance(s, ir.XReduce):
            return [dataclasses.replace(s, target=self.ref(s.target, slot))]
        return [s]

    def sub(self, stmts, slot: dict) -> tuple:
        return tuple(y for x in stmts for y in self.stmt(x, slot))

    def ref(self, r, slot: dict):
        if not isinstance(r, ir.Ref) or self.slots.get(r.name, 1) == 1:
            return r
        return dataclasses.replace(r, index=(slot.get(r.name, ir.Const(0)),) + tuple(r.index))

    def pipelined(self, s: ir.For) -> list:
        v, T, loc = s.var, s.hi, s.loc
        decode, body = unwrap(s, self.through)
        loads = [x for x in body if isinstance(x, ir.Move) and x.kind in ("load", "copy")]
        computes = [x for x in body if isinstance(x, ir.Assign) or _compute_loop(x)]
        stores = [x for x in body if isinstance(x, ir.Move) and x.kind == "store"]
        depth = slot_depths(s, self.through)
        var = ir.Var(v)

        def at(it: ir.Expr) -> dict:
            """The loop variable and the decoding variables in iteration `it`."""
            env = {v: it}
            for f in decode:
                env[f.var] = substitute_vars(f.lo, env)
            return env

        def slots_of(which) -> dict:
            return {n: which(d) for n, d in depth.items()}

        def moves(ms, it: ir.Expr, which) -> tuple:
            env, slot = at(it), slots_of(which)
            out = []
            for m in ms:
                m = dataclasses.replace(m, dst=_subst_ref(m.dst, env), src=_subst_ref(m.src, env), async_=True)
                out.extend(self.stmt(m, slot))
            return tuple(out)

        def mod(e: ir.Expr, d: int) -> ir.Expr:
            return ir.Const(e.value % d) if isinstance(e, ir.Const) else ir.BinOp("%", e, ir.Const(d))

        def plus(e: ir.Expr, c: int) -> ir.Expr:
            if isinstance(e, ir.Const):
                return ir.Const(e.value + c)
            return ir.BinOp("+", e, ir.Const(c)) if c >= 0 else ir.BinOp("-", e, ir.Const(-c))
        zero = ir.Const(0)
        sync = ir.Sync(ir.ParLevel.core, loc=loc)
        first = ir.If(ir.BinOp("<", zero, T), moves(loads, zero, lambda d: zero), (), loc=loc)
        nxt = ir.If(ir.BinOp("<", plus(var, 1), T), moves(loads, plus(var, 1), lambda d: mod(plus(var, 1), d)), (),
                    loc=loc)
        prv = ir.If(ir.BinOp("<", zero, var), moves(stores, plus(var, -1),
                                                     lambda d: mod(plus(var, d - 1), d)), (), loc=loc)
        compute = self.sub(computes, slots_of(lambda d: mod(var, d)))
        for f in reversed(decode):   # the computes stay inside the unit's decoding loops
            compute = (dataclasses.replace(f, body=compute),)
        last_it = plus(T, -1)
        last = ir.If(ir.BinOp("<", zero, T), moves(stores, last_it, lambda d: mod(last_it, d)), (), loc=loc)
        loop = dataclasses.replace(s, body=(sync,) + ((nxt,) if loads else ()) + ((prv,) if stores else ()) + compute)
        fence = [sync] if id(s) in self.fenced else []   # (the first copies wait for the computes before the loop)
        return fence + ([first] if loads else []) + [loop, sync] + ([last, sync] if stores else [])


def _subst_ref(r: ir.Ref, env: dict) -> ir.Ref:
    def idx(i):
        if isinstance(i, ir.Slice):
            return dataclasses.replace(i, start=substitute_vars(i.start, env), stop=substitute_vars(i.stop, env))
        return substitute_vars(i, env)
    return dataclasses.replace(r, index=tuple(idx(i) for i in r.index))


def _load_copy(x, loaded: set, levels: dict) -> bool:
    """An on-chip copy from an @nram tile loaded earlier in the same body to an @nram tile or to @sram (a long
    scan keeping the chunk it loaded): it joins the load stage (issued async after the load, on the same IO pipe,
    so in order)."""
    return isinstance(x, ir.Move) and x.kind == "copy" and x.src.name in loaded and \
        levels.get(x.src.name) == ir.Level.nram and levels.get(x.dst.name) in (ir.Level.nram, ir.Level.sram)


def _sram_load(x, levels: dict) -> bool:
    """A copy from @sram into an @nram tile: the loop's load of a tile kept in SRAM (a long scan's second
    phase), pipelined as a load from GDRAM is."""
    return isinstance(x, ir.Move) and x.kind == "copy" and levels.get(x.src.name) == ir.Level.sram and \
        levels.get(x.dst.name) == ir.Level.nram


def _unit_copies(s: ir.For, through: bool, levels: dict) -> bool:
    """Whether loop `s` loads by `_unit_copy`: its first copy is issued async before the loop, so a compute that
    wrote the buffer just before must be waited for (a `sync @core` ahead of it)."""
    body = unwrap(s, through)[1]
    written = {x.dst.name for x in _flat(body) if isinstance(x, ir.Move)} | \
        {x.target.name for x in _flat(body) if isinstance(x, ir.Assign)}
    return any(_unit_copy(x, levels, written) for x in body)


def _unit_copy(x, levels: dict, written: set) -> bool:
    """A copy into an @nram tile from an @nram buffer the loop never writes (a unit's per-row operand loaded once
    before the loop, each tile's rows copied on chip: passes/schedule_mlu/tiles_stream.py): a load of the loop."""
    return isinstance(x, ir.Move) and x.kind == "copy" and levels.get(x.src.name) == ir.Level.nram and \
        levels.get(x.dst.name) == ir.Level.nram and x.src.name not in written


def _compute_loop(x) -> bool:
    """A loop of computes only (a scan's row steps): part of a pipelined loop's compute stage."""
    return isinstance(x, ir.For) and bool(x.body) and all(isinstance(y, ir.Assign) for y in x.body)


def _advancing(ref: ir.Ref, var: str) -> bool:
    """`ref`'s first index is a slice starting at c * var + ... with c at least its length, and no other index
    depends on `var`: the regions of different iterations are disjoint."""
    if not ref.index or not isinstance(ref.index[0], ir.Slice):
        return False
    a = to_affine(ref.index[0].start)
    if a is None or a.coeffs.get(var, 0) < slice_len(ref.index[0]):
        return False
    for i in ref.index[1:]:
        for part in ((i.start, i.stop) if isinstance(i, ir.Slice) else (i,)):
            b = to_affine(part)
            if b is None or b.coeffs.get(var, 0):
                return False
    return True


def slice_len(i: ir.Slice) -> int:
    n = slice_extent(i.start, i.stop)
    if n is None:
        raise GirError("slice length must be constant", i.loc)
    return n


def _is_mlu(k: ir.Kernel) -> bool:
    def levels(stmts):
        for s in stmts:
            if isinstance(s, ir.Parallel):
                yield s.level
                yield from levels(s.body)
    return any(lv.family == "mlu" for lv in levels(k.body))


def _count_pipelined(f: ir.Func) -> int:
    """Loops that issue async loads or stores (pipelined) in `f`'s kernels."""
    def count(stmts):
        n = 0
        for s in stmts:
            if isinstance(s, ir.For):
                n += any(isinstance(x, ir.If) and any(isinstance(m, ir.Move) and m.async_ for m in x.then)
                         for x in s.body) + count(s.body)
            elif isinstance(s, (ir.Parallel,)):
                n += count(s.body)
            elif isinstance(s, ir.If):
                n += count(s.then + s.orelse)
        return n
    return sum(count(k.body) for k in f.kernels)
