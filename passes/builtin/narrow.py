"""Results stored in a 16-bit float type and read again: their value, as the later statements read it.

A result `t: f16[...]` holds its value rounded to f16, and that is what a later statement reading `t` sees (the
evaluator's meaning). The middle and the MLU schedules may hand the value to its readers on chip instead of
through memory (a fused group, a recomputed element-wise producer), where it is held in f32: without the
rounding, a reader computes with a more precise value than the program says (`t1 = 0.5 * x + t0` gave a t1 one
f16 ulp off in places, and `(x - t1) * 1000` 4e-4 off in f32). `round_read_results` writes the rounding into the
value, `t0[i] = f16(...)` (`t[i] = f16(sum(...))` for a reduction), so every path that recomputes or forwards it
rounds (the MLU row model rounds an f32 tile through a 16-bit vector, codegen/mlu/vecops.py `round16`). Only
results some later statement reads are touched (a stored-only result is rounded by its store), not scans (a scan
is the whole right-hand side of its statement, a kernel of its own that rounds once per result) nor values
already cast to the type.
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.scan import scan_of
from gir.passes.builtin.exprs import refs

NARROW = (ir.DType.f16, ir.DType.bf16)


def round_read_results(func: ir.Func) -> ir.Func:
    narrow = {p.name: p.type.dtype for p in func.results if p.type.dtype in NARROW}
    if not narrow:
        return func
    body = list(func.body)
    read = {r.name for s in body if isinstance(s, ir.Assign) for r in refs(s.value)}
    for k, s in enumerate(body):
        if not isinstance(s, ir.Assign):
            continue
        name = s.target.name
        if name in narrow and name in read and scan_of(s.value) is None and not _is_cast(s.value, narrow[name]):
            body[k] = dataclasses.replace(s, value=_cast(s.value, narrow[name]))
    return dataclasses.replace(func, body=tuple(body)) if body != list(func.body) else func


def _cast(e, dtype: ir.DType) -> ir.Call:
    return ir.Call(dtype.value, (e,), loc=getattr(e, "loc", None))


def _is_cast(e, dtype: ir.DType) -> bool:
    return isinstance(e, ir.Call) and e.fn == dtype.value
