"""AutoTM-style placement for row-model kernels, solved with z3 Optimize.

Decisions: the tile height R (rows per tile) and, for every per-column operand (gamma, beta, bias, ...), whether
each core loads it from GDRAM into its NRAM (GDRAM bytes = cores x size) or one memory core per cluster loads it
into the cluster's SRAM once and the cores copy SRAM→NRAM (GDRAM bytes = clusters x size, SRAM capacity used).
Constraints: NRAM per core and SRAM per cluster. Objective (lexicographic): minimise GDRAM bytes, then maximise R
(fewer, larger DMAs).

The NRAM a tile height needs is what the BANG-C emitter declares for the lowered kernel (`nram_footprint`, counted
from the IR by tiles_nram.py: every
tile with its pipeline slots -- 2 for tiles only loaded or only stored, 3 for tiles both loaded and stored, 1 for
temporaries -- the 16-bit landing tiles, the scratch and column-mask tiles the vector forms actually use, each
rounded to the 128-byte buffer alignment), not an estimate: it is affine in R (full tiles R x pitch, row vectors
padded to 64 elements for R <= 64), measured at R = 1 and 2 and checked at the chosen R. RESERVE bytes stay free for
what callers patch into the lowered kernel (hoisted row vectors, iota tiles).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import z3

from gir.errors import GirError
from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
from gir.passes.schedule_mlu.rowmodel import COL, FULL, ROW, RowModel
from gir.passes.schedule_mlu.tiles_nram import kernel_nram


@dataclass(frozen=True)
class Placement:
    rows: int
    sram: frozenset
    gdram_bytes: int
    nram_bytes: int


class NoTileFits(GirError):
    """Not even one row fits NRAM (the scheduler then chunks the rows: longrows.py)."""


PIPE_TILES = 8
MIN_TILE_BYTES = 32 * 1024
BALANCE_ELEMS = 2048
RESERVE = 16 * 1024


def nram_footprint(model: RowModel, rows: int) -> int:
    """NRAM bytes per core the emitter declares for the row-model kernel with tiles of `rows` rows, software-
    pipelined (tiles_nram.kernel_nram: from the IR, equal to the emitter's count)."""
    return kernel_nram(lower_rows(model, RowPlan(rows), "footprint"))


def _balance_rows(model: RowModel, rows_per_core: int) -> int:
    """Pipeline fill and drain grow with the tile (R x N elements, times the per-element stage time), the per-tile
    DMA latencies with the tile count (rows_per_core / R): their sum is least near R = sqrt(rows_per_core * B / N),
    B = BALANCE_ELEMS (measured on the simulator: softmax 4096 x 4096 best at R = 8, 4096 x 12672 at R = 4), twice
    that without [M, N] outputs (loads only: row_sum, row_max best at R = 11), divided by arith floor / roofline
    when the source is compute-bound (passes/schedule_mlu/workcount.py; elementwise_chain: R = 5)."""
    from gir.passes.schedule_mlu.workcount import count_work
    from gir.passes.machines import MLU370
    b = BALANCE_ELEMS * (1 if FULL in model.outputs.values() else 2)
    io = sum(model.m * model.n * model.dtypes[x].nbytes for x, k in {**model.inputs, **model.outputs}.items()
             if k == FULL)
    try:
        arith = count_work(model.func, {}).seconds(MLU370) * MLU370.gdram_bandwidth
    except GirError:   # not countable from the source: IO-bound assumed
        arith = 0.0
    if io and arith > io:
        b = b * io / arith
    return max(1, math.isqrt(int(rows_per_core * b) // model.n))


def solve_placement(model: RowModel, tasks: int = 32, clusters: int = 8, nram: int = 768 * 1024,
                    sram: int = 4 * 1024 * 1024, max_rows: int = 64, allow_sram: bool = True) -> Placement:
    m, n = model.m, model.n
    one = nram_footprint(model, 1)
    per_row = nram_footprint(model, 2) - one
    fixed = one - per_row
    budget = nram - RESERVE
    cols = [x for x, k in model.inputs.items() if k == COL]
    col_bytes = {x: n * model.dtypes[x].nbytes for x in cols}

    opt = z3.Optimize()
    r = z3.Int("R")
    in_sram = {x: z3.Bool(f"sram_{x}") for x in cols}
    rows_per_core = max(1, -(-m // tasks))
    # pipeline depth: keep >= PIPE_TILES tiles per core (fill/drain amortised) unless tiles would drop below
    # MIN_TILE_BYTES (then the serialised per-DMA latency dominates)
    depth_cap = max(-(-MIN_TILE_BYTES // (n * 4)), rows_per_core // PIPE_TILES)
    balance = _balance_rows(model, rows_per_core)
    cap = min(max_rows, rows_per_core, depth_cap, balance)
    opt.add(r >= 1, r <= cap)
    opt.add(r * per_row + fixed <= budget)
    sram_use = z3.Sum([z3.If(in_sram[x], col_bytes[x], 0) for x in cols]) if cols else z3.IntVal(0)
    opt.add(sram_use <= sram)
    if not allow_sram:
        for b in in_sram.values():
            opt.add(z3.Not(b))
    compulsory = sum(m * n * model.dtypes[x].nbytes for x, k in {**model.inputs, **model.outputs}.items()
                     if k == FULL) + sum(m * model.dtypes[x].nbytes for x, k in
                                         {**model.inputs, **model.outputs}.items() if k == ROW)
    traffic = compulsory + z3.Sum([z3.If(in_sram[x], clusters, tasks) * col_bytes[x] for x in cols]) \
        if cols else z3.IntVal(compulsory)
    opt.minimize(traffic)
    opt.maximize(r)
    if opt.check() != z3.sat:
        raise NoTileFits(f"no tile fits NRAM (a row of {n} elements needs {per_row} bytes)")
    mod = opt.model()
    rows = mod[r].as_long()
    chosen = frozenset(x for x in cols if z3.is_true(mod.eval(in_sram[x])))
    used = nram_footprint(model, rows)
    while used > budget and rows > 1:   # not affine (R > 64: row vectors grow; 1-byte tiles: alignment)
        rows -= 1
        used = nram_footprint(model, rows)
    if used > budget:
        raise NoTileFits(f"no tile fits NRAM (one row of {n} elements needs {used} bytes)")
    return Placement(rows, chosen, mod.eval(traffic).as_long(), used)


def balanced_rows(m: int, rows: int, tasks: int, row_bytes: int) -> int:
    """The tile height in rows // 2 .. rows whose busiest task finishes first, roughly: tiles go to the tasks in
    turn, so a task moves ceil(ceil(m / R) / tasks) tiles, each R rows plus a load's and a store's latency (at a
    task's share of the GDRAM bandwidth); ties go to the taller tile. 33,001 rows of 504 bytes: R = 64 gives 17
    tiles to the busiest task (1,088 rows), R = 61 17 of fewer rows (1,037). A candidate for the row recipe, which
    keeps it only when the MLU cost model says it is faster (recipes.py `_row_tiles`): this count misses the
    per-tile costs other than latency (mse_loss at 4,096 x 4,096 was 3% slower at R = 8 than at 11)."""
    from gir.passes.machines import MLU370 as M
    share = M.bytes_per_cycle(M.gdram_bandwidth) / (M.clusters * M.cores_per_cluster)
    latency = 2 * M.gdram_latency_cycles * share   # bytes not moved while a tile's two DMAs wait

    def cost(r: int) -> float:
        tiles = -(-m // r)
        return -(-tiles // tasks) * (r * row_bytes + latency)   # the busiest task's tiles, each rows + latency
    return min(range(rows, max(1, rows // 2) - 1, -1), key=cost)
