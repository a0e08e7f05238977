"""Operator-layer function → explicit GPU function: partition, search each group, emit, parse back."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from gir import ir
from gir.errors import GirError
from gir.parser import parse_text
from gir.printer import format_type
from gir.shapes import _walk, func_info
from passes.schedule import shift, split
from passes.schedule.cost import search
from passes.schedule.generic import GenericKernel
from passes.schedule.groups import Group, partition
from passes.schedule.rows import RowConfig, RowKernel, _Unsupported
from passes.schedule.transpose import TransposeKernel
from passes.machines import machine_for

TARGETS = ("cuda", "hip", "sim")


@dataclass
class GroupPlan:
    """What the search chose for one statement group (for reports)."""
    statements: list[str]
    strategy: str                 # row-block | row-warp | generic | transpose
    kernels: list[str]
    config: RowConfig | None = None
    estimate: dict = field(default_factory=dict)
    candidates: int = 0
    rejected: list = field(default_factory=list)   # [(RowConfig, [check error messages])]


@dataclass
class FuncPlan:
    func: str
    groups: list[GroupPlan]
    seconds: float = 0.0          # compile (search + emission) time


def _options(target: str, options: dict | None):
    if target not in TARGETS:
        raise GirError(f"unknown GPU target '{target}' (expected one of {', '.join(TARGETS)})")
    opts = dict(options or {})
    m = machine_for(target, opts.get("machine"))
    hints = {k: int(v) for k, v in (opts.get("sizes") or {}).items()}
    return m, hints, opts


def lower_func(func: ir.Func, target: str = "cuda", options: dict | None = None) -> ir.Func:
    """One operator-layer function → an explicit function with the same signature."""
    return _lower(func, target, options)[0]


def plan_func(func: ir.Func, target: str = "cuda", options: dict | None = None) -> FuncPlan:
    return _lower(func, target, options)[1]


def _lower(func: ir.Func, target: str, options: dict | None) -> tuple[ir.Func, FuncPlan]:
    t0 = time.perf_counter()
    m, hints, opts = _options(target, options)
    if func.is_explicit:
        return func, FuncPlan(func.name, [], 0.0)
    info = func_info(func)
    groups = partition(info)
    results = {p.name for p in func.results}
    # strategy per group: try the fused row kernel; otherwise one generic kernel per statement
    built: list[tuple[Group, object]] = []
    for g in groups:
        impl = None
        if g.kind == "rows" and len(g.R) <= 3:
            try:
                impl = RowKernel(g, info, set(), m.warp)
            except _Unsupported:
                impl = None
        elif g.kind == "transpose":
            impl = TransposeKernel(g, info)
        built.append((g, impl))
    # names that must live in global memory: results, and anything read by a later group / kernel
    stores = set(results)
    for gi, (g, impl) in enumerate(built):
        produced = set(g.targets)
        if impl is None:
            stores |= produced  # generic kernels communicate through global memory
        for g2, _ in built[gi + 1:]:
            for st in g2.stmts:
                for x in _walk(st.stmt.value):
                    if isinstance(x, ir.Ref) and x.name in produced:
                        stores.add(x.name)
    # row groups: candidates in rank order (a forced config first); the chosen one must pass the checks
    choices: dict[int, _RowChoice] = {}
    for gi, (g, impl) in enumerate(built):
        if isinstance(impl, RowKernel):
            rk = RowKernel(g, info, stores, m.warp)
            choices[gi] = _RowChoice(rk, _ranked(rk, m, hints, opts))
    check = opts.get("check", True)
    while True:
        out, plans, owners = _assemble(func, info, built, choices, stores, results, m, hints)
        if not check:
            break
        failed = _check(out, owners, choices, target, [g for g, _ in built])
        if not failed:
            break
    return out, FuncPlan(func.name, plans, time.perf_counter() - t0)


def _assemble(func, info, built, choices, stores, results, m, hints):
    """Emit every group with its current choice and parse the function back.
    Returns (func, plans, {kernel name: group index})."""
    items: list[str] = []
    kernels: list[str] = []
    plans: list[GroupPlan] = []
    owners: dict[str, int] = {}
    for gi, (g, impl) in enumerate(built):
        base = f"{func.name}_{gi}"
        if gi in choices:
            texts_, plan, extra = _emit_rows(choices[gi], base, m)
            kernels.extend(texts_)
            plans.append(plan)
            items.extend(extra)
        elif isinstance(impl, TransposeKernel):
            kernels.append(impl.emit(base, m.warp))
            plans.append(GroupPlan(g.targets, "transpose", [base], estimate={"tile": "32x33 shared"}))
        else:
            names = []
            for k, st in enumerate(g.stmts):
                kname = f"{base}_{k}" if len(g.stmts) > 1 else base
                kernels.append(GenericKernel(st, info, m.warp, hints).emit(kname))
                names.append(kname)
            plans.append(GroupPlan(g.targets, "generic" if g.kind != "colreduce" else "thread-serial",
                                   names))
        for n in plans[-1].kernels:
            owners[n] = gi
    texts = dict(zip([n for p in plans for n in p.kernels], kernels))
    for name in sorted(stores - results):
        t = info.types[name]
        items.append(f"alloc {name}: {format_type(t)} @global")
    params = ", ".join(f"{p.name}: {format_type(p.type)}" for p in func.params)
    res = ", ".join(f"{p.name}: {format_type(p.type)}" for p in func.results)
    body = "\n".join(items + kernels)
    text = f"func {func.name}({params}) -> ({res}) {{\n{body}\n}}\n"
    try:
        out = parse_text(text, f"<schedule {func.name}>").funcs[0]
    except GirError as exc:  # a scheduler bug: show the generated text
        raise GirError(f"internal error: the scheduler emitted invalid GIR for '{func.name}': {exc}\n{text}") from None
    for gi, ch in choices.items():
        plans[gi].rejected = list(ch.rejected)
    header = "\n".join([f"{params} -> {res}"] + items)
    return out, plans, {n: (gi, header, texts[n]) for n, gi in owners.items()}


class _RowChoice:
    """The ranked candidates of one row group and the position of the current one."""

    def __init__(self, rk: RowKernel, cands: list):
        self.rk, self.cands, self.pos = rk, cands, 0
        self.rejected: list[tuple[RowConfig, list[str]]] = []

    @property
    def current(self):
        return self.cands[self.pos]

    def reject(self, errors: list) -> None:
        """Discard the current candidate and move to the next one the failure does not also condemn:
        an alignment error rules out every candidate with that vector width or wider, a capacity
        error every block team at least as large."""
        cfg = self.current[0]
        self.rejected.append((cfg, [d.message for d in errors]))
        kinds = {d.check for d in errors}

        def condemned(c: RowConfig) -> bool:
            if c == cfg:
                return True
            if "alignment" in kinds and cfg.vec > 1 and c.vec >= cfg.vec:
                return True
            return "capacity" in kinds and c.rows_per_block == cfg.rows_per_block and c.threads >= cfg.threads
        self.pos += 1
        while self.pos < len(self.cands) and condemned(self.cands[self.pos][0]):
            self.pos += 1
        if self.pos >= len(self.cands) or len(self.rejected) >= MAX_REJECTIONS:
            if all(any(m.startswith("[bounds]") for m in ms) for _, ms in self.rejected):
                raise _bounds_error(self.rk.g, [m for _, ms in self.rejected for m in ms])
            msgs = "; ".join(m for _, ms in self.rejected for m in ms[:1])
            raise GirError(f"internal error: no candidate of group {self.rk.g.targets} passes the kernel "
                           f"checks ({len(self.rejected)} rejected: {msgs})")


MAX_REJECTIONS = 12
_CHECKED: dict[tuple[str, str, str], list] = {}   # (target, signature + allocs, kernel text) -> errors


def _bounds_error(g: Group, messages: list[str]) -> GirError:
    """Every schedule of group `g` reads or writes out of bounds: the source indices leave the tensor
    (e.g. `x[i, N - j]`); point at the first source access of the tensor the check names."""
    import re

    first = next(m for m in messages if m.startswith("[bounds]"))
    named = re.search(r"of '(\w+)'", first)
    loc = g.stmts[0].stmt.loc
    for st in g.stmts:
        refs = [x for x in _walk(st.stmt.value) if isinstance(x, ir.Ref)]
        hit = next((x for x in refs if named and x.name == named.group(1) and x.loc), None)
        if hit is not None:
            loc = hit.loc
            break
    what = f"'{named.group(1)}'" if named else "a tensor"
    return GirError(f"{what} is accessed out of bounds: an index leaves the tensor for some index values", loc,
                    [f"every schedule fails the bounds check, e.g. {first}"])


def _check(out: ir.Func, owners: dict, choices: dict[int, _RowChoice], target: str,
           groups: list[Group]) -> bool:
    """Check every kernel of `out` (cached by structure); reject failing row candidates.
    Returns whether anything was rejected (the function must be emitted again)."""
    from passes.analysis.checks import check_kernel
    ctarget = "hip" if target == "hip" else "cuda"
    failed = False
    for k in out.kernels:
        gi, header, text = owners[k.name]
        key = (ctarget, header, text)
        if key not in _CHECKED:
            if len(_CHECKED) > 4096:
                _CHECKED.clear()
            _CHECKED[key] = [d for d in check_kernel(out, k, ctarget) if d.severity == "error"]
        errors = _CHECKED[key]
        if not errors:
            continue
        if gi not in choices:
            if any(d.check == "bounds" for d in errors):
                raise _bounds_error(groups[gi], [d.message for d in errors])
            raise GirError(f"internal error: scheduled kernel '{k.name}' fails the kernel checks: "
                           + "; ".join(d.message for d in errors))
        choices[gi].reject(errors)
        failed = True
    return failed


def _ranked(rk: RowKernel, m, hints, opts) -> list:
    """[(RowConfig, Estimate | None)] best first; a forced `row_config` goes first."""
    sizes = [c.dtype.nbytes for c in rk.colrefs] + [rk.types[n].dtype.nbytes for n in rk.full_stores]
    vmax = max(1, 16 // max(sizes, default=4))
    ranked = [(e.config, e) for e in search(rk, m, hints, vmax)]
    forced = opts.get("row_config")
    if forced is not None:
        ranked = [(forced, None)] + [(c, e) for c, e in ranked if c != forced]
    return ranked


def _emit_rows(ch: _RowChoice, name: str, m) -> tuple[list[str], GroupPlan, list[str]]:
    rk = ch.rk
    best_cfg, est = ch.current
    guards = _guards(rk, best_cfg)
    fallback = RowConfig(best_cfg.threads, best_cfg.rows_per_block, 1, 0, best_cfg.persistent, best_cfg.split)
    texts = [rk.emit(best_cfg, name, fallback if guards else None, guards, _middle(rk, best_cfg, guards))]
    names, extra = [name], []
    strategy = "row-warp" if best_cfg.rows_per_block > 1 or best_cfg.threads == m.warp else "row-block"
    if best_cfg.split:
        extra = split.part_allocs(rk, name, best_cfg.split)
        texts.append(split.emit_final(rk, best_cfg, f"{name}_final", name))
        names.append(f"{name}_final")
        strategy = "row-split"
    info = {}
    if est is not None:
        info = {"seconds": est.seconds, "dram_bytes": est.dram_bytes, "l2_bytes": est.l2_bytes,
                "blocks": est.blocks, "threads_per_block": est.threads_per_block, "regs": est.regs,
                "smem": est.smem, **est.notes}
    return texts, GroupPlan([s.stmt.target.name for s in rk.g.stmts], strategy, names, best_cfg, info,
                            len(ch.cands)), extra


def _middle(rk: RowKernel, cfg: RowConfig, guards: list[str]) -> list[tuple[list[str], RowConfig]]:
    """Between a vectorised register-cached path and the scalar re-reading fallback: the same row cache
    with vec = 1 (coalesced scalar lanes, masked tail), for row lengths that are not multiples of the
    vector width. Every element is then still read once and written once."""
    if not (cfg.cached and cfg.vec > 1 and not cfg.split):
        return []
    mid = RowConfig(cfg.threads, cfg.rows_per_block, 1, cfg.cached * cfg.vec, cfg.persistent, 0,
                    cfg.inner * cfg.vec)
    mg = _guards(rk, mid)
    if not mg or mg == guards:
        return []
    return [(mg, mid)]


def _guards(rk: RowKernel, cfg: RowConfig) -> list[str]:
    from gir.printer import format_expr
    from passes.schedule.emit import dim_expr
    guards: list[str] = []
    if cfg.shift:
        return shift.guards(rk, cfg)
    if cfg.vec > 1:
        exts = [c.align_ext for c in rk.colrefs if c.mode == "vec" and c.aligned_offset]
        exts += [rk.types[n].shape[-1] for n in rk.full_stores]
        for e in exts:
            g = f"{e} % {cfg.vec} == 0"
            if isinstance(e, str) and g not in guards:
                guards.append(g)
    if cfg.cached and cfg.inner:
        outer = rk.g.C[0]
        if not isinstance(outer, int):
            guards.append(f"{outer} <= {cfg.cached // cfg.inner}")
        if not isinstance(rk.cin_ext, int):
            guards.append(f"{format_expr(dim_expr(rk.cin_ext))} <= {cfg.inner * cfg.threads * cfg.vec}")
    elif cfg.cached and not isinstance(rk.cin_ext, int):
        guards.append(f"{format_expr(dim_expr(rk.cin_ext))} <= {cfg.cached * cfg.threads * cfg.vec}")
    return guards
