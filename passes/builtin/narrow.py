"""Results stored in a 16-bit float type and read again: their value, as the later statements read it.

A result `t: f16[...]` holds its value rounded to f16, and that is what a later statement reading `t` sees (the
evaluator's meaning). The middle and the MLU schedules may hand the value to its readers on chip instead of
through memory (a fused group, a recomputed element-wise producer), where it is held in f32: without the
rounding, a reader computes with a more precise value than the program says (`t1 = 0.5 * x + t0` gave a t1 one
f16 ulp off in places, and `(x - t1) * 1000` 4e-4 off in f32). `round_read_results` writes the rounding into the
value, `t0[i] = f16(...)`, so every path that recomputes or forwards it rounds. Only results some later
statement reads are touched (a stored-only result is rounded by its store), and not scans (a scan is the whole
right-hand side of its statement; its kernels round once per result) or values already cast to the type.
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
    read = set()
    for k in range(len(body) - 1, -1, -1):     # results read by a later statement
        s = body[k]
        if not isinstance(s, ir.Assign):
            continue
        name = s.target.name
        if name in narrow and name in read and scan_of(s.value) is None and \
                not (isinstance(s.value, ir.Call) and s.value.fn == narrow[name].value):
            body[k] = dataclasses.replace(s, value=ir.Call(narrow[name].value, (s.value,), loc=s.value.loc
                                                           if hasattr(s.value, "loc") else None))
        read |= {r.name for r in refs(s.value)}
    return dataclasses.replace(func, body=tuple(body)) if body != list(func.body) else func
