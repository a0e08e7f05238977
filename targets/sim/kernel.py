"""Execution of one kernel: every statement runs for all instances of its parallel scopes at once.

Instances are laid out rectangularly: the block grid (outermost scopes, flattened) is depth 0 and each nested
parallel scope multiplies the instance count by its (largest) extent; instances outside a ragged bound or off
the taken side of a branch are masked inactive. Blocks are processed in chunks; barriers are intra-block, so
chunking is exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gir import ir
from gir.affine import free_vars
from gir.chain import per_thread, stride_coeffs
from gir.errors import GirError
from gir.scan import identity
from gir.targets.sim.races import Tracker
from gir.targets.sim.stats import KernelStats, count_sectors
from gir.targets.sim.values import IDENTITY, Buf, Region, Values, fit

CHUNK_INSTANCES = 1 << 18
SHARED_LEVELS = (ir.Level.shared, ir.Level.sram)
BARRIERS = (ir.ParLevel.block, ir.ParLevel.cluster)


@dataclass
class Frame:
    n: int                 # instances at this depth (in the chunk)
    exists: np.ndarray     # (n,) instances that entered the scope


def fill_value(dtype: ir.DType):
    if dtype.is_float:
        return np.nan
    return False if dtype == ir.DType.bool else np.iinfo(dtype.numpy).min


class KernelExec(Values):
    def __init__(self, runner, kernel: ir.Kernel):
        self.runner = runner
        self.kernel = kernel
        self.stats = KernelStats()
        self.races: list = []
        self.slice_cache: dict = {}
        self.family = "gpu"
        self.ws = runner.warp_size
        self.chains: dict = {}   # chain statement -> {other grid coordinates: (next block, combined aggregates)}

    # ------------------------------------------------------------- driver
    def run(self) -> KernelStats:
        for top in self.kernel.body:
            if not isinstance(top, ir.Parallel):
                raise GirError("a kernel body must consist of parallel scopes", getattr(top, "loc", None))
            self.run_grid(top)
        return self.stats

    def run_grid(self, top: ir.Parallel) -> None:
        self.family = top.level.family
        self.ws = self.runner.warp_size if self.family == "gpu" else 1
        self.env = dict(self.runner.sizes)
        self.sel, self.n_act, self.frames, self._ids = None, 1, [Frame(1, np.ones(1, bool))], None
        self.grid, body = [], (top,)
        while len(body) == 1 and isinstance(body[0], ir.Parallel) and body[0].level == top.level:
            p = body[0]
            lo, hi = self.ival(p.lo), self.ival(p.hi)
            if isinstance(lo, np.ndarray) or isinstance(hi, np.ndarray):
                raise GirError("the simulator needs grid bounds that depend only on sizes", p.loc)
            self.grid.append((p.var, lo, max(0, hi - lo)))
            body = p.body
        nblocks = int(np.prod([g[2] for g in self.grid]))
        per_block = max(1, _static_instances(body, self))
        self.stride = 1 << max(0, (per_block - 1).bit_length())
        id_dtype = np.int32 if nblocks * self.stride < 2 ** 31 else np.int64
        self.trackers = {}
        if self.runner.check_races:
            for name in _written_globals(body) & set(self.runner.globals):
                buf = self.runner.globals[name]
                buf.tracker = Tracker(name, buf.size, self.stride, id_dtype=id_dtype)
        chunk = max(1, CHUNK_INSTANCES // per_block)
        try:
            for c0 in range(0, nblocks, chunk):
                self.run_chunk(body, c0, min(nblocks, c0 + chunk))
        finally:
            for buf in self.runner.globals.values():
                buf.tracker = None
        self.stats.blocks += nblocks

    def run_chunk(self, body, c0: int, c1: int) -> None:
        n0 = c1 - c0
        self.block_base = c0
        lin = np.arange(c0, c1, dtype=np.int64)
        self.env = dict(self.runner.sizes)
        self.env.update(self.decode_grid(lin))
        self.frames = [Frame(n0, np.ones(n0, bool))]
        self.active = np.ones(n0, bool)
        self.buffers = dict(self.runner.globals)
        self.var_depth: dict[str, int] = {}
        self.epoch = np.zeros(n0, np.int32)
        self.exec_body(body)

    def decode_grid(self, lin):
        out, inner = {}, 1
        for var, lo, ext in reversed(self.grid):
            out[var] = lo + (lin // inner) % ext
            inner *= ext
        return out

    # ----------------------------------------------------------- instances
    def prepare(self) -> None:
        self.sel = None if self.active.all() else np.flatnonzero(self.active)
        self.n_act = self.frames[-1].n if self.sel is None else len(self.sel)
        self._ids = None

    def instances(self) -> np.ndarray:
        return np.arange(self.frames[-1].n) if self.sel is None else self.sel

    def per_block(self, depth: int = -1) -> int:
        return self.frames[depth].n // self.frames[0].n

    def owner_rows(self, depth: int) -> np.ndarray:
        return self.instances() // (self.frames[-1].n // self.frames[depth].n)

    def ids(self):
        """(block row, thread id in block, unique instance id) of the active instances (cached)."""
        if self._ids is None:
            inst, per = self.instances(), self.per_block()
            brow, tid = inst // per, inst % per
            self._ids = (brow, tid, (self.block_base + brow) * self.stride + tid)
        return self._ids

    def describe(self, row: int) -> str:
        inst = int(self.instances()[row])
        per = self.per_block()
        names = [f"{v}={int(self.env[v][inst])}" for v in self.var_depth if self.var_depth[v] < len(self.frames)]
        return f"{self.block_desc(self.block_base + inst // per)}, thread {inst % per}" + (
            f" ({', '.join(names)})" if names else "")

    def block_desc(self, lin: int) -> str:
        coords = self.decode_grid(np.array([lin]))
        return "block " + ", ".join(f"{v}={int(coords[v][0])}" for v, _, _ in self.grid)

    # ----------------------------------------------------------- statements
    def exec_body(self, stmts) -> None:
        saved = dict(self.buffers)
        for s in stmts:
            if not self.active.any():
                break
            getattr(self, "_" + type(s).__name__.lower())(s)
        self.buffers = saved

    def _alloc(self, s: ir.Alloc) -> None:
        if s.level.off_chip:
            raise GirError("global buffers are allocated at function level", s.loc)
        shape = tuple(int(d) for d in s.type.shape)
        rows = self.frames[-1].n
        data = np.full((rows,) + shape, fill_value(s.type.dtype), dtype=s.type.dtype.numpy)
        buf = Buf(s.name, s.type.dtype, shape, s.level, len(self.frames) - 1, data)
        if self.runner.check_races and s.level in SHARED_LEVELS:
            buf.tracker = Tracker(s.name, data.size, self.stride, per_block_size=buf.size)
        self.buffers[s.name] = buf

    def _parallel(self, s: ir.Parallel) -> None:
        self.prepare()
        n = self.frames[-1].n
        lo, hi = self.ival(s.lo), self.ival(s.hi)
        lo_f, ext_f = np.zeros(n, np.int64), np.zeros(n, np.int64)
        idx = self.instances()
        lo_f[idx], ext_f[idx] = lo, np.asarray(hi) - np.asarray(lo)
        ext = int(ext_f[idx].max(initial=0))
        if ext <= 0:
            return
        if self.per_block() * ext > self.stride:
            raise GirError(f"{self.per_block() * ext} instances per block exceed the simulator's static "
                           f"estimate {self.stride}; use bounds that depend only on sizes", s.loc)
        saved = (self.env, self.active, self.frames, self.var_depth)
        k = np.tile(np.arange(ext, dtype=np.int64), n)
        self.env = {v: (np.repeat(x, ext) if isinstance(x, np.ndarray) else x) for v, x in self.env.items()}
        self.env[s.var] = np.repeat(lo_f, ext) + k
        exists = np.repeat(self.active, ext) & (k < np.repeat(ext_f, ext))
        self.frames = self.frames + [Frame(n * ext, exists)]
        self.var_depth = {**self.var_depth, s.var: len(self.frames) - 1}
        self.active = exists
        try:
            self.exec_body(s.body)
        finally:
            self.env, self.active, self.frames, self.var_depth = saved

    def _for(self, s: ir.For) -> None:
        self.prepare()
        lo, hi = self.ival(s.lo), self.ival(s.hi)
        saved, saved_depth = self.active, self.var_depth
        try:
            if not isinstance(lo, np.ndarray) and not isinstance(hi, np.ndarray):
                for v in range(int(lo), int(hi), s.step):
                    self.env[s.var] = v
                    self.exec_body(s.body)
                return
            n, idx = self.frames[-1].n, self.instances()
            lo = np.broadcast_to(lo, idx.shape)
            trips = np.maximum(0, -(-(np.asarray(hi) - lo) // s.step))
            var = np.zeros(n, np.int64)
            self.var_depth = {**self.var_depth, s.var: len(self.frames) - 1}  # differs between instances
            for t in range(int(trips.max(initial=0))):
                var[idx] = lo + t * s.step
                self.env[s.var] = var.copy()
                self.active = np.zeros(n, bool)
                self.active[idx] = t < trips
                self.exec_body(s.body)
        finally:
            self.active, self.var_depth = saved, saved_depth
            self.env.pop(s.var, None)

    def _if(self, s: ir.If) -> None:
        self.prepare()
        cond = self.ival(s.cond)
        saved = self.active
        if isinstance(cond, np.ndarray) and cond.ndim:
            taken = np.zeros_like(saved)
            taken[self.instances()] = cond
            branches = ((s.then, saved & taken), (s.orelse, saved & ~taken))
        else:
            branches = ((s.then if cond else s.orelse, saved),)
        try:
            for body, mask in branches:
                if body and mask.any():
                    self.active = mask
                    self.exec_body(body)
        finally:
            self.active = saved

    def _sync(self, s: ir.Sync) -> None:
        istats = self.runner.instr_stats(self.kernel, s, "sync", "")
        if s.level not in BARRIERS:
            return
        n0 = self.frames[0].n
        act = self.active.reshape(n0, -1)
        ex = self.frames[-1].exists.reshape(n0, -1)
        reached, missing = act.any(1), (ex & ~act).any(1)
        bad = np.flatnonzero(reached & missing)
        if bad.size:
            b = int(bad[0])
            t_in, t_out = int(np.argmax(act[b])), int(np.argmax(ex[b] & ~act[b]))
            raise GirError(f"barrier divergence: sync @{s.level.value} is reached by some threads of a block "
                           "but not by others", s.loc,
                           [f"{self.block_desc(self.block_base + b)}: thread {t_in} reaches it, thread {t_out} "
                            "does not", "barriers must be under block-uniform control flow"])
        self.epoch[reached] += 1
        count = int(reached.sum())
        self.stats.barriers += count
        istats.executions += count

    def _xreduce(self, s: ir.XReduce) -> None:
        self.prepare()
        reg = self.region(s.target)
        vals = np.asarray(self.read(reg)).reshape(self.n_act, reg.k)
        work = np.float32 if reg.buf.dtype.is_float and reg.buf.dtype != ir.DType.f64 else np.float64
        n = self.frames[-1].n
        full = np.full((n, reg.k), IDENTITY[s.op], dtype=work)
        full[self.instances()] = vals
        dv = self.var_depth.get(s.var)
        if dv is None:
            raise GirError(f"allreduce over '{s.var}', which is not an enclosing @lane/@thread variable", s.loc)
        outer, ext = self.frames[dv - 1].n, self.frames[dv].n // self.frames[dv - 1].n
        inner = n // self.frames[dv].n
        width = s.width or ext
        groups = -(-ext // width)
        x = full.reshape(outer, ext, inner, reg.k)
        if groups * width != ext:
            pad = np.full((outer, groups * width - ext, inner, reg.k), IDENTITY[s.op], dtype=work)
            x = np.concatenate([x, pad], axis=1)
        x = x.reshape(outer, groups, width, inner, reg.k)
        red = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}[s.op](x, axis=2, keepdims=True)
        red = np.broadcast_to(red, x.shape).reshape(outer, groups * width, inner, reg.k)[:, :ext]
        self.write(reg, red.reshape(n, reg.k)[self.instances()].reshape((self.n_act,) + reg.rshape))
        self.runner.instr_stats(self.kernel, s, "allreduce", "").executions += self.n_act // max(1, width)

    def _chain(self, s: ir.Chain) -> None:
        """The blocks of a chain reach it in order of the chain variable (chunks run in order of the linear block
        index; within a chunk they are sorted): each participant (the block, or each thread when the status index
        uses a thread variable) gets the combination of its chain's earlier operands, in the value's type. A chain
        is named by its status offset less the variable's term. One status word written per participant and,
        after the first block, one read (the look-back's predecessor)."""
        self.prepare()
        n0 = self.frames[0].n
        act, ex = self.active.reshape(n0, -1), self.frames[-1].exists.reshape(n0, -1)
        per_block = not per_thread(s, [v for v, d in self.var_depth.items() if d >= 1])
        if per_block and (act.any(1) & (ex & ~act).any(1)).any():
            raise GirError("chain divergence: the chain is reached by some threads of a block but not by others",
                           s.loc, ["a chain must be under block-uniform control flow"])
        inst = self.instances()
        brow = inst // self.per_block()
        src = self.region(s.src)
        vals = np.asarray(self.read(src)).reshape(self.n_act, -1)[:, 0]
        off = np.asarray(self.region(s.status).off).reshape(self.n_act, -1)[:, 0]
        g = np.broadcast_to(self.env[s.var], (self.frames[-1].n,))[inst]
        key = off - g * self._chain_stride(s)
        if per_block:   # one chain per block: its first thread speaks for it
            rows, first = np.unique(brow, return_index=True)
            if not np.array_equal(vals, vals[first][np.searchsorted(rows, brow)], equal_nan=True):
                raise GirError("the chain's operand differs between the threads of a block", s.loc)
            pick = first
        else:
            pick = np.arange(self.n_act)
        dt = src.buf.dtype
        ident = dt.numpy.type(identity(f"cum{s.op}", dt.is_float, dt.numpy))
        ufunc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[s.op]   # NaN wins
        order = np.lexsort((g[pick], key[pick]))
        ks, gs, vs = key[pick][order], g[pick][order], vals[pick][order].astype(dt.numpy)
        cut = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1], True])
        out = np.empty(len(order), dt.numpy)
        state = self.chains.setdefault(id(s), {})
        with np.errstate(over="ignore", invalid="ignore"):
            for a, b in zip(cut[:-1], cut[1:]):
                nxt, acc = state.get(int(ks[a]), (0, ident))
                bad = np.flatnonzero(gs[a:b] != np.arange(nxt, nxt + b - a))
                if bad.size:
                    raise GirError(f"chain over '{s.var}': block {int(gs[a + bad[0]])} of a chain reaches it before "
                                   f"block {nxt + int(bad[0])} (a block of the chain skips it)", s.loc)
                run = ufunc.accumulate(np.r_[np.asarray([acc], dt.numpy), vs[a:b]], dtype=dt.numpy)
                out[a:b] = run[:-1]
                state[int(ks[a])] = (nxt + b - a, run[-1])
        got = np.empty(len(pick), dt.numpy)
        got[order] = out
        if len(pick) != self.n_act:
            got = got[np.searchsorted(np.unique(brow), brow)]
        dst = self.region(s.target)
        self.write(dst, got.reshape((self.n_act,) + dst.rshape))
        stride, mine = self._chain_stride(s), off[pick]
        later = mine[g[pick] > 0]
        written = len(np.unique(mine * 8 // 32))              # 32-byte sectors of the words, 8 bytes each
        read = len(np.unique((later - stride) * 8 // 32))     # the predecessors' words the look-back reads
        stats = self.runner.instr_stats(self.kernel, s, "chain", s.status.name)
        stats.executions += len(pick)
        stats.sectors += written + read
        self.stats.global_write_bytes += 32 * written
        self.stats.useful_write_bytes += 8 * len(pick)
        self.stats.global_read_bytes += 32 * read
        self.stats.useful_read_bytes += 8 * len(later)

    def _chain_stride(self, s: ir.Chain) -> int:
        """How far apart the status words of consecutive blocks of a chain are (elements)."""
        stride = 0
        for coeff, n in zip(stride_coeffs(s), self.buffers[s.status.name].shape):
            stride = stride * int(n) + coeff
        return stride

    def _assign(self, s: ir.Assign) -> None:
        self.prepare()
        self.cur = s
        value = self.fexpr(s.value)
        dst = self.region(s.target)
        self.write(dst, fit(value, self.n_act, dst.rshape, s.loc))
        self.account(dst, None, True, 1, s, "compute")

    def read_tile(self, ref: ir.Ref) -> np.ndarray:
        reg = self.region(ref)
        vals = self.read(reg)
        self.account(reg, None, False, 1, self.cur, "compute")
        return vals

    def _move(self, s: ir.Move) -> None:
        self.prepare()
        src, dst = self.region(s.src, s.mask), self.region(s.dst, s.mask)
        if src.k != dst.k:
            raise GirError(f"region shapes differ: {list(dst.rshape)} vs {list(src.rshape)}", s.loc)
        vals = self.read(src).reshape(self.n_act, src.k)
        moved = src.valid if dst.valid is None else dst.valid if src.valid is None else src.valid & dst.valid
        if src.valid is not None and s.other is not None:
            vals = np.where(src.valid, vals, np.asarray(s.other).astype(vals.dtype))
            only = dst.valid
        else:
            only = moved
        self.account(src, moved, False, s.vec, s, s.kind)
        self.write(dst, vals.reshape((self.n_act,) + dst.rshape), only)
        self.account(dst, only, True, s.vec, s, s.kind)

    # ------------------------------------------------------------ accounting
    def account(self, reg: Region, valid, write: bool, vec: int, s, kind: str) -> None:
        buf = reg.buf
        if not (buf.level.off_chip or buf.level in SHARED_LEVELS):
            return
        count = self.n_act * reg.k if valid is None else int(valid.sum())
        nbytes = count * buf.dtype.nbytes
        istats = self.runner.instr_stats(self.kernel, s, kind, buf.name)
        if buf.level.off_chip:
            off = reg.off if reg.off is not None else None
            brow, tid, _ = self.ids()
            if self.family == "gpu":
                wpb = -(-self.per_block() // self.ws)
                warp, lane, width, v = brow * wpb + tid // self.ws, tid % self.ws, self.ws, vec
            else:
                warp, lane, width, v = np.arange(self.n_act), np.zeros(self.n_act, np.int64), 1, reg.k
            sectors, accesses = count_sectors(off, valid, buf.dtype.nbytes, v if reg.k % v == 0 else 1,
                                              warp, lane, width)
            istats.sectors += sectors
            istats.executions += accesses
            if write:
                self.stats.global_write_bytes += sectors * 32
                self.stats.useful_write_bytes += nbytes
            else:
                self.stats.global_read_bytes += sectors * 32
                self.stats.useful_read_bytes += nbytes
        else:
            brow, tid, _ = self.ids()
            istats.executions += len(np.unique(brow * self.stride + tid // self.ws))
            if write:
                self.stats.shared_write_bytes += nbytes
            else:
                self.stats.shared_read_bytes += nbytes
            istats.shared_bytes += nbytes
        istats.useful_bytes += nbytes
        if buf.tracker is not None and reg.off is not None:
            self.track(buf.tracker, reg, valid, write, s)

    def track(self, tracker: Tracker, reg: Region, valid, write: bool, s) -> None:
        brow, _, ids = self.ids()
        addr, several = reg.off, None
        if not write and valid is None and tracker.per_block_size and self.block_uniform(reg.ref):
            # every active thread of a block reads the same elements: one representative per block
            first = np.flatnonzero(np.r_[True, brow[1:] != brow[:-1]])
            count = np.diff(np.r_[first, len(brow)])
            addr, ids, brow = addr[first], ids[first], brow[first]
            several = np.broadcast_to((count > 1)[:, None], addr.shape).reshape(-1)
        ids = np.broadcast_to(ids[:, None], addr.shape)
        ep = np.broadcast_to(self.epoch[brow][:, None], addr.shape)
        if valid is not None:
            addr, ids, ep = addr[valid], ids[valid], ep[valid]
        ins = self.runner.instr_index(s)
        if write:
            races = tracker.write(addr.reshape(-1), ids.reshape(-1), ep.reshape(-1), ins)
        else:
            races = tracker.read(addr.reshape(-1), ids.reshape(-1), ep.reshape(-1), ins, several)
        for race in races:
            self.runner.report_race(race, self)

    def block_uniform(self, ref: ir.Ref) -> bool:
        """True if the region's indices use no thread-level variable (same elements for a whole block)."""
        names = set()
        for ix in ref.index:
            for part in ((ix.start, ix.stop) if isinstance(ix, ir.Slice) else (ix,)):
                names |= free_vars(part)
        return not any(self.var_depth.get(v, 0) >= 1 for v in names)


def _static_instances(body, ex: KernelExec) -> int:
    """Largest instance count per block over the nested parallel scopes (1024 where not static)."""
    best = 1
    for s in body:
        if isinstance(s, ir.Parallel):
            try:
                lo, hi = ex.ival(s.lo), ex.ival(s.hi)
                ext = int(hi - lo) if not isinstance(lo - hi, np.ndarray) else 1024
            except GirError:
                ext = 1024
            best = max(best, max(1, ext) * _static_instances(s.body, ex))
        elif isinstance(s, (ir.For, ir.If)):
            inner = s.body if isinstance(s, ir.For) else s.then + s.orelse
            best = max(best, _static_instances(inner, ex))
    return best


def _written_globals(body) -> set[str]:
    out = set()
    for s in body:
        if isinstance(s, ir.Move) and s.kind == "store" or isinstance(s, ir.Move) and s.kind == "copy":
            out.add(s.dst.name)
        for attr in ("body", "then", "orelse"):
            out |= _written_globals(getattr(s, attr, ()))
    return out
