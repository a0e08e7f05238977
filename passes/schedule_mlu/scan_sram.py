"""Tiles of a long scan kept in the cluster's SRAM between its two phases (scan_long.py, scan_cols_long.py).

A long scan's phase 1 reads every tile of its range for the range's total and phase 2 reads them again for the
scan; NRAM keeps the first few (`keep_`). The next `skeep` tiles stay in SRAM: phase 1 copies each landed operand
tile there after its load (an on-chip copy in the load stage, `copy` NRAM -> SRAM), phase 2 copies it back instead
of loading it from GDRAM (a `copy` SRAM -> NRAM, pipelined as a load: swpipe.py). SRAM belongs to a cluster, so
the kernel runs in cluster and core scopes (`parallel cl_ @cluster { alloc <x>_ks @sram; parallel co_ @core
{...} }`), each core keeping its tiles in its part; the task index is `cl_ * cores + co_`.
"""
from __future__ import annotations

from gir import ir
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import build as B


class SramKeep:
    """Mixin of a long scan's kernel builder: `skeep` tiles per range kept in SRAM."""

    def sram_setup(self) -> None:
        self.skeep = 0          # tiles of a range kept in SRAM (after the ones kept in NRAM)
        self.sram = None        # while building a tile SRAM keeps: ("to" | "from", its index among them)
        self.cpc = MLU370.cores_per_cluster
        self.sram_allocs: dict[str, ir.Alloc] = {}
        self.bands = 1          # units a task walks in phase 1 before phase 2 walks them all (scan_cross.py):
        #                         each keeps its tiles in its own part of the core's SRAM, numbered by it_

    def sram_tiles(self, budget: int, tile_bytes: int, left: int) -> int:
        """Tiles a core may keep in its part of `budget` bytes of its cluster's SRAM (at most `left`; none when the
        schedule may not use SRAM: `schedule_mlu(..., allow_sram=False)`)."""
        if not self.p.allow_sram or self.p.tasks % self.cpc or tile_bytes <= 0:
            return 0
        return max(0, min(budget // self.cpc // tile_bytes, left))

    def kept_sram(self, name: str, dtype: ir.DType, rows: int, cols: int, nr: int, nc: int) -> ir.Ref:
        """Rows [0, nr) x columns [0, nc) of this core's current kept tile (`self.sram[1]`) of operand `name`,
        tiles of [rows, cols] elements in `<name>_ks`."""
        ks = f"{name}_ks"
        if ks not in self.sram_allocs:
            self.sram_allocs[ks] = B.alloc(ks, dtype, (self.cpc * self.bands * self.skeep * rows, cols), "sram")
        row = B.add(B.mul(B.v("co_"), self.bands * self.skeep * rows), B.mul(self.sram[1], rows))
        if self.bands > 1:
            row = B.add(row, B.mul(B.v("it_"), self.skeep * rows))
        return B.ref(ks, B.sl(row, nr), B.sl(0, nc))

    def through_sram(self, land: ir.Ref, ks: ir.Ref, loads: list) -> list:
        """The moves that fill `land` (its GDRAM `loads`) for a tile SRAM keeps: then copied to `ks` (phase 1),
        or taken from `ks` instead (phase 2)."""
        if self.sram[0] == "from":
            return [B.move("copy", land, ks)]
        return loads + [B.move("copy", ks, land)]

    def in_sram(self, mode: str, i, build):
        """`build()` with the tile's loads to ("to") or from ("from") its SRAM keep number `i`."""
        self.sram = (mode, i)
        try:
            return build()
        finally:
            self.sram = None

    def after_nram(self, mode: str, done: int, left: int, steps) -> list:
        """The loops over a range's `left` full tiles after its first `done` (kept in NRAM): the next `skeep` through
        SRAM (`mode`: "to" in phase 1, "from" in phase 2), the rest from GDRAM; `steps(skip)` builds the body of
        the loop `k_` over tiles skip + k_ (scan order)."""
        sk, k = min(self.skeep, left), B.v("k_")
        out = [ir.For("k_", B.c(0), B.c(sk), tuple(self.in_sram(mode, k, lambda: steps(done))))] if sk else []
        if left > sk:
            out.append(ir.For("k_", B.c(0), B.c(left - sk), tuple(steps(done + sk))))
        return out

    def task(self) -> ir.Expr | None:
        """The task's index: cl_ * cores + co_ when tiles are kept in SRAM, else the variable task_ (None)."""
        return B.add(B.mul(B.v("cl_"), self.cpc), B.v("co_")) if self.skeep else None

    def scope(self, allocs: tuple, steps: tuple) -> ir.Parallel:
        """The kernel's parallel scope: cores (`task_`), or clusters declaring the SRAM around their cores."""
        if not self.skeep:
            return ir.Parallel("task_", B.c(0), B.c(self.p.tasks), ir.ParLevel.core, allocs + steps)
        core = ir.Parallel("co_", B.c(0), B.c(self.cpc), ir.ParLevel.core, allocs + steps)
        return ir.Parallel("cl_", B.c(0), B.c(self.p.tasks // self.cpc), ir.ParLevel.cluster,
                           tuple(self.sram_allocs.values()) + (core,))
