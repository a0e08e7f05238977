"""AutoTM-style placement for row-model kernels, solved with z3 Optimize.

Decisions: the tile height R (rows per tile) and, for every per-column operand (gamma, beta, bias, ...), whether
each core loads it from GDRAM into its NRAM (GDRAM bytes = cores x size) or one memory core per cluster loads it
into the cluster's SRAM once and the cores copy SRAM→NRAM (GDRAM bytes = clusters x size, SRAM capacity used).
Constraints: NRAM per core (double-buffered load/store tiles, single temporaries, per-column vectors, a scratch
tile) and SRAM per cluster. Objective (lexicographic): minimise GDRAM bytes, then maximise R (fewer, larger DMAs).
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from gir.errors import GirError
from passes.schedule_mlu import layout as L
from passes.schedule_mlu.lower_rows import F32, liveness_buffers
from passes.schedule_mlu.rowmodel import COL, FULL, ROW, RowModel


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


def solve_placement(model: RowModel, tasks: int = 32, clusters: int = 8, nram: int = 768 * 1024,
                    sram: int = 4 * 1024 * 1024, max_rows: int = 64, allow_sram: bool = True) -> Placement:
    m, n = model.m, model.n
    _, kinds = liveness_buffers(model)
    # double-buffered DMA tiles: f32 inputs/outputs (16-bit ones are DMAed through their narrow tiles, counted
    # below; their f32 working tiles are single)
    io = {f"{x}_t" for x, k in {**model.inputs, **model.outputs}.items()
          if (k in (FULL, ROW) or x in model.outputs) and model.dtypes.get(x, F32) == F32}
    p = L.pitch((1, n))
    odd = n % L.PITCH != 0
    per_row = 0
    for buf, kind in kinds.items():
        if kind == FULL:
            per_row += p * 4 * (2 if buf in io else 1)
    per_row += p * 4 * (4 if odd else 2)  # scratch tiles (broadcasts; masked reductions when n % 64 != 0)
    kind_of = {**model.inputs, **model.outputs}
    narrow = [x for x in kind_of if model.dtypes[x].value != "f32"]
    per_row += sum((p if kind_of[x] == FULL else 1) * 2 * model.dtypes[x].nbytes   # double-buffered
                   for x in narrow)                                                # f16/bf16/bool/i32 tiles
    fixed = sum(L.phys_elems((n,)) * 4 for b, k in kinds.items() if k == COL) + 64 * 1024
    cols = [x for x, k in model.inputs.items() if k == COL]
    col_bytes = {x: n * model.dtypes[x].nbytes for x in cols}

    opt = z3.Optimize()
    r = z3.Int("R")
    in_sram = {x: z3.Bool(f"sram_{x}") for x in cols}
    rows_per_core = max(1, -(-m // tasks))
    # pipeline depth: keep >= PIPE_TILES tiles per core (fill/drain amortised) unless tiles would drop below
    # MIN_TILE_BYTES (then the serialised per-DMA latency dominates)
    depth_cap = max(-(-MIN_TILE_BYTES // (n * 4)), rows_per_core // PIPE_TILES)
    cap = min(max_rows, rows_per_core, depth_cap)
    opt.add(r >= 1, r <= cap)
    opt.add(r * per_row + fixed <= nram)
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
    used = rows * per_row + fixed
    return Placement(rows, chosen, mod.eval(traffic).as_long(), used)
