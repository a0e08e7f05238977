"""Rewrites of a function that give the MLU's recipes programs they map, tried when a schedule still holds scalar
kernels and kept when the MLU cost model estimates the rewritten program faster (each with its missed remarks):

| rewrite | what it does (module) |
|---|---|
| reshapes as views | index arithmetic that reshapes (`x[i, k * 64 + l]`, `x[m // 64, m % 64]`) as reshape views of the tensors (passes/builtin/delinear.py; also a pass of the default pipeline) |
| permuted operands | operands read in another axis order moved by permutations of their own first (permuted.py) |

The rewrites compose: each is applied to the function and to every earlier rewrite of it (a reshape written as
index arithmetic that also transposes, `y[b, h, s, d] = x[b, s, h * 64 + d] * w[h * 64 + d]`, needs both). (Index values read from index tensors,
iotas.py, run before these from schedule.py: they need the tensors declared as they are.)
"""
from __future__ import annotations

from gir import ir
from gir.errors import GirError
from gir.shapes import func_info
from gir.verifier import verify_module


def rewrites_if_faster(out: ir.Func, spec: ir.Func, schedule, remarks, choices, marks) -> ir.Func:
    """`out` (the schedule of `spec`, sizes specialised), or the schedule of a rewrite of `spec` the cost model
    estimates faster. `schedule(func, remarks, choices)` schedules a rewritten function; `marks`: the lengths of
    `remarks` and `choices` before `out` was scheduled (a rewrite kept replaces what `out` said)."""
    from gir.passes.schedule_mlu.cost import estimate
    best = _Best(out, estimate(out).seconds)
    bases = [(spec, [], [])]   # (program, its remarks, its rewrites): each rewrite applies to every earlier one
    for rewrite in (_delinearized, _permuted):
        made = []
        for base, said0, what0 in bases:
            for variant, said, what in rewrite(base):
                made.append((variant, said0 + said, what0 + [what]))
                best.consider(variant, said0 + said, " and ".join(what0 + [what]), schedule)
        bases += made
    if best.out is out:
        return out
    for got, n in ((remarks, marks[0]), (choices, marks[1])):
        if got is not None:
            del got[n:]
    if remarks is not None:
        remarks.extend(best.remarks)
    if choices is not None:
        choices.extend(best.choices)
    return best.out


class _Best:
    def __init__(self, out: ir.Func, seconds: float):
        self.out, self.seconds = out, seconds
        self.remarks: list = []
        self.choices: list = []

    def consider(self, variant: ir.Func, said: list, what: str, schedule) -> None:
        from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
        got_r: list = []
        got_c: list = []
        try:
            alt = schedule(variant, got_r, got_c)
            verify_module(ir.Module((alt,)))
            seconds = estimate(alt).seconds
        except (GirError, ValueError, KeyError):
            return
        if not MLU_RANKING.beats(seconds, self.seconds):
            return
        from gir.passes.remarks import Remark
        self.remarks = got_r + [Remark("schedule-mlu", "missed", m, loc) for m, loc in said]
        self.choices = got_c + [f"{what}: estimate {seconds * 1e6:.1f} us, otherwise {self.seconds * 1e6:.1f} us"]
        self.out, self.seconds = alt, seconds


def _delinearized(spec: ir.Func):
    from gir.passes.builtin.delinear import delinearize
    got = delinearize(spec)
    if got is not None:
        yield got, [], "reshapes written as index arithmetic seen as reshape views (passes/builtin/delinear.py)"


def _permuted(spec: ir.Func):
    """Both layouts on ties (the result's, an operand's): the cost model chooses."""
    from gir.passes.schedule_mlu.permuted import permute_operands
    types = func_info(spec).types
    seen: list = []
    for keep in (True, False):
        variant, moved = permute_operands(spec, types, keep)
        if not moved or moved in seen:
            continue
        seen.append(moved)
        yield variant, [(_moved_message(m), m.loc) for m in moved], \
            "operands moved into one axis order first (permuted.py)"


def _moved_message(m) -> str:
    how = (f"'{m.stmt}' is computed in the axis order of its operands into '{m.name}', which a permutation of "
           f"its own then moves into '{m.stmt}'" if m.source == m.stmt else
           f"'{m.source}' is read by '{m.stmt}' in another axis order than it computes in: a permutation of "
           f"its own moves it into '{m.name}' first")
    return f"{how} (through GDRAM: one more read and write of it; no MLU kernel fuses a transpose with computation)"
