"""Segment schedules shared by the searches of one function (`shared_segments`).

The MLU schedule of a function with several statements splits it into consecutive fused segments (segments.py),
scheduling every candidate segment; the IDFG's groups (passes/middle/search/mlu_groups.py) are then scheduled as
functions of their own, whose splits schedule many of the same segments again under other names
(samples/cumsum.gir: `cumsum_p0_2` and `cumsum_g0_p0_2`, the row scans' group). Inside `shared_segments()` a
segment scheduled once is taken again with its names changed: the kernels and GDRAM temporaries the schedule
named after the segment, and its remarks and decision records. The key is the segment's function without its
name, the settings of the schedule and the global modes it depends on (schedule.py `_modes`: views, exact
division, index tensors in f32 tiles); the cache lives for the one `with` block (the cost model or a recipe
changed between two compilations -- a test's monkeypatch -- never meets a stale schedule).
"""
from __future__ import annotations

import dataclasses
import re
from contextlib import contextmanager
from typing import Callable

from gir import ir
from gir.passes.schedule_mlu.segments import Unfused

_CACHE: dict | None = None   # (segment without its name, settings + modes) -> (schedule, remarks, choices, name),
#                              or the name of a segment refused (`Unfused`)


@contextmanager
def shared_segments():
    """Segment schedules memoised for the duration of the block (nested blocks share the outer one's)."""
    global _CACHE
    outer = _CACHE
    if outer is None:
        _CACHE = {}
    try:
        yield
    finally:
        _CACHE = outer


def scheduled(sub: ir.Func, settings: tuple, schedule: Callable, remarks: list, choices: list) -> ir.Func:
    """`schedule(sub, remarks, choices)`, or, inside `shared_segments()`, the schedule of an equal segment taken
    before (renamed; `Unfused` raised again as it was)."""
    if _CACHE is None:
        return schedule(sub, remarks, choices)
    try:
        key = (dataclasses.replace(sub, name=""), settings)
        got = _CACHE.get(key)
    except TypeError:   # (an unhashable attribute: not memoised)
        return schedule(sub, remarks, choices)
    if got is None:
        mine_r: list = []
        mine_c: list = []
        try:
            done = schedule(sub, mine_r, mine_c)
        except Unfused:
            _CACHE[key] = sub.name
            raise
        got = _CACHE[key] = (done, mine_r, mine_c, sub.name)
    if isinstance(got, str):
        raise Unfused(sub.name)
    done, mine_r, mine_c, old = got
    if old != sub.name:
        users = {p.name for p in sub.params + sub.results} | \
            {x.target.name for x in sub.body if isinstance(x, ir.Assign)}   # (the program's own names: kept)
        done, mine_r, mine_c = _renamed(done, mine_r, mine_c, old, sub.name, users)
    remarks.extend(mine_r)
    choices.extend(mine_c)
    return done


def _renamed(done: ir.Func, remarks: list, choices: list, old: str, new: str, users: set) -> tuple:
    """The schedule, remarks and choices with every name derived from the segment's (`old` + '_...', not one of
    the program's `users` names) derived from `new` instead."""
    names = {x.name: new + x.name[len(old):] for x in done.body
             if isinstance(x, (ir.Kernel, ir.Alloc)) and x.name.startswith(old + "_") and x.name not in users}
    word = re.compile(r"(?<![0-9A-Za-z_])" + re.escape(old) + r"(?![0-9A-Za-z])")

    def text(s: str) -> str:
        return word.sub(new, s)
    out = dataclasses.replace(_rename(done, names), name=new)
    remarks = [dataclasses.replace(r, message=text(r.message), notes=tuple(text(n) for n in r.notes))
               for r in remarks]
    choices = [text(c) if isinstance(c, str) else c for c in choices]
    return out, remarks, choices


def _rename(x, names: dict):
    """`x` with the kernels, allocations and references named in `names` renamed (every IR node below it)."""
    if isinstance(x, tuple):
        items = tuple(_rename(y, names) for y in x)
        return x if all(a is b for a, b in zip(items, x)) else items
    if not dataclasses.is_dataclass(x) or isinstance(x, type) or isinstance(x, ir.Loc):
        return x
    changes = {}
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        w = _rename(v, names)
        if w is not v:
            changes[f.name] = w
    if isinstance(x, (ir.Ref, ir.Alloc, ir.Kernel)) and x.name in names:
        changes["name"] = names[x.name]
    return dataclasses.replace(x, **changes) if changes else x
