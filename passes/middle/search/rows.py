"""Recipe `rows`: the fused row kernel (passes/schedule/rows.py) as points of the search space.

A group fits when its statements are row statements over team axes R and in-team axes C (C innermost in
every full-rank tensor): reductions over C, element-wise statements over R + C or over R. The team is a block,
a warp (several rows per block), a persistent block looping over rows, or several blocks per row (split);
lanes take consecutive elements of the innermost C axis, `vec` at a time; inputs are cached in registers
across phases or re-read. Element-wise groups are also offered with fewer team axes (R a shorter prefix), so
operands broadcast over the leading axes are loaded once per persistent block.
"""
from __future__ import annotations

from gir import ir
from gir.shapes import FuncInfo, StmtInfo
from gir.passes.middle.search.candidate import Candidate, Emitted
from gir.passes.middle.search.decision import Decision
from gir.passes.schedule import halo, shift, split
from gir.passes.schedule.cost import search
from gir.passes.schedule.groups import Group, _fit, _refs_ok, partition
from gir.passes.schedule.rows import RowConfig, RowKernel, _Unsupported


def stmt_infos(g, stmts: list) -> list[StmtInfo]:
    """The statements as the scheduler's StmtInfo (values as the graph has them now)."""
    out = []
    for s in stmts:
        target = ir.Ref(s.target, tuple(ir.Var(v) for v in s.out_vars), loc=s.loc)
        out.append(StmtInfo(ir.Assign(target, s.value, loc=s.loc), s.out_vars, dict(s.ranges),
                            dict(s.reduce_vars)))
    return out


def row_groups(g, stmts: list, team: set[str] | None, varmap) -> list[Group]:
    """The ways the statements form one row group: the scheduler's own partition, then (element-wise groups)
    every shorter prefix of the output axes as R. R must consist of team axes of the fused group."""
    infos = stmt_infos(g, stmts)
    finfo = FuncInfo(g.func, g.types, infos, ())
    out: list[Group] = []
    parts = partition(finfo)
    if len(parts) == 1 and parts[0].kind == "rows" and len(parts[0].stmts) == len(stmts):
        out.append(parts[0])
    if not any(st.reduce_vars for st in infos):
        full = [st for st in infos if st.out_vars]
        if full:
            ext = [full[0].ranges[v] for v in full[0].out_vars]
            for k in range(1, len(ext) - 1):
                grp = Group([], ext[:k], ext[k:])
                for st in infos:
                    ren = _fit(st, grp.R, grp.C)
                    names = {x.stmt.target.name for x in grp.stmts}
                    if ren is None or not _refs_ok(st, ren, grp, names, set()):
                        break
                    grp.stmts.append(st)
                    grp.renames.append(ren)
                else:
                    if not any(x.R == grp.R for x in out):
                        out.append(grp)
    out = [grp for grp in out if len(grp.R) <= 3]  # the row kernel puts R on at most three grid dimensions
    if team is not None:  # R must be team axes of the fused group (the isl-proved partition)
        ok = []
        for grp in out:
            first = grp.stmts[0]
            rvars = [v for v, c in grp.renames[0].items() if c.startswith("_r")]
            axes = {varmap[_sid(stmts, first)][v] for v in rvars}
            if axes <= team:
                ok.append(grp)
        out = ok
    return out


def _sid(stmts, st) -> int:
    for s in stmts:
        if s.target == st.stmt.target.name:
            return s.id
    raise KeyError(st.stmt.target.name)


def axis_names(rg: Group, stmts: list, varmap) -> dict[str, str]:
    """The row kernel's canonical names (_r0, _c0, ...) -> the group's axis names (for decision records)."""
    out: dict[str, str] = {}
    for st, ren in zip(rg.stmts, rg.renames):
        sid = _sid(stmts, st)
        for var, canon in ren.items():
            out.setdefault(canon, varmap.get(sid, {}).get(var, var))
    return out


