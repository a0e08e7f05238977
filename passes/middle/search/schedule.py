"""`schedule`: the search. The IDFG becomes explicit GIR kernels, one decision record per fused group.

For every group (and, with cross-team reductions, for its peeled variant too) every recipe offers candidates:
`rows` (passes/schedule/rows.py), `tiles` (tiles.py), `transpose`, and `reference` (always). They are ranked by
one rule (candidate.rank) on the per-target cost model's estimates, emitted, parsed back and proven safe by the
static checks (bounds, races, barriers, alignment, overflow, capacity); a candidate that fails is replaced by
the next one, and a failure rules out the candidates it condemns (a misaligned vector width, a team too large).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar

from gir import ir
from gir.errors import GirError
from gir.parser import parse_text
from gir.printer import format_type
from gir.passes.base import ModulePass, PassContext
from gir.passes.machines import machine_for
from gir.passes.middle.graph import FuncGraph
from gir.passes.middle.search import reference, rows, scan, tiles, transpose
from gir.passes.middle.search.candidate import Candidate, rank
from gir.passes.middle.search.options import parse_hints
from gir.passes.middle.search.units import Unit, units_of

GPU_TARGETS = ("cuda", "hip", "sim")
REFERENCE_PENALTY = 100.0
MAX_REJECTIONS = 12


@dataclass
class GroupPlan:
    """What the search chose for one unit (for reports and tests)."""
    statements: list[str]
    strategy: str
    kernels: list[str]
    config: object = None
    estimate: dict = field(default_factory=dict)
    candidates: int = 0
    rejected: list = field(default_factory=list)   # [(config, [check error messages])]
    decision: object = None


@dataclass
class FuncPlan:
    func: str
    groups: list[GroupPlan]
    seconds: float = 0.0


@dataclass(frozen=True)
class Schedule(ModulePass):
    """Search a schedule for every group of the IDFG and emit explicit kernels (target: cuda, hip, sim or mlu-sim).

    sizes: size hints for the search ("M=4096,N=4096"; the kernels stay correct for all sizes; on mlu-sim the
    sizes every kernel is built for, one per size symbol); machine: h200, h100, a100, mi250x or mi300x (default: the
    target's; mlu370 on mlu-sim); check: prove every kernel safe (GPU targets). On mlu-sim the recipes are the
    MLU strategies of passes/schedule_mlu (search/mlu.py)."""
    name: ClassVar[str] = "schedule"
    consumes: ClassVar[str] = "idfg"
    produces: ClassVar[str] = "gir"
    target: str = "cuda"
    sizes: tuple[str, ...] = ()
    machine: str = ""
    check: bool = True

    def __post_init__(self) -> None:
        from gir.passes.middle.search.mlu import MLU_TARGETS, mlu_machine
        if self.target in MLU_TARGETS:
            mlu_machine(self.machine)
        elif self.target not in GPU_TARGETS:
            raise ValueError(f"unknown target '{self.target}' (expected one of "
                             f"{', '.join(GPU_TARGETS + MLU_TARGETS[:1])})")

    def apply(self, ctx: PassContext, graph) -> ir.Module:
        from gir.limits import refuse_empty_tensors
        from gir.passes.middle.search import mlu
        if mlu.is_mlu(self.target):
            return mlu.schedule_graph(ctx, graph, parse_hints(self.sizes))
        m = machine_for(self.target, self.machine or None)
        hints = parse_hints(self.sizes)
        opts = dict(ctx.options)
        opts.setdefault("check", self.check)
        funcs = []
        plans = ctx.artifacts.setdefault("plans", [])
        for f in graph.funcs:
            if isinstance(f, FuncGraph):
                # a hint binding a size to 0: no kernel over no elements (gir run / gir.compile specialise such a
                # binding first, gir/empty.py); located at the empty tensor, as `gir compile` and the MLU do
                refuse_empty_tensors(f.func, "scheduling", hints)
                func, plan = schedule_func(f, self.target, m, hints, opts, ctx)
                ctx.bump("schedule.kernels", len(func.kernels))
                funcs.append(func)
                plans.append(plan)
            else:
                funcs.append(f)
        return ir.Module(tuple(funcs), loc=graph.loc)


class _Choice:
    """The ranked candidates of one unit and the position of the current one."""

    def __init__(self, unit: Unit, cands: list[Candidate]):
        self.unit, self.cands, self.pos = unit, cands, 0
        self.rejected: list[tuple[object, list[str]]] = []
        self.kernel_names: list[str] = []

    @property
    def current(self) -> Candidate:
        return self.cands[self.pos]

    def reject(self, errors: list, g: FuncGraph) -> None:
        cur = self.current
        self.rejected.append((cur.config if cur.config is not None else cur.decision, [d.message for d in errors]))
        self.pos += 1
        while self.pos < len(self.cands) and cur.condemned_by is not None and \
                cur.condemned_by(errors, cur, self.cands[self.pos]):
            self.pos += 1
        if self.pos >= len(self.cands) or len(self.rejected) >= MAX_REJECTIONS:
            if all(any(m.startswith("[bounds]") for m in ms) for _, ms in self.rejected):
                raise _bounds_error(self.unit, [m for _, ms in self.rejected for m in ms])
            msgs = "; ".join(m for _, ms in self.rejected for m in ms[:1])
            names = [s.target for s in self.unit.stmts]
            raise GirError(f"internal error: no candidate of group {names} passes the kernel checks "
                           f"({len(self.rejected)} rejected: {msgs})")


def unit_candidates(g: FuncGraph, unit: Unit, target: str, m, hints, opts) -> list[Candidate]:
    out: list[Candidate] = []
    if scan.scan_units(unit):  # cumsum & co.: the scan recipe (the reference mapping cannot print a scan)
        return rank(scan.candidates(g, unit, m, hints))
    if unit.all_forwarded(g):
        team = set(unit.group.team)
        for rg in rows.row_groups(g, unit.stmts, None if unit.peeled else team, unit.group.varmap):
            names = rows.axis_names(rg, unit.stmts, unit.group.varmap)
            out += rows.candidates(g, rg, unit.stores(g), m, hints, opts, names)
        out += transpose.candidates(g, unit.stmts, m, hints)
        out += tiles.candidates(g, unit, m, hints)
    ref = reference.candidates(g, unit, m, hints)
    comp = unit.compulsory(g, hints)
    for c in out + ref:  # one measure of compulsory bytes for every recipe
        c.compulsory = comp
    if opts.get("row_config") is not None and out and out[0].estimate == {}:
        return out + ref  # a forced configuration goes first
    return rank(out) + ref if out else ref


def schedule_func(g: FuncGraph, target: str, m, hints: dict[str, int], opts: dict, ctx=None):
    t0 = time.perf_counter()
    choices: list[_Choice] = []
    for grp in g.groups:
        scored = []
        for variant in units_of(g, grp):
            if variant[0].variant == "op-by-op" and scored and not any(_scalar(c) for c in scored[0][0]):
                continue  # splitting a group op by op is only the fallback of one no tuned recipe maps
            cs = [_Choice(u, unit_candidates(g, u, target, m, hints, opts)) for u in variant]
            # a fused group left to the scalar reference kernel is the last resort, whatever its estimate
            seconds = sum(c.current.seconds * (REFERENCE_PENALTY if _scalar(c) else 1) for c in cs)
            traffic = sum(c.current.traffic for c in cs)
            comp = sum(c.current.compulsory for c in cs)
            scored.append((cs, seconds, traffic, comp))
        picked = _pick_variant(scored)
        if ctx is not None and picked[0].unit.variant == "op-by-op":
            names = ", ".join(f"'{g.stmts[s].target}'" for s in grp.stmts)
            ctx.remark("schedule", "missed", f"no tuned recipe maps the fused group {names}: it runs as "
                       f"{len(picked)} kernels, its values through global memory", g.stmts[grp.stmts[0]].loc,
                       _why_not(g, picked[0].unit, grp))
        choices += picked
    check = opts.get("check", True)
    while True:
        func, owners = _assemble(g, choices)
        if not check or not _check(func, owners, choices, target, g):
            break
    plans = [_plan(c) for c in choices]
    if ctx is not None:
        _remarks(g, choices, ctx)
    return func, FuncPlan(g.name, plans, time.perf_counter() - t0)


def _scalar(c: _Choice) -> bool:
    return c.current.decision.recipe == "reference" and len(c.unit.stmts) > 1


def _pick_variant(scored):
    """The variant with the best estimate, preferring one within the traffic goal (ranking.order, the GPU
    policy); `scored`: (variant, seconds, traffic bytes, compulsory bytes)."""
    from gir.passes.middle.search.candidate import GPU
    from gir.passes.middle.search.ranking import order
    if len(scored) == 1:
        return scored[0][0]
    return order(scored, lambda x: x[1], GPU, lambda x: x[2], min(x[3] for x in scored))[0][0]


def _assemble(g: FuncGraph, choices: list[_Choice]):
    kernels: list[str] = []
    owners: dict[str, tuple[int, str, str]] = {}
    stored = {b.name for b in g.buffers.values() if b.role == "temp" and b.stored}
    for c in choices:
        stored |= {t for t in c.unit.extra_stores if g.buffers[t].role == "temp"}
    allocs = [f"alloc {n}: {format_type(g.types[n])} @global" for n in sorted(stored)]
    emitted = []
    for k, c in enumerate(choices):
        e = c.current.emit(f"{g.name}_{k}")
        c.kernel_names = e.names
        emitted.append(e)
        allocs += e.allocs
    params = ", ".join(f"{p.name}: {format_type(p.type)}" for p in g.func.params)
    res = ", ".join(f"{p.name}: {format_type(p.type)}" for p in g.func.results)
    header = "\n".join([f"{params} -> {res}"] + allocs)
    for k, e in enumerate(emitted):
        kernels += e.kernels
        for name, text in zip(e.names, e.kernels):
            owners[name] = (k, header, text)
    text = f"func {g.name}({params}) -> ({res}) {{\n" + "\n".join(allocs + kernels) + "\n}\n"
    try:
        out = parse_text(text, f"<schedule {g.name}>", limits=False).funcs[0]
    except GirError as exc:  # a recipe bug: show the generated text
        raise GirError(f"internal error: the search emitted invalid GIR for '{g.name}': {exc}\n{text}") from None
    from dataclasses import replace
    # the source's signature, reshape views included (the kernels use the view's shape, which the parameters'
    # types already are): `gir compile --emit gir` output is called with the declared shapes, as the source
    return replace(out, loc=g.func.loc, params=g.func.params, results=g.func.results), owners


_CHECKED: dict[tuple[str, str, str], list] = {}


def _check(out: ir.Func, owners: dict, choices: list[_Choice], target: str, g: FuncGraph) -> bool:
    """Check every kernel (cached by text); reject failing candidates. Returns whether anything was rejected."""
    from gir.passes.analysis.checks import check_kernel
    ctarget = "hip" if target == "hip" else "cuda"
    failed = False
    bad: dict[int, list] = {}
    for k in out.kernels:
        ci, header, text = owners[k.name]
        key = (ctarget, header, text)
        if key not in _CHECKED:
            if len(_CHECKED) > 4096:
                _CHECKED.clear()
            _CHECKED[key] = [d for d in check_kernel(out, k, ctarget, index_type="auto") if d.severity == "error"]
        if _CHECKED[key]:
            bad.setdefault(ci, []).extend(_CHECKED[key])
    for ci, errors in bad.items():
        choices[ci].reject(errors, g)
        failed = True
    return failed


def _bounds_error(unit: Unit, messages: list[str]) -> GirError:
    """Every schedule of the unit reads or writes out of bounds: the source indices leave the tensor
    (e.g. `x[i, N - j]`); point at the first source access of the tensor the check names."""
    import re

    from gir.passes.builtin.exprs import refs
    first = next(m for m in messages if m.startswith("[bounds]"))
    named = re.search(r"of '(\w+)'", first)
    loc = unit.stmts[0].loc
    for st in unit.stmts:
        hit = next((x for x in refs(st.value) if named and x.name == named.group(1) and x.loc), None)
        if hit is not None:
            loc = hit.loc
            break
    what = f"'{named.group(1)}'" if named else "a tensor"
    return GirError(f"{what} is accessed out of bounds: an index leaves the tensor for some index values", loc,
                    [f"every schedule fails the bounds check, e.g. {first}"])


def _plan(c: _Choice) -> GroupPlan:
    cur = c.current
    return GroupPlan([s.target for s in c.unit.stmts], cur.strategy, list(c.kernel_names), cur.config,
                     dict(cur.estimate),
                     len(c.cands), list(c.rejected), cur.decision)


def _remarks(g: FuncGraph, choices: list[_Choice], ctx) -> None:
    for c in choices:
        cur = c.current
        loc = c.unit.stmts[0].loc
        names = ", ".join(f"'{s.target}'" for s in c.unit.stmts)
        ctx.remark("schedule", "analysis", f"{names}: {cur.decision.text()} (of {len(c.cands)} candidates; "
                   f"estimate {cur.seconds * 1e6:.1f} us, {cur.traffic / max(cur.compulsory, 1):.3f}x compulsory "
                   "bytes)", loc)
        if cur.estimate.get("remark"):
            ctx.remark("schedule", "missed", cur.estimate["remark"], loc)
        if cur.decision.recipe == "reference" and len(c.unit.stmts) > 1:
            ctx.remark("schedule", "missed", f"the fused group {names} has no tuned recipe and runs as a scalar "
                       "kernel (one thread per team)", loc, _why_not(g, c.unit, c.unit.group))
        elif cur.compulsory and cur.traffic > 1.10 * cur.compulsory and cur.traffic - cur.compulsory > 1 << 20:
            ctx.remark("schedule", "missed", f"{names} moves an estimated {cur.traffic / cur.compulsory:.2f}x "
                       f"its compulsory bytes ({cur.decision.text()})", loc)


def _why_not(g: FuncGraph, unit: Unit, grp) -> list[str]:
    whole = Unit([g.stmts[s] for s in grp.stmts], grp)
    if not whole.all_forwarded(g):
        return ["values of the group are read back from @global inside it (run forward-stores and promote)"]
    from gir.passes.middle.search.tiles import why_not
    return [why_not(g, whole)]
