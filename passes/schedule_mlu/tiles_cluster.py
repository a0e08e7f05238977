"""The slab kernel shared by the cores of a cluster (tiles_slab.py with `Plan.parts` = cores per cluster).

A unit's [T, W] slab does not fit one core's NRAM when W is wide (128 f32 lanes are 512-byte row segments, 64-byte
DMA granules wasted at a segment's two ends only), so the cores of a cluster share it: sub-tile g of S rows goes to
core g % cores (`sub_tiles`), each core keeps its sub-tiles in its NRAM, and the statistics over T (column sums,
maxima, the online softmax's max and rescaled sum) are combined across the cluster through SRAM after the pass
that accumulates them (`Combine`; a statistic over the whole slab -- a group norm's mean -- as one value per core
in a [cores] vector):

    parallel cl_ in 0..clusters @cluster {
      alloc s_x: f32[cores, W] @sram                      # one row of partials per core
      parallel co_ in 0..cores @core {
        for it_ in 0..units of this cluster {             # every core of the cluster walks the same units
          for k in 0..(full - co_ + cores - 1) // cores { ...sub-tile k * cores + co_, rows k * S of its slab... }
          if co_ == full % cores { ...the tail sub-tile... }
          copy s_x[co_, 0:W] <- s_t[0:W]; sync @cluster   # partials in
          copy s_a[0:cores, 0:W] <- s_x[0:cores, 0:W]; sync @cluster
          s_t[0:W] = sum(s_a[0:cores, 0:W], axis=0)       # (max / min alike; online: rescaled to the new max)
          ...the next passes over the core's own sub-tiles...
      } } }

The loops the barriers sit in run the same trips on every core of the cluster (units by `cl_`), so `sync @cluster`
stays under uniform conditions. When the units cannot fill the clusters, every core of the kernel shares each unit
(`Plan.parts` = tasks, sub-tile g on task cl_ * cores + co_ = g % tasks): the partials meet in SRAM within each
cluster as above, then the clusters' values in a function-level GDRAM array `<kernel>_<stat>_x[clusters, W]`
between two `sync @all` inside a unit loop every core walks whole.
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.tiles import COL, FULL
from gir.passes.schedule_mlu.tiles_builder import _unit_loop
from gir.passes.machines import MLU370

CORE = "co_"
CORES = MLU370.cores_per_cluster


def is_shared(plan) -> bool:
    """Whether a tile plan (tiles_builder.Plan) is a slab shared by several cores (a cluster's or all)."""
    return plan.mode == "slab" and plan.parts > 1


def shared_rows(rows: int, S: int, cores: int) -> int:
    """Rows of one core's slab: its sub-tiles of S rows among the ceil(rows / S) dealt out to `cores` cores."""
    return -(-rows // S // cores) * S


def cluster_kernel(name: str, tasks: int, cores: int, sram: list, nram: list, body: list, dense: bool) -> ir.Kernel:
    inner = ir.Parallel(CORE, B.c(0), B.c(cores), ir.ParLevel.core, tuple(nram) + tuple(body))
    outer = ir.Parallel("cl_", B.c(0), B.c(tasks // cores), ir.ParLevel.cluster, tuple(sram) + (inner,))
    attrs = (("task_dim", str(tasks)),) + ((("layout", "dense"),) if dense else ())
    return ir.Kernel(name, (outer,), attrs)


def sub_tiles(full: int, tail: int, S: int, cores: int, step, co: ir.Expr = B.v(CORE)) -> list:
    """This core's sub-tiles of a slab of `full` whole sub-tiles of S rows and a `tail`: sub-tile g on core
    g % cores (numbered by `co`) at rows (g // cores) * S of its slab; `step(local_row0, global_row0, rows)`
    builds one."""
    out = _unit_loop("ks_", full, cores, 0, lambda g: step(B.mul(B.v("ks_"), S), B.mul(g, S), S), co)
    if tail:
        owner = full % cores
        body = step(B.c(full // cores * S), B.c(full * S), tail)
        out.append(ir.If(ir.BinOp("==", co, B.c(owner)), tuple(body), ()))
    return out


class Combine:
    """The cross-core combine of partial statistics (per statistic an exchange tile and an NRAM tile of partials):
    the cores of a cluster through SRAM (`sync @cluster`); with `grid` (every core of the kernel shares a unit),
    then the clusters' values through a GDRAM array of one row per cluster (a function-level temporary named after
    the kernel): each cluster's core 0 stores its row, `sync @all`, the cluster's cores load the rows into SRAM (a
    share each), `sync @all`. A cluster moves 1 + clusters rows through GDRAM per combine, where every core read
    all cores' rows before (a column softmax at 4,095^2 read 34.6 MB of partials, a quarter of its compulsory
    bytes)."""

    def __init__(self, bufs, cores: int, W: int, grid: str | None = None):
        self.bufs, self.W, self.grid = bufs, max(2, W), grid
        self.cores = min(cores, CORES) if grid else cores   # the first level's parts
        self.clusters = cores // CORES if grid else 1
        self.exchange: dict[str, ir.Alloc] = {}   # SRAM allocs of the cluster scope, function-level GDRAM
        self.sram: dict[str, ir.Alloc] = {}

    def _tiles(self, n: str, one: bool = False) -> tuple[str, str]:
        """The exchange tile and the NRAM tile of partials of statistic `n`: [cores, W], or [cores] for a
        statistic of one value (`one`); with `grid`, also the GDRAM and SRAM tiles of the clusters' rows."""
        x, a = f"{n}_x", f"{n}_a"
        if x not in self.sram:
            rows = max(self.cores, self.clusters)
            self.sram[x] = B.alloc(x, ir.DType.f32, (self.cores,) + (() if one else (self.W,)), "sram")
            if self.grid:
                g, y = f"{self.grid}_{n}_x", f"{n}_y"
                self.exchange[g] = B.alloc(g, ir.DType.f32, (self.clusters,) + (() if one else (self.W,)), "gdram")
                self.sram[y] = B.alloc(y, ir.DType.f32, (self.clusters,) + (() if one else (self.W,)), "sram")
            self.bufs.allocs[a] = B.alloc(a, ir.DType.f32, (rows,) + (() if one else (self.W,)), "nram")
            self.bufs.kind[a] = COL if one else FULL
        return x, a

    def stmts(self, accs: dict, online: dict, acc_ref, nw: int, ones: set | None = None) -> list:
        """Statements combining the partials of `accs` ({name: reduction}; `online`: {sum: its max}), whose
        per-core value `acc_ref(name)` is a [nw] region (a [1] region for the statistics of one value in `ones`:
        over the whole slab), into every core's full value."""
        if not accs:
            return []
        ones = ones or set()

        def rows(n, k):   # the first k rows of a [parts, W] tile (of a [parts] one for a statistic of one value)
            return (B.sl(0, k),) if n in ones else (B.sl(0, k), B.sl(0, nw))

        def one_row(n, i):
            return (i,) if n in ones else (i, B.sl(0, nw))
        co, bar_cl = B.v(CORE), ir.Sync(ir.ParLevel.cluster)
        put, get, part = [], [], {}
        for n in accs:
            x, a = self._tiles(n, n in ones)
            put.append(B.move("copy", B.ref(x, *one_row(n, co)), acc_ref(n)))
            get.append(B.move("copy", B.ref(a, *rows(n, self.cores)), B.ref(x, *rows(n, self.cores))))
            part[n] = B.ref(a, *rows(n, self.cores))
        out = put + [bar_cl] + get + [bar_cl] + _reduced(accs, online, acc_ref, part)
        if not self.grid:
            return out
        bar_all, k = ir.Sync(ir.ParLevel.all), self.clusters
        # the clusters' rows into SRAM: a share of them by each core of the cluster when they deal out evenly
        # (the busiest core's bytes), else all by core 0
        share = k // self.cores if k % self.cores == 0 else k
        at = B.mul(co, share) if share < k else B.c(0)
        store, load, get, part = [], [], [], {}
        for n in accs:
            g, y, a = f"{self.grid}_{n}_x", f"{n}_y", f"{n}_a"
            store.append(B.move("store", B.ref(g, *one_row(n, B.v("cl_"))), acc_ref(n)))
            some = (B.sl(at, share),) + (() if n in ones else (B.sl(0, nw),))
            load.append(B.move("load", B.ref(y, *some), B.ref(g, *some)))
            get.append(B.move("copy", B.ref(a, *rows(n, k)), B.ref(y, *rows(n, k))))
            part[n] = B.ref(a, *rows(n, k))
        first = ir.BinOp("==", co, B.c(0))
        load = load if share < k else [ir.If(first, tuple(load), ())]
        return out + [ir.If(first, tuple(store), ()), bar_all] + load + [bar_all] + get + \
            _reduced(accs, online, acc_ref, part)


def _reduced(accs: dict, online: dict, acc_ref, part: dict) -> list:
    """Every statistic's value from its partials `part[name]` (rows of parts)."""
    comp = []
    for n, red in accs.items():
        if n not in online:
            comp.append(ir.Assign(acc_ref(n), ir.Reduce(red, part[n], (0,))))
    for s, m in online.items():   # s = sum_i s_i * exp(m_i - m), m = max_i m_i (combined above)
        comp += [ir.Assign(part[m], ir.BinOp("-", part[m], acc_ref(m))),
                 ir.Assign(part[m], ir.Call("exp", (part[m],))),
                 ir.Assign(part[s], ir.BinOp("*", part[s], part[m])),
                 ir.Assign(acc_ref(s), ir.Reduce("sum", part[s], (0,)))]
    return comp