def candidates(g, rg: Group, stores: set[str], m, hints: dict[str, int], opts: dict,
               names: dict[str, str] | None = None) -> list[Candidate]:
    finfo = FuncInfo(g.func, g.types, rg.stmts, ())
    try:
        rk = RowKernel(rg, finfo, stores, m.warp)
    except _Unsupported:
        return []
    sizes = [c.dtype.nbytes for c in rk.colrefs] + [rk.types[n].dtype.nbytes for n in rk.full_stores]
    vmax = max(1, 16 // max(sizes, default=4))
    out = []
    forced = opts.get("row_config")
    ests = search(rk, m, hints, vmax)
    names = names or {}
    if forced is not None:
        out.append(_candidate(rk, forced, None, m, names))
    out += [_candidate(rk, e.config, e, m, names) for e in ests if forced is None or e.config != forced]
    return out


def _candidate(rk: RowKernel, cfg: RowConfig, est, m, names: dict[str, str]) -> Candidate:
    warp_mode = cfg.rows_per_block > 1 or cfg.threads == m.warp
    strategy = "row-split" if cfg.split else ("row-warp" if warp_mode else "row-block")
    team = "persistent" if cfg.persistent else ("warp" if warp_mode else "block")
    C = [names.get(f"_c{k}", f"_c{k}") for k in range(len(rk.g.C))]
    staged = halo.members(rk) if halo.active(cfg) else set()
    dec = Decision("rows", blocks=tuple(names.get(f"_r{k}", f"_r{k}") for k in range(len(rk.g.R))),
                   lanes=C[-1], warps=C[-1],
                   loops=tuple(C[:-1]), vec=cfg.vec, team=team, threads=cfg.threads,
                   tile=(("rows", cfg.rows_per_block),) if cfg.rows_per_block > 1 else (),
                   reduction="multi-block" if cfg.split else ("shuffle" if warp_mode else "shared")
                   if rk.slots else "none",
                   levels=tuple((c.ref.name, "shared" if i in staged else "reg" if cfg.cached else "stream")
                                for i, c in enumerate(rk.colrefs) if c.mode != "inv"),
                   notes={"persistent": cfg.persistent, "shift": cfg.shift, "halo": halo.active(cfg),
                          **({"split": f"{C[0]} over {cfg.split} blocks"} if cfg.outer else {})})
    info = {}
    if est is not None:
        info = {"seconds": est.seconds, "dram_bytes": est.dram_bytes, "l2_bytes": est.l2_bytes,
                "blocks": est.blocks, "threads_per_block": est.threads_per_block, "regs": est.regs,
                "smem": est.smem, **est.notes}
    seconds = est.seconds if est is not None else 0.0
    dram = est.dram_bytes if est is not None else 0.0
    l2 = est.l2_bytes if est is not None else 0.0
    comp = est.notes["compulsory"] if est is not None else 0.0

    def emit(name: str) -> Emitted:
        return _emit(rk, cfg, name)

    return Candidate(dec, strategy, seconds, dram, l2, comp, emit, cfg, info, _condemns)


def _condemns(errors, self_: Candidate, other: Candidate) -> bool:
    """A check failure of `self_` also rules out: any candidate with that vector width or wider (alignment),
    any block team at least as large (capacity)."""
    a, b = self_.config, other.config
    if not isinstance(a, RowConfig) or not isinstance(b, RowConfig):
        return False
    kinds = {d.check for d in errors}
    if b == a:
        return True
    if "alignment" in kinds and a.vec > 1 and b.vec >= a.vec:
        return True
    return "capacity" in kinds and b.rows_per_block == a.rows_per_block and b.threads >= a.threads


def _emit(rk: RowKernel, cfg: RowConfig, name: str) -> Emitted:
    guards = _guards(rk, cfg)
    fallback = RowConfig(cfg.threads, cfg.rows_per_block, 1, 0, cfg.persistent, cfg.split, halo=cfg.halo,
                         outer=cfg.outer)
    texts = [rk.emit(cfg, name, fallback if guards else None, guards, _middle(rk, cfg, guards))]
    names, extra = [name], []
    if cfg.split:
        extra = split.part_allocs(rk, name, cfg.split)
        texts.append(split.emit_final(rk, cfg, f"{name}_final", name))
        names.append(f"{name}_final")
    return Emitted(texts, extra, names)


def _middle(rk: RowKernel, cfg: RowConfig, guards: list[str]) -> list[tuple[list[str], RowConfig]]:
    """Between a vectorised register-cached path and the scalar re-reading fallback: the same row cache
    with vec = 1 (coalesced scalar lanes, masked tail), for row lengths that are not multiples of the
    vector width. Every element is then still read once and written once."""
    if not (cfg.cached and cfg.vec > 1 and not cfg.split):
        return []
    mid = RowConfig(cfg.threads, cfg.rows_per_block, 1, cfg.cached * cfg.vec, cfg.persistent, 0,
                    cfg.inner * cfg.vec, halo=cfg.halo)
    mg = _guards(rk, mid)
    if not mg or mg == guards:
        return []
    return [(mg, mid)]


def _guards(rk: RowKernel, cfg: RowConfig) -> list[str]:
    from gir.printer import format_expr
    from gir.passes.schedule.emit import dim_expr
    guards: list[str] = []
    if cfg.shift:
        return shift.guards(rk, cfg)
    if cfg.vec > 1:
        exts = [c.align_ext for c in rk.colrefs if c.mode == "vec" and c.aligned_offset]
        exts += [rk.types[n].shape[-1] for n in rk.full_stores]
        exts += [h.ext for h in rk.halos] if halo.active(cfg) else []
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
