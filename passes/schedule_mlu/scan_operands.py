"""Scan operands the MLU scan kernel cannot compute on chip (passes/schedule_mlu/scan.py), computed by a statement
of their own first: the function is rewritten before it is scheduled."""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.scan import scan_of
from gir.shapes import func_info
from gir.passes.schedule_mlu.scan import _Kernel, _Plan


def materialize_operands(func: ir.Func, spec: ir.Func, remarks=None) -> ir.Func:
    """`func` with the operand E of every scan the MLU scan kernel cannot compute on chip (a tensor read along
    another axis, an operation the three-address form lacks) computed by a statement of its own first:
    `y = cumsum(E, s)` becomes `y_e = E; y = cumsum(y_e, s)` (the intermediate goes through GDRAM; remarked).
    `spec` is `func` with its sizes specialised (the same statements)."""
    info = func_info(spec)
    body, changed = list(func.body), False
    for st in info.stmts:
        s = st.stmt
        if scan_of(s.value) is None or any(not isinstance(i, ir.Var) for i in s.target.index):
            continue
        try:
            plan = _Plan(s, dict(info.types), 32)
        except GirError:
            continue            # a result type the MLU scan does not run: its own located error later
        plan.choose(16)
        try:
            _Kernel(plan, dict(info.types), "probe").kernel()
            continue
        except GirError as e:
            why = e.message
        k = next(i for i, x in enumerate(body) if isinstance(x, ir.Assign) and x.target.name == s.target.name)
        orig = body[k]
        p = scan_of(orig.value)
        name = f"{orig.target.name}_e"
        t = ir.Ref(name, orig.target.index, loc=orig.loc)
        call = dataclasses.replace(p.call, args=(t,) + tuple(p.call.args[1:]))
        body[k:k + 1] = [ir.Assign(t, p.arg, loc=orig.loc), dataclasses.replace(orig, value=call)]
        changed = True
        if remarks is not None:
            from gir.passes.remarks import Remark
            remarks.append(Remark("schedule-mlu", "missed", f"the scan '{s.target.name}' reads its operand "
                                  f"through GDRAM ({why}): a statement of its own computes it into '{name}' "
                                  "first", orig.loc))
    return dataclasses.replace(func, body=tuple(body)) if changed else func
