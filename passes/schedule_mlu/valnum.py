"""Value numbering of a row model's three-address ops: a repeated computation is issued once per tile.

`analyze_rows` turns every occurrence of a subexpression into its own op, so `abs(x[i, j])` written three times
(elementwise_chain) became three `__bang_active_abs` calls per tile. Here an op whose function, result kind and
operands (after earlier replacements) equal an earlier op's is dropped and its readers read the earlier value. The
kept op is the first occurrence, so every value is the same f32 computation on the same operands as before: results
are bit-identical.

Why here and not as an operator-layer pass that introduces `t[i, j] = abs(x[i, j])`: the row model would give such
an intermediate exactly the same tile lifetime, but the statement would also reach the op-by-op baseline (one more
GDRAM round trip), the other MLU schedules and the GPU path (whose compiler already eliminates common
subexpressions). Applied inside `lower_rows`, it is seen by everything that plans NRAM from the lowered kernel
(placement.py measures the footprint of the emitted kernel), so the longer life of a shared value is paid for in
the tile height, never overlooked.

Kept apart: copies (a statement's value stored into its target), ops writing a function result (replacing them
would need a copy: no saving), and models in which a name is written twice (not produced by `analyze_rows`).
"""
from __future__ import annotations

import dataclasses

from gir.passes.schedule_mlu.rowmodel import CONST, Op, RowModel, Val


def number_values(model: RowModel) -> RowModel:
    """`model` with repeated ops removed (the same model object when there is none)."""
    dsts = [op.dst.name for op in model.ops]
    if len(set(dsts)) != len(dsts):
        return model
    earlier: dict[tuple, Val] = {}
    same: dict[str, Val] = {}
    ops: list[Op] = []
    for op in model.ops:
        args = tuple(a if a.kind == CONST else same.get(a.name, a) for a in op.args)
        if args != op.args:
            op = Op(op.dst, op.fn, args)
        key = (op.fn, op.dst.kind, args)
        if op.fn != "copy" and op.dst.name not in model.outputs:
            if key in earlier:
                same[op.dst.name] = earlier[key]
                continue
        if op.fn != "copy":
            earlier.setdefault(key, op.dst)
        ops.append(op)
    if not same:
        return model
    temps = {k: v for k, v in model.temps.items() if k not in same}
    return dataclasses.replace(model, ops=ops, temps=temps)
