"""Fused MLU schedules beyond the plain row model: scalar (full) reductions (`fullreduce`), index values and
rank > 2 row tensors (`indexops`). One row-model kernel, patched, plus one combine kernel per scalar result."""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.shapes import func_info
from gir.passes.schedule_mlu.gather import gather_kernel
from gir.passes.schedule_mlu.fullreduce import combine_kernel, split_scalar
from gir.errors import GirError
from gir.passes.schedule_mlu.indexops import COLV, ROWV, patch_kernel, patch_long_columns, pick_rows, \
    rewrite_index_values
from gir.passes.schedule_mlu.longrows import longrows_kernel
from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
from gir.passes.schedule_mlu.placement import NoTileFits, solve_placement
from gir.passes.schedule_mlu.tiles_nram import kernel_nram
from gir.passes.schedule_mlu.rowmodel import NotRowModel, analyze_rows


def schedule_extended(spec: ir.Func, info, tasks: int = 32, allow_sram: bool = True, max_rows: int = 64,
                      nram: int = 768 * 1024) -> list:
    """Body items (GDRAM allocs and kernels) of the fused schedule of `spec` (sizes specialised); NotRowModel if
    it does not apply, NoTileFits when no tile height fits `nram` bytes per core."""
    main, reds, extra = split_scalar(spec, info)
    items: list = [ir.Alloc(p.name, p.type, ir.Level.gdram) for p in extra]
    types = dict(info.types)
    types.update({p.name: p.type for p in extra})
    if main.body:
        vfunc, ix = rewrite_index_values(main, func_info(main))
        if not ix.any and not reds:
            raise NotRowModel("nothing beyond the row model")
        model = analyze_rows(vfunc, {})
        from gir.passes.schedule_mlu.cost import estimate
        before = list(items)

        def seconds(k: ir.Kernel) -> float:
            return estimate(dataclasses.replace(spec, body=tuple(before + [k]))).seconds
        items.append(_row_kernel(spec.name, model, ix, types, tasks, allow_sram, max_rows, nram, seconds))
    elif not reds:
        raise NotRowModel("empty function")
    for q, red in enumerate(reds):
        items.append(combine_kernel(red, types[red.src].shape[0], f"{spec.name}_c{q}", types[red.src].dtype,
                                    types[red.target].dtype, types))
    return items


def _row_kernel(name: str, model, ix, types: dict, tasks: int, allow_sram: bool, max_rows: int,
                nram: int, seconds=None) -> ir.Kernel:
    """The patched row-model kernel with the tallest tile whose NRAM, counted from the patched kernel
    (tiles_nram.py), fits `nram`: the patch adds per-core tiles the placement does not see (the column index
    `cj_` and its doubling buffer, a row of N floats each), so an argmax over rows of 32,000 floats planned
    for the placement's budget overflowed NRAM by 110 KiB."""
    while True:
        try:
            pl = solve_placement(model, tasks=tasks, allow_sram=allow_sram, max_rows=max_rows, nram=nram)
        except NoTileFits:
            return _long_kernel(name, model, ix, tasks, nram)
        rows = pick_rows(pl.rows, ix, model.m, tasks)
        sram = frozenset(pl.sram) - {COLV, ROWV}
        if ix.col and not ix.row and not ix.lead:   # sum_j select(j == t[i], x[i, j], 0): per-row gathers
            kernel, rows = gather_kernel(model, rows, tasks, sram, f"{name}_mlu")
        else:
            kernel = lower_rows(model, RowPlan(rows, tasks, sram), f"{name}_mlu")
        if ix.any:
            kernel = patch_kernel(kernel, ix, model.n, rows, types)
        if kernel_nram(kernel) <= nram:
            return _blocked_if_faster(kernel, rows, model, ix, types, tasks, nram, seconds) if seconds else kernel
        if rows <= 1:
            return _long_kernel(name, model, ix, tasks, nram)
        max_rows = rows // 2


def _blocked_if_faster(kernel: ir.Kernel, rows: int, model, ix, types: dict, tasks: int, nram: int,
                       seconds) -> ir.Kernel:
    """The row kernel with each core's tiles contiguous and its `[M]` results stored once per core (hoist.py), when
    the MLU cost model (`seconds`) estimates it faster (the ranking policy's tie keeps the cyclic kernel). Several
    `[M]` results per tile are several 500-cycle DMAs per tile (argreduce: four); for short rows the blocked form's
    copies into the per-core vectors cost more than they save (argmax at N = 7 was 28.8x -> 35.2x the DMA
    roofline when taken unranked; cross_entropy at M = 1000, N = 7 46.1x -> 49.7x). Gather kernels whose rows
    split evenly over the cores are blocked already (gather_kernel); not for index rows or rank > 2 rows."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING
    from gir.passes.schedule_mlu.gather import gather_rows
    from gir.passes.schedule_mlu.hoist import blocked_rows, hoist_rows, row_vectors
    gathers = _gathers(kernel)
    if ix.row or ix.lead or not ix.col or (gathers and model.m % tasks == 0):   # (gather_kernel blocked it)
        return kernel
    r = blocked_rows(rows, model.m, tasks, row_vectors(model), uneven=True)
    if r is None:
        return kernel
    plain = lower_rows(model, RowPlan(r, tasks, frozenset()), kernel.name)
    if gathers:
        plain = gather_rows(plain)
    hoisted = hoist_rows(plain, model, r, tasks, model.dtypes)
    if hoisted is plain:
        return kernel
    blocked = patch_kernel(hoisted, ix, model.n, r, types)
    if kernel_nram(blocked) > nram:
        return kernel
    return order([kernel, blocked], seconds, MLU_RANKING)[0]


def _gathers(kernel: ir.Kernel) -> bool:
    from gir.walk import stmt_exprs, walk, walk_stmts
    return any(isinstance(x, ir.Call) and x.fn == "gather_cols"
               for st in walk_stmts(kernel.body) for e in stmt_exprs(st) for x in walk(e))


def _long_kernel(name: str, model, ix, tasks: int, nram: int) -> ir.Kernel:
    """Rows too long for one tile with their index tiles (an argmax over a vocabulary of 32,000 floats): the
    chunked multi-pass kernel (longrows.py), the column index built per chunk on chip; NoTileFits when the
    function has other index values or viewed tensors, or no chunk fits."""
    if not ix.col or ix.row or ix.lead:
        what = "its index tiles" if ix.any else "the scalar reductions' partial sums"
        raise NoTileFits(f"no tile fits NRAM (one row of {model.n} elements with {what} exceeds {nram} bytes; "
                         "chunked rows take column indices only)")
    try:
        kernel = longrows_kernel(model, f"{name}_mlu", tasks, nram, extra_cols=2)
    except GirError as e:
        raise NoTileFits(f"no tile fits NRAM for rows of {model.n} elements with their index tiles "
                         f"({e.message})") from None
    kernel = patch_long_columns(kernel)
    used = kernel_nram(kernel)
    if used > nram:
        raise NoTileFits(f"no tile fits NRAM (chunks of rows of {model.n} elements need {used} bytes of {nram})")
    return kernel
