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
(`Plan.parts` = tasks, sub-tile g on task g % tasks): the partials meet in a function-level GDRAM array
`<kernel>_<stat>_x[tasks, W]` between two `sync @all` inside a unit loop every core walks whole.
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.tiles import COL, FULL
from gir.passes.schedule_mlu.tiles_builder import _unit_loop

CORE = "co_"


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


def sub_tiles(full: int, tail: int, S: int, cores: int, step, core: str = CORE) -> list:
    """This core's sub-tiles of a slab of `full` whole sub-tiles of S rows and a `tail`: sub-tile g on core
    g % cores (numbered by `core`) at rows (g // cores) * S of its slab; `step(local_row0, global_row0, rows)`
    builds one."""
    co = B.v(core)
    out = _unit_loop("ks_", full, cores, 0, lambda g: step(B.mul(B.v("ks_"), S), B.mul(g, S), S), core)
    if tail:
        owner = full % cores
        body = step(B.c(full // cores * S), B.c(full * S), tail)
        out.append(ir.If(ir.BinOp("==", co, B.c(owner)), tuple(body), ()))
    return out


class Combine:
    """The cross-core combine of partial statistics (one [cores, W] exchange tile and one NRAM tile of partials
    per statistic): the cores of a cluster through SRAM (`sync @cluster`), or every core of the kernel through a
    GDRAM array (`grid`: `sync @all`, the array a function-level temporary named after the kernel)."""

    def __init__(self, bufs, cores: int, W: int, grid: str | None = None):
        self.bufs, self.cores, self.W, self.grid = bufs, cores, max(2, W), grid
        self.exchange: dict[str, ir.Alloc] = {}   # SRAM allocs of the cluster scope, or function-level GDRAM
        self.core = "task_" if grid else CORE

    def _tiles(self, n: str, one: bool = False) -> tuple[str, str]:
        """The exchange tile and the NRAM tile of partials of statistic `n`: [cores, W], or [cores] for a
        statistic of one value (`one`)."""
        x, a = (f"{self.grid}_{n}_x" if self.grid else f"{n}_x"), f"{n}_a"
        if x not in self.exchange:
            shape = (self.cores,) if one else (self.cores, self.W)
            self.exchange[x] = B.alloc(x, ir.DType.f32, shape, "gdram" if self.grid else "sram")
            self.bufs.allocs[a] = B.alloc(a, ir.DType.f32, shape, "nram")
            self.bufs.kind[a] = COL if one else FULL
        return x, a

    def stmts(self, accs: dict, online: dict, acc_ref, nw: int, ones: set | None = None) -> list:
        """Statements combining the partials of `accs` ({name: reduction}; `online`: {sum: its max}), whose
        per-core value `acc_ref(name)` is a [nw] region (a [1] region for the statistics of one value in `ones`:
        over the whole slab), into every core's full value."""
        if not accs:
            return []
        c, co = self.cores, B.v(self.core)
        put, get, comp = [], [], []
        part = {}
        for n in accs:
            if n in (ones or ()):   # one value per core: a [cores] vector
                x, a = self._tiles(n, one=True)
                put.append(B.move("store" if self.grid else "copy", B.ref(x, co), acc_ref(n)))
                get.append(B.move("load" if self.grid else "copy", B.ref(a, B.sl(0, c)), B.ref(x, B.sl(0, c))))
                part[n] = B.ref(a, B.sl(0, c))
                continue
            x, a = self._tiles(n)
            put.append(B.move("store" if self.grid else "copy", B.ref(x, co, B.sl(0, nw)), acc_ref(n)))
            get.append(B.move("load" if self.grid else "copy", B.ref(a, B.sl(0, c), B.sl(0, nw)),
                              B.ref(x, B.sl(0, c), B.sl(0, nw))))
            part[n] = B.ref(a, B.sl(0, c), B.sl(0, nw))
        for n, red in accs.items():
            if n in online:
                continue
            comp.append(ir.Assign(acc_ref(n), ir.Reduce(red, part[n], (0,))))
        for s, m in online.items():   # s = sum_i s_i * exp(m_i - m), m = max_i m_i (combined above)
            comp += [ir.Assign(part[m], ir.BinOp("-", part[m], acc_ref(m))),
                     ir.Assign(part[m], ir.Call("exp", (part[m],))),
                     ir.Assign(part[s], ir.BinOp("*", part[s], part[m])),
                     ir.Assign(acc_ref(s), ir.Reduce("sum", part[s], (0,)))]
        bar = ir.Sync(ir.ParLevel.all if self.grid else ir.ParLevel.cluster)
        return put + [bar] + get + [bar] + comp
