"""A function no MLU recipe covers as a whole, split into consecutive segments by the cost model.

When no recipe maps a multi-statement function (recipes.py), it used to run op by op: one kernel per statement,
every intermediate through GDRAM. Here every run of consecutive statements (in program order, which is a
dependence order) is scheduled as a function of its own -- its inputs the names it reads and does not produce
(parameters or values of earlier statements), its outputs the values it produces that are results or that later
statements read (kept in GDRAM) -- with `split=False` (a run no recipe covers is not a candidate), and dynamic
programming over the prefixes finds the split whose estimated time (passes/schedule_mlu/cost.py, the sum over its
kernels) is the lowest: O(n^2) runs for n statements. The op-by-op program is one of the splits (every statement
alone), so the split is never estimated slower; a column mean followed by a row normalisation of the centred
values (`cm[j] = mean(x[i, j])`, `rs[i] = sum(d * d)`, `y = d / sqrt(rs + 1)`) becomes a column reduction and one
row kernel instead of three kernels that read x three times.

A segment may view its tensors with merged axes (the tile recipe's `x: f32[A, B, C] as [A * B, C]`) when the
function can declare that view: the tensor is a parameter or result, and every other chosen segment that accesses
it views it alike (`view_clashes`); a chosen segment whose views clash is scheduled again without views and the
split chosen again. `s[c] = min(x[a, b, c])` beside `y = (x - s[c]) * max(x, f32(c))` ran its reduction over the
two leading axes as a scalar kernel (27.5 ms at 85 x 127 x 151); with merged axes it is a tile kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.errors import GirError
from gir.walk import walk

MAX_STMTS = 8   # beyond this the split is not searched (the op-by-op program stands): n (n + 1) / 2 schedules


NO_VIEWS: set = set()   # segments being scheduled: no merged-axis views (schedule._views_ok); unlike the op-by-op
#                         baseline's own guard (opbyop._ACTIVE) this keeps its statement splitting available


class Unfused(Exception):
    """A multi-statement function no recipe covers (schedule_mlu with `split=False`)."""


@dataclass
class Split:
    segments: list[list[str]]    # the targets of each segment's statements
    items: list                  # GDRAM temporaries, then every segment's kernels in order
    seconds: float
    remarks: list
    choices: list
    views: dict                  # parameters and results the segments view (merged axes): name -> viewed Param


def part_function(func: ir.Func, idx: list[int], types: dict, name: str) -> ir.Func | None:
    """The statements `idx` (positions among func's assignments, sizes specialised) as a function: inputs the names
    they read and do not produce, outputs what they produce that func returns or other statements read; None when
    they output nothing."""
    assigns = [s for s in func.body if isinstance(s, ir.Assign)]
    reads = [{x.name for x in walk(a.value) if isinstance(x, ir.Ref)} for a in assigns]
    params = {p.name: p for p in func.params}
    results = {p.name: p for p in func.results}
    produced = [assigns[i].target.name for i in idx]
    inputs = sorted({n for i in idx for n in reads[i]} - set(produced))
    later = {n for i, r in enumerate(reads) if i not in idx for n in r}
    outputs = [n for n in produced if n in results or n in later]
    if not outputs:
        return None
    return ir.Func(name, tuple(params.get(n) or ir.Param(n, types[n], loc=func.loc) for n in inputs),
                   tuple(results.get(n) or ir.Param(n, types[n], loc=func.loc) for n in outputs),
                   tuple(assigns[i] for i in idx), loc=func.loc)


def split(spec: ir.Func, types: dict, schedule, check=None) -> Split | None:
    """The cheapest split of `spec`'s statements into consecutive segments with at least one segment of two or
    more statements, or None (one statement, too many, or no such split schedules). `schedule(sub, remarks,
    choices)` schedules one segment's function with `split=False`; `check(done)` (the verifier) raises on a
    scheduled segment that is not a candidate after all -- run on the chosen segments only (most of the
    scheduled ones are not chosen), the split chosen again without a segment it refuses."""
    from gir.passes.schedule_mlu.cost import estimate
    n = sum(isinstance(s, ir.Assign) for s in spec.body)
    if n < 2 or n > MAX_STMTS:
        return None
    memo: dict[tuple[int, int], tuple | None] = {}

    def seg(a: int, b: int):
        if (a, b) not in memo:
            sub = part_function(spec, list(range(a, b)), types, f"{spec.name}_p{a}_{b}")
            if sub is None:
                memo[a, b] = (0.0, None, [], [])
                return memo[a, b]
            remarks: list = []
            choices: list = []
            if (a, b) in plain:   # no merged-axis views: its views clashed with another segment's
                NO_VIEWS.add(sub.name)
            try:
                done = schedule(sub, remarks, choices)
                memo[a, b] = (estimate(done).seconds, done, remarks, choices)
            except (Unfused, GirError, ValueError, KeyError, AssertionError, TypeError, IndexError):
                memo[a, b] = None   # not a candidate (a recipe's refusal or failure on this run)
            finally:
                NO_VIEWS.discard(sub.name)
        return memo[a, b]

    checked: set = set()
    plain: set = set()   # segments scheduled without views (their views clashed)
    while True:
        best: list = [(0.0, [])] + [None] * n
        for k in range(1, n + 1):
            for j in range(k):
                s = seg(j, k)
                if s is None or best[j] is None:
                    continue
                cost = best[j][0] + s[0]
                if best[k] is None or cost < best[k][0]:
                    best[k] = (cost, best[j][1] + [(j, k)])
        if best[n] is None or all(b - a == 1 for a, b in best[n][1]):
            return None
        refused = [(a, b) for a, b in best[n][1] if (a, b) not in checked and not _checks(check, memo[a, b][1])]
        chosen = [(a, b) for a, b in best[n][1] if memo[a, b] is not None and memo[a, b][1] is not None]
        clash = [chosen[i] for i in view_clashes(spec, [memo[x][1] for x in chosen]) if chosen[i] not in plain]
        if not refused and not clash:
            break
        for a, b in refused:
            memo[a, b] = None
        for a, b in clash:   # (again without views: at most once each)
            plain.add((a, b))
            del memo[a, b]
        checked.update(x for x in best[n][1] if x not in clash)
    assigns = [s for s in spec.body if isinstance(s, ir.Assign)]
    remarks: list = []
    choices: list = []
    for a, b in best[n][1]:
        remarks += memo[a, b][2]
        choices += memo[a, b][3]
    parts = [memo[a, b][1] for a, b in best[n][1] if memo[a, b][1] is not None]
    items = compose(spec, parts)
    segments = [[assigns[i].target.name for i in range(a, b)] for a, b in best[n][1]]
    views = {p.name: p for part in parts for p in part.params + part.results if p.view is not None}
    return Split(segments, items, best[n][0], remarks, choices, views)


def view_clashes(func: ir.Func, parts: list[ir.Func]) -> set[int]:
    """The parts (positions) whose views a composition of them cannot declare: a view of a value crossing between
    parts (a GDRAM temporary, declared unviewed), or of a parameter or result that another part accesses declared
    otherwise. Views of tensors only that part accesses, or viewed alike, compose (the composed function declares
    them so)."""
    from gir.printer import format_param
    declared = {p.name for p in func.params + func.results}
    spelled: dict[str, set[str]] = {}
    for part in parts:
        for p in part.params + part.results:
            spelled.setdefault(p.name, set()).add(format_param(p) if p.view is not None else "")
    return {i for i, part in enumerate(parts) for p in part.params + part.results
            if p.view is not None and (p.name not in declared or len(spelled[p.name]) > 1)}


def _checks(check, done: ir.Func | None) -> bool:
    if check is None or done is None:
        return True
    try:
        check(done)
        return True
    except (GirError, ValueError, KeyError, AssertionError, TypeError, IndexError):
        return False


def compose(func: ir.Func, parts: list[ir.Func]) -> list:
    """The body of `func` run as its scheduled parts in order: a GDRAM temporary for every value a part outputs
    that `func` does not return (read by a later part), then every part's items."""
    results = {p.name for p in func.results}
    crossing: dict[str, ir.TensorType] = {}
    items: list = []
    for done in parts:
        crossing.update({p.name: p.type for p in done.results if p.name not in results})
        items.extend(done.body)
    return [ir.Alloc(name, t, ir.Level.gdram, loc=func.loc) for name, t in crossing.items()] + items


def describe(sp: Split) -> str:
    parts = " ".join("[" + ", ".join(f"'{t}'" for t in s) + "]" for s in sp.segments)
    return f"it runs as {len(sp.segments)} segments {parts} (estimate {sp.seconds * 1e6:.1f} us)"

