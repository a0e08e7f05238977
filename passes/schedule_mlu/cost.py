"""The MLU cost model: a static estimate of an explicit MLU function's time on a machine description.

The search over MLU recipes (recipes.py) and the choice between a whole-function schedule and the IDFG's groups
(passes/middle/search/mlu_groups.py) rank candidates by this estimate, as the GPU search ranks its recipes by
passes/schedule/cost.py. It reads only the explicit GIR and the machine description (passes/machines/mlu370.json),
mirroring the simulator's timing model (targets/mlu/timing.py) at the level of instructions:

* every task (each point of the kernel's `@cluster` / `@core` parallel loops) is walked with its index bound,
  loops multiply their bodies by their trip counts (a body whose cost depends on the loop variable -- a tail tile,
  a prologue condition, a short last work unit -- counts its first and last iterations once and its middle one
  for the others), `if`s whose conditions are index expressions take their branch; a compute or a move is
  evaluated once per value of the index variables its regions' extents depend on, not per place (`extent_vars`);
* a DMA costs its latency (GDRAM, SRAM or on-core move) plus its bytes at the task's share of bandwidth: GDRAM
  traffic counted as the simulator counts it (both sides of a GDRAM-to-GDRAM copy), every `dma_granularity`
  granule a segment touches plus a granule read again per partially written one, segments that repeat with
  strides off the granule grid averaged over the offsets they start at (`cost_regions.gdram_bytes`), at
  min(core DMA port, GDRAM bandwidth / busy tasks);
* a compute statement costs what codegen/mlu/vecops.py emits for it: one vector op per operation of its
  expression (`vector_op_cycles` plus 128-byte units x the class's cycles: simple, div, special, reduce,
  convert -- the classes of workcount.py) over the emitter's length (a whole padded tile from row 0, rows at an
  offset rounded to whole units), one op per row where a full tile meets an [R, 1] operand, before a reduction
  over padded columns a select per row of the units holding the pads or a fill and a select of the tile
  (layout.tail_start); scalar code (single elements, an [R, 1] vector summed into one
  element) costs `scalar_cycles` per statement and `scalar_access_cycles` per element access on the control
  thread, and every instruction one statement to issue;
* `sync @cluster` and all-core syncs cost their barrier cycles;
* a task's time is max(IO, compute + scalar) when the kernel's loops can overlap loads with compute (the
  software-pipeline pass runs after the schedule) and the sum otherwise: a pipelined loop of n trips, a trip
  loading for L cycles, storing to GDRAM for S and computing for W, takes the steps swpipe.py emits, each ending
  at a sync: L + max(L, W) + (n - 2) max(L + S, W) + max(S, W) + S (n (L + S) when IO-bound, n W + L + S when
  compute-bound); a kernel takes its slowest task.

It is an estimate for ranking: differences of a few percent are noise (the ranking policy's tie), large ones (a
kernel that runs on one core of 32, one vector op per row instead of per tile, a slab read twice) are what it
must see.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from gir import ir
from gir.affine import free_vars
from gir.walk import stmt_exprs, walk, walk_stmts
from gir.passes.machines import MLU370, MluMachine
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.cost_regions import (extent_vars, extents, gdram_bytes, int_value, onchip_run,
                                                  tasks_of, truth)
from gir.passes.schedule_mlu.swpipe import choose_loops
from gir.passes.schedule_mlu.cost_vector import Vec, ops as vector_ops
from gir.passes.schedule_mlu.exactdiv import in_exact_scope, is_exact
from gir.passes.middle.search.ranking import policy

MLU_RANKING = policy("mlu")   # estimates closer than its tie are ties, the earlier candidate wins (ranking.json)


@dataclass
class TaskCost:
    io: float = 0.0          # cycles of the IO pipe, GDRAM bytes not included (see `pipes`)
    compute: float = 0.0     # cycles of the compute pipe
    scalar: float = 0.0      # cycles of the control thread
    gdram: float = 0.0       # GDRAM bytes moved
    time: float = 0.0        # cycles of the task, pipes overlapped where the loops let them
    out_io: float = 0.0      # of `io`, the cycles of stores to GDRAM (the software pipeline's last stage)
    out_gdram: float = 0.0   # of `gdram`, the bytes stored

    def pipes(self, gdram_rate: float) -> tuple[float, float]:
        """(IO cycles, compute + scalar cycles) with the GDRAM bytes at `gdram_rate` bytes per cycle."""
        return self.io + self.gdram / gdram_rate, self.compute + self.scalar

    def add(self, other: "TaskCost", k: float = 1.0) -> None:
        self.io += k * other.io
        self.compute += k * other.compute
        self.scalar += k * other.scalar
        self.gdram += k * other.gdram
        self.time += k * other.time
        self.out_io += k * other.out_io
        self.out_gdram += k * other.out_gdram


@dataclass
class KernelCost:
    name: str
    seconds: float
    tasks: int
    busy_tasks: int
    io: float                # cycles of the slowest task's pipes
    compute: float
    scalar: float
    gdram: float             # bytes, all tasks


@dataclass
class Estimate:
    seconds: float
    gdram_bytes: float
    kernels: list[KernelCost] = field(default_factory=list)

    def text(self) -> str:
        return (f"{self.seconds * 1e6:.1f} us estimated ({len(self.kernels)} kernel(s), "
                f"{self.gdram_bytes / 1e6:.1f} MB of GDRAM traffic)")


def estimate(func: ir.Func, machine: MluMachine = MLU370, overlap: bool = True) -> Estimate:
    """The estimated time of every kernel of the explicit MLU function `func` (sizes specialised), in order."""
    types = {p.name: (p.type, ir.Level.gdram) for p in func.params + func.results}
    for item in func.body:
        if isinstance(item, ir.Alloc):
            types[item.name] = (item.type, item.level)
    kernels = [_cached_kernel(k, types, machine, overlap) for k in func.body if isinstance(k, ir.Kernel)]
    return Estimate(sum(k.seconds for k in kernels), sum(k.gdram for k in kernels), kernels)


_SEEN: dict = {}     # (kernel renamed '', the types of the tensors it names, machine, overlap) -> KernelCost
_SEEN_MAX = 2048


def _cached_kernel(k: ir.Kernel, types: dict, m: MluMachine, overlap: bool) -> KernelCost:
    """`_kernel`, memoised on the kernel's text and the types of what it names: the search estimates one kernel
    several times (a segment's chosen schedule, the whole function against the IDFG's groups), under other names."""
    names = {x.name for s in walk_stmts(k.body) for e in stmt_exprs(s) for x in walk(e) if isinstance(x, ir.Ref)}
    key = (dataclasses.replace(k, name=""), tuple(sorted((n, types[n]) for n in names if n in types)), m, overlap,
           in_exact_scope())
    try:
        got = _SEEN.get(key)
    except TypeError:   # (an unhashable attribute: not memoised)
        return _kernel(k, dict(types), m, overlap)
    if got is None:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        got = _SEEN[key] = _kernel(k, dict(types), m, overlap)
    return dataclasses.replace(got, name=k.name)


def _kernel(k: ir.Kernel, types: dict, m: MluMachine, overlap: bool) -> KernelCost:
    from gir.passes.schedule_mlu.staging import stage_kernel
    # the loops the software-pipeline pass pipelines (its own choice), found again after the moves the
    # dense-staging pass will stage (it runs after pipelining; its choice does not depend on it)
    piped = _loop_paths(k.body, choose_loops(k)[0])
    k = stage_kernel(k, {n: t for n, (t, level) in types.items() if level.off_chip}, m)
    piped = {id(loop) for loop, path in _loops(k.body) if path in piped}
    # (kernels of a function that divides exactly are marked when its schedule is done: while it is scheduled,
    # its scope says so)
    exact = is_exact(k) or in_exact_scope()
    tasks: list[tuple[dict, tuple]] = []
    tasks_of(k.body, {}, tasks)
    n = max(1, len(tasks))
    for a in walk_stmts(k.body):
        if isinstance(a, ir.Alloc):
            types[a.name] = (a.type, a.level)
    # two walks: the first measures how many tasks share the GDRAM bandwidth (each capped by its core's DMA
    # port): the bytes of all tasks over those of the busiest (32 tasks with equal shares: 32; one task with all
    # the bytes: 1; a tail of units -- 20 tasks with 3, 12 with 2 -- 28: the tasks with more units get more
    # bandwidth once the others are done); the second times every task at that share (not needed when the
    # first walk's share, all tasks, was right)
    movers, memo, names = n, {}, ({}, {}, [])
    for _ in range(2):
        share = movers
        rate = min(m.bytes_per_cycle(m.core_dma_bandwidth), m.bytes_per_cycle(m.gdram_bandwidth) / share)
        walker = _Walker(types, m, rate, overlap, dict(k.attrs).get("pipeline") == "units",
                         dict(k.attrs).get("layout") == "dense", memo, names, exact, piped)
        costs = []
        for env, body in tasks:
            c = TaskCost()
            walker.block(body, env, c)
            costs.append(c)
        movers = max(1.0, sum(c.gdram for c in costs) / max(1.0, max((c.gdram for c in costs), default=1.0)))
        if abs(movers - share) < 1e-9 * share:
            break
    times = [c.time for c in costs] or [0.0]
    slow = costs[times.index(max(times))] if costs else TaskCost()
    # busy: the tasks that move GDRAM bytes (every task may build constant vectors -- an iota, a column mask --
    # before its loop; that is not work); the tasks that take any time when none moves any
    busy = sum(1 for c in costs if c.gdram > 0) or sum(1 for c in costs if c.time > 0)
    return KernelCost(k.name, max(times) / m.clock_hz, n, busy, slow.pipes(rate)[0], slow.compute, slow.scalar,
                      sum(c.gdram for c in costs))


def _loops(body, path: tuple = ()):
    """(loop, path) of every loop and parallel level of `body`, the path its place among the control statements
    (loops, parallel levels, ifs and their branches): the same in a kernel whose moves are staged."""
    k = 0
    for s in body:
        if isinstance(s, (ir.For, ir.Parallel)):
            yield s, path + (k,)
            yield from _loops(s.body, path + (k,))
        elif isinstance(s, ir.If):
            yield from _loops(s.then, path + (k, 0))
            yield from _loops(s.orelse, path + (k, 1))
        else:
            continue
        k += 1


def _loop_paths(body, ids: set[int]) -> set[tuple]:
    return {path for loop, path in _loops(body) if id(loop) in ids}


class _Walker:
    def __init__(self, types: dict, m: MluMachine, rate: float, overlap: bool, through: bool, dense: bool,
                 memo: dict | None = None, names: tuple | None = None, exact: bool = False,
                 piped: set[int] = frozenset()):
        # through: a `pipeline=units` kernel, whose work-unit loop is pipelined through the one-trip loops that
        # decode a unit's indices (swpipe.py)
        self.types, self.m, self.rate, self.overlap, self.through = types, m, rate, overlap, through
        self.dense = dense   # `layout=dense`: 2-D tiles unpadded (pitch = columns)
        self.exact = exact   # `division=exact`: no division as a multiply by a reciprocal (exactdiv.py)
        self.piped = piped   # id() of the loops the software-pipeline pass pipelines (swpipe.py `choose_loops`)
        self.env: dict = {}
        self.leaf_memo: dict = memo if memo is not None else {}   # shared by a kernel's two walks
        # the index variables of loops and leaves, by statement id, and the statements they name (kept alive: ids
        # stay unique); shared by a kernel's two walks too
        self.memo, self.leaf_vars, self.keep = names if names is not None else ({}, {}, [])

    def block(self, body, env: dict, c: TaskCost) -> None:
        for s in body:
            if isinstance(s, ir.Alloc):
                continue
            if isinstance(s, (ir.Assign, ir.Move)):   # leaves: their cost depends only on the indices they use
                self.leaf(s, env, c)
            else:
                getattr(self, "stmt_" + type(s).__name__, self.stmt_other)(s, env, c)

    def leaf(self, s, env: dict, c: TaskCost) -> None:
        """A compute or a move, memoised on the values of the index variables its regions' extents depend on:
        its cost depends on nothing else (GDRAM bytes are averaged over where a segment starts, a vector op's
        length is its region's; a slice `a .. a + 8` is 8 elements wherever a is), so one evaluation serves the
        tasks and iterations that only move a region about."""
        names = self._leaf_names(s)
        key = (id(s), tuple(map(env.get, names)), self.rate if type(s) is ir.Move else None)
        got = self.leaf_memo.get(key)
        if got is None:
            got = TaskCost()
            getattr(self, "stmt_" + type(s).__name__)(s, env, got)
            self.leaf_memo[key] = got
        c.add(got)

    def stmt_other(self, s, env, c) -> None:   # Alloc and anything that costs nothing
        pass

    def stmt_Kernel(self, s, env, c) -> None:
        self.block(s.body, env, c)

    def stmt_Parallel(self, s, env, c) -> None:   # inner parallel levels: walked like loops
        self._loop(ir.For(s.var, s.lo, s.hi, s.body), env, c)   # (not memoised: the For is a temporary)

    def stmt_For(self, s: ir.For, env, c) -> None:
        """A loop, memoised like a leaf on the values of the outer index variables it mentions (the tile loops of
        a unit kernel's tasks mostly differ only in the unit loop around them)."""
        names = self._outer_vars(s)
        key = ("for", id(s), tuple(map(env.get, names)), self.rate)
        got = self.leaf_memo.get(key)
        if got is None:
            got = TaskCost()
            self._loop(s, env, got)
            self.leaf_memo[key] = got
        c.add(got)

    def _outer_vars(self, s: ir.For) -> tuple:
        key = ("outer", id(s))
        if key not in self.memo:
            names = (self._vars(s) | free_vars(s.lo) | free_vars(s.hi)) - {s.var}
            self.memo[key] = (s, tuple(sorted(names)))
        return self.memo[key][1]

    def _loop(self, s: ir.For, env, c) -> None:
        lo, hi = int_value(s.lo, env), int_value(s.hi, env)
        if lo is None or hi is None:
            return
        trips = max(0, -(-(hi - lo) // s.step))
        if trips == 0:
            return
        depends = s.var in self._vars(s)
        first = TaskCost()
        self.block(s.body, {**env, s.var: lo}, first)
        body = first
        if depends and trips > 1:
            # the first, the last and (from three trips) the middle iteration stand for the others: exact where
            # the cost varies linearly with the variable (a triangle) and where only the last iteration differs
            # (a tail: a short work unit), which the mean of the first and the last took for half the trips
            last = TaskCost()
            self.block(s.body, {**env, s.var: lo + (trips - 1) * s.step}, last)
            body = TaskCost()
            body.add(first, 1.0 / trips)
            body.add(last, 1.0 / trips)
            if trips > 2:
                mid = TaskCost()
                self.block(s.body, {**env, s.var: lo + (trips // 2) * s.step}, mid)
                body.add(mid, (trips - 2) / trips)
        time = body.time * trips
        if self.overlap and trips > 1 and id(s) in self.piped:
            # the software-pipeline pass overlaps iteration v's compute with v + 1's loads and v - 1's stores
            io, work = body.pipes(self.rate)
            store = body.out_io + body.out_gdram / self.rate
            load = io - store
            # iteration 0's load; then steps of v + 1's load and v - 1's store beside v's compute (the first
            # without a store, the last without a load; each step ends at a sync); then the last store
            time = load + max(load, work) + (trips - 2) * max(io, work) + max(store, work) + store
        c.add(body, trips)
        c.time += time - body.time * trips

    def _vars(self, s: ir.For) -> set[str]:
        """The index variables the cost of the loop's body depends on: its loops' bounds, its conditions and the
        extents of its regions (`extent_vars`), not where the regions lie."""
        key = id(s)
        if key not in self.memo:
            names: set[str] = set()
            for x in walk_stmts(s.body):
                if isinstance(x, (ir.Assign, ir.Move)):
                    names.update(self._leaf_names(x))
                elif isinstance(x, (ir.For, ir.Parallel)):
                    names |= free_vars(x.lo) | free_vars(x.hi)
                elif isinstance(x, ir.If):
                    names |= free_vars(x.cond)
            self.memo[key] = (s, names)
        return self.memo[key][1]

    def _leaf_names(self, s) -> tuple:
        """`extent_vars` of a compute or a move, sorted, once per statement."""
        names = self.leaf_vars.get(id(s))
        if names is None:
            names = tuple(sorted(extent_vars(s)))
            self.leaf_vars[id(s)] = names
            self.keep.append(s)   # (ids stay unique while the walker lives)
        return names

    def stmt_If(self, s: ir.If, env, c) -> None:
        taken = truth(s.cond, env)
        if taken is None:   # a data-dependent condition: the costlier branch
            a, b = TaskCost(), TaskCost()
            self.block(s.then, env, a)
            self.block(s.orelse, env, b)
            c.add(a if a.time >= b.time else b)
        else:
            self.block(s.then if taken else s.orelse, env, c)

    def stmt_Sync(self, s: ir.Sync, env, c) -> None:
        cycles = 0.0 if s.level == ir.ParLevel.core else \
            self.m.sync_cluster_cycles if s.level == ir.ParLevel.cluster else self.m.sync_all_cycles
        c.scalar += cycles
        c.time += cycles

    def stmt_Move(self, s: ir.Move, env, c) -> None:
        m = self.m
        (_, dlevel), (st, slevel) = self.types[s.dst.name], self.types[s.src.name]
        counts = extents(s.src, st, env)
        elems = math.prod(counts)
        if elems <= 0:
            return
        nbytes = elems * st.dtype.nbytes
        if dlevel.off_chip or slevel.off_chip:
            g = m.dma_granularity
            if dlevel.off_chip and slevel.off_chip:   # GDRAM to GDRAM: the bytes read and the bytes written
                moved = gdram_bytes(s.src, self.types, env, g, write=False) + \
                    gdram_bytes(s.dst, self.types, env, g, write=True)
            else:
                chip = s.src if dlevel.off_chip else s.dst
                moved = gdram_bytes(s.dst if dlevel.off_chip else s.src, self.types, env, g, write=dlevel.off_chip,
                                    run=onchip_run(chip, self.types[chip.name][0], self.dense, env))
            cycles = m.gdram_latency_cycles
            c.gdram += moved
            c.time += moved / self.rate
            if dlevel.off_chip:
                c.out_io += cycles
                c.out_gdram += moved
        elif ir.Level.sram in (dlevel, slevel):
            cycles = m.sram_latency_cycles + nbytes / m.bytes_per_cycle(m.sram_bandwidth / m.cores_per_cluster)
        else:
            cycles = m.move_latency_cycles + nbytes / m.bytes_per_cycle(m.nram_move_bandwidth)
        c.io += cycles
        c.time += cycles

    def stmt_Assign(self, s: ir.Assign, env, c) -> None:
        t, level = self.types.get(s.target.name, (None, None))
        if t is None:
            return
        if level != ir.Level.nram:   # scalar code on single elements
            c.scalar += self.m.scalar_cycles
            c.time += self.m.scalar_cycles
            return
        self.env = env
        dst = self.vector(s.target)
        m = self.m
        refs = sum(1 for x in walk(s.value) if isinstance(x, ir.Ref)) + 1
        leaves = [x for x in walk(s.value) if isinstance(x, ir.Ref) and x.name in self.types]
        single = all(math.prod(extents(x, self.types[x.name][0], env)) == 1 for x in leaves + [s.target])
        if (dst.kind == "scalar" and all(self.vector(x).kind == "scalar" for x in leaves)) or \
                (self.through and single):   # (single elements of vectors in `pipeline=units` kernels: emit.py)
            # scalar code on single elements: a statement and its element accesses on the control thread
            cycles = m.scalar_cycles + refs * m.scalar_access_cycles
            c.scalar += cycles
            c.time += cycles
            return
        ops: list[tuple[str, int, int]] = []
        vector_ops(s.value, dst, self, env, ops)
        nbytes = t.dtype.nbytes
        for cls, n, per in ops:
            if cls == "scalar-loop":   # an [R, 1] row vector summed into one element: a scalar loop of n rows
                cycles = n * (2 * m.scalar_cycles + 3 * m.scalar_access_cycles)
                c.scalar += cycles
                c.time += cycles
                continue
            if n <= 1:
                c.scalar += m.scalar_cycles
                c.time += m.scalar_cycles
                continue
            units = math.ceil(n // per * nbytes / m.vector_unit_bytes)
            cycles = per * (m.vector_op_cycles + units * m.op_class_cycles(cls))
            # issuing: one statement per instruction; per row also the loop and the row's element read
            issue = per * m.scalar_cycles + (per - 1) * (m.scalar_cycles + m.scalar_access_cycles)
            c.compute += cycles
            c.scalar += issue
            c.time += cycles

    def vector(self, r: ir.Ref) -> "Vec":
        """The vector operand the emitter makes of an @nram region (codegen/mlu/emit.py `opd`): its kind and the
        elements its instructions cover (whole padded tiles from row 0; a region of rows at an offset)."""
        t = self.types[r.name][0]
        shape, index = tuple(t.shape), tuple(r.index)
        if len(shape) == 3 or (len(shape) == 2 and len(index) == 3):   # a slotted tile: the slot index goes
            shape, index = shape[1:], index[1:]
        ext = extents(ir.Ref(r.name, index), ir.TensorType(t.dtype, shape), {**self.env})
        dt = t.dtype.value
        if len(shape) == 2 and shape[1] == 1:
            return Vec("row", L.phys_elems(shape), ext[0], 1, 1)
        if len(shape) == 1:
            return Vec("col" if shape[0] > 1 else "scalar", L.phys_elems(shape) if shape[0] > 1 else 1, 1,
                        shape[0], ext[0] if ext else 1, bool(ext) and ext[0] == shape[0], dt)
        if len(shape) != 2:
            return Vec("scalar", 1, 1, 1, 1)
        pitch = shape[1] if self.dense else L.pitch(shape)
        start = index[0].start if isinstance(index[0], ir.Slice) else index[0]
        if isinstance(index[0], ir.Slice) and not free_vars(start) and int_value(start, {}) == 0:   # (as the emitter
            # reads it: a start of constant 0, not one that is 0 in this iteration)
            n = L.round_up(shape[0] * shape[1], L.PITCH) if self.dense else L.phys_elems(shape)
        else:
            n = L.round_up(ext[0] * pitch, 32 if L.device_nbytes(t.dtype) == 4 else L.PITCH)
        cols = ext[1] if len(ext) > 1 else 1
        return Vec("full", n, ext[0], pitch, cols, cols == shape[1], dt)

    def stmt_XReduce(self, s: ir.XReduce, env, c) -> None:
        c.scalar += self.m.sync_cluster_cycles
        c.time += self.m.sync_cluster_cycles
