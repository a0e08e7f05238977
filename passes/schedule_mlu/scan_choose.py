"""The MLU scan's forms, ranked (`scan_items`): the unit kernel of scan.py (work units: points of the other axes x
lane chunks), or the scan axis cut into ranges over the cores (scan_long.py along the last axis, scan_cols_long.py
along another, in lane chunks of the unit kernel's width or, for rows off the 64-byte DMA granule, as wide as the
row), whichever the MLU cost model estimates faster."""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.errors import GirError
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.scan import _Plan
from gir.passes.schedule_mlu.scan_size import unit_items
from gir.walk import walk


def scan_items(spec: ir.Func, info, tasks: int = 32, remarks=None, allow_sram: bool = True) -> list:
    """The kernel of a one-statement function `spec` (sizes specialised) whose statement is a scan;
    `allow_sram=False`: the long scans keep no tiles in SRAM."""
    st = info.stmts[0].stmt
    if any(not isinstance(i, ir.Var) for i in st.target.index):
        raise GirError("the MLU scan writes its result indexed by plain variables", st.target.loc)
    plan = _Plan(st, dict(info.types), tasks)
    plan.allow_sram = allow_sram
    plan.choose(16)
    from gir.passes.schedule_mlu import scan_cols_long
    from gir.passes.schedule_mlu.scan_long import applies, long_scan_items
    rows_long = applies(plan, [x for x in walk(plan.scan.arg) if isinstance(x, ir.Ref)])
    cols_plans = [plan] if scan_cols_long.applies(plan) else []
    if plan.layout == "cols" and (plan.nlanes * L.device_nbytes(plan.ydt)) % 64:
        # rows off the 64-byte DMA granule: lane chunks narrower than the row pay a partial granule at both ends
        # of every row segment, and a partially written one is read again (a column scan of 2039 x 2039 f32 in
        # 64-lane chunks: 1.58x the DMA roofline); one chunk as wide as the row (up to WIDE_LANES), the scan axis
        # cut into ranges over the cores, competes
        wide = _Plan(st, dict(info.types), tasks)
        wide.allow_sram, wide.wide = allow_sram, True
        wide.choose(16)
        if wide.W > plan.W and scan_cols_long.applies(wide):
            cols_plans.append(wide)
    if rows_long or cols_plans:
        # the scan axis cut into ranges over the idle cores (scan_long.py for the last axis, scan_cols_long.py for
        # the others) against the unit kernel: the cost model picks
        from gir.passes.schedule_mlu.cost import estimate

        def seconds(items) -> float:
            return estimate(dataclasses.replace(spec, body=tuple(items))).seconds if items else float("inf")
        longs = []   # (seconds, items, remarks)
        if rows_long:
            said: list = []
            longs.append((long_scan_items(plan, spec, dict(info.types), said, st.loc), said))
        for cp in cols_plans:
            said = []
            longs.append((scan_cols_long.cols_long_items(cp, spec, dict(info.types), said, st.loc), said))
        longs = [(seconds(items), items, said) for items, said in longs if items is not None]
        if longs:
            t_long, long, said_long = min(longs, key=lambda x: x[0])
            said_unit: list = []
            try:
                unit = unit_items(spec, info, _Plan(st, dict(info.types), tasks), said_unit)
            except GirError:   # no unit tile fits NRAM
                unit = None
            t_unit = seconds(unit)
            if remarks is not None:
                remarks.extend(said_long if t_long < t_unit else said_unit)
            if t_long < t_unit:
                return long
            if remarks is not None:
                from gir.passes.remarks import Remark
                remarks.append(Remark("schedule-mlu", "analysis", f"the scan '{st.target.name}' keeps the unit "
                                      f"kernel (estimate {t_unit * 1e6:.1f} us) over rows cut into ranges "
                                      f"({t_long * 1e6:.1f} us)", st.loc))
            return unit
    return unit_items(spec, info, plan, remarks)
