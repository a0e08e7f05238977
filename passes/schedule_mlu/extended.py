"""Fused MLU schedules beyond the plain row model: scalar (full) reductions (`fullreduce`), index values and
rank > 2 row tensors (`indexops`). One row-model kernel, patched, plus one combine kernel per scalar result."""
from __future__ import annotations

from gir import ir
from gir.shapes import func_info
from gir.passes.schedule_mlu.gather import gather_kernel
from gir.passes.schedule_mlu.fullreduce import combine_kernel, split_scalar
from gir.passes.schedule_mlu.indexops import COLV, ROWV, patch_kernel, pick_rows, rewrite_index_values
from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
from gir.passes.schedule_mlu.placement import solve_placement
from gir.passes.schedule_mlu.rowmodel import NotRowModel, analyze_rows


def schedule_extended(spec: ir.Func, info, tasks: int = 32, allow_sram: bool = True, max_rows: int = 64) -> list:
    """Body items (GDRAM allocs and kernels) of the fused schedule of `spec` (sizes specialised); NotRowModel if
    it does not apply."""
    main, reds, extra = split_scalar(spec, info)
    items: list = [ir.Alloc(p.name, p.type, ir.Level.gdram) for p in extra]
    types = dict(info.types)
    types.update({p.name: p.type for p in extra})
    if main.body:
        vfunc, ix = rewrite_index_values(main, func_info(main))
        if not ix.any and not reds:
            raise NotRowModel("nothing beyond the row model")
        model = analyze_rows(vfunc, {})
        pl = solve_placement(model, tasks=tasks, allow_sram=allow_sram, max_rows=max_rows)
        rows = pick_rows(pl.rows, ix, model.m, tasks)
        if ix.col and not ix.row and not ix.lead:   # sum_j select(j == t[i], x[i, j], 0): per-row gathers
            kernel, rows = gather_kernel(model, rows, tasks, frozenset(pl.sram) - {COLV, ROWV}, f"{spec.name}_mlu")
        else:
            kernel = lower_rows(model, RowPlan(rows, tasks, frozenset(pl.sram) - {COLV, ROWV}), f"{spec.name}_mlu")
        if ix.any:
            kernel = patch_kernel(kernel, ix, model.n, rows, types)
        items.append(kernel)
    elif not reds:
        raise NotRowModel("empty function")
    for q, red in enumerate(reds):
        items.append(combine_kernel(red, types[red.src].shape[0], f"{spec.name}_c{q}", types[red.src].dtype,
                                    types[red.target].dtype, types))
    return items
