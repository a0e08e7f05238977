"""The race check: two instances of instructions, run by distinct threads (or blocks), touching one
element of a @shared/@sram/@global buffer with at least one write, with no barrier between them.

The pairs are a Presburger set over both instances' variables (the two-thread encoding of
GPUVerify); isl decides emptiness exactly and a sample point is the counterexample."""
from __future__ import annotations

from gir import ir
from gir.passes.analysis import isl_helpers as ih
from gir.passes.analysis.diagnostics import CheckDiagnostic, make

OUTER = (ir.ParLevel.block, ir.ParLevel.cluster)  # levels that do not share on-chip memory
INNER = (ir.ParLevel.warp, ir.ParLevel.lane, ir.ParLevel.thread, ir.ParLevel.core)
SHARED_LEVELS = (ir.Level.global_, ir.Level.gdram, ir.Level.shared, ir.Level.sram)


def unique_accesses(ins):
    """Accesses of an instruction, a read of the region it also writes (allreduce) counted once."""
    written = {a.ref for a in ins.accesses if a.write}
    seen = set()
    for acc in ins.accesses:
        key = (acc.ref, acc.write)
        if (acc.write or acc.ref not in written) and key not in seen:
            seen.add(key)
            yield acc


def check_races(ki, ctx) -> list[CheckDiagnostic]:
    out, params = [], ih.size_params(ki.params, ctx.sizes)
    accs = [(ins, acc) for ins in ki.instrs for acc in unique_accesses(ins) if acc.buf.level in SHARED_LEVELS]
    reported = set()
    for n, (a, x) in enumerate(accs):
        for b, y in accs[n:]:
            key = (a.id, b.id, x.buf.name)
            if x.buf.name != y.buf.name or not (x.write or y.write) or key in reported:
                continue
            diag = _race(ki, params, a, x, b, y)
            if diag is not None:
                reported.add(key)
                out.append(diag)
    return out


def _all(parts) -> str:
    return "(" + " and ".join(parts) + ")" if parts else "(1 = 1)"


def _any(parts) -> str:
    return "(" + " or ".join(parts) + ")" if parts else "(1 = 0)"


def _same_interval(a, b, n1, n2, tasks: bool = False) -> str:
    """Both instances lie between the same two barriers (see access.SyncLoop); `tasks`: the same two barriers of
    all tasks (`sync @all`, which orders the tasks of other clusters too: counted only where every task surely
    passes it, access.py). In nested loops of barriers, the first in an iteration of loop L after the last
    barrier of L's body and at the last iteration of every loop of barriers inside L, the second in L's next
    iteration before the first barrier and at the first iteration of those loops, share an interval too."""
    seg, first, last = ("aseg", "afirst", "alast") if tasks else ("seg", "first", "last")
    sa, sb = getattr(a, seg), getattr(b, seg)
    # (a one-trip loop's variable follows the loops around it: no iterations of its own)
    common = [sl for sl in a.sync_loops if any(sl is s for s in b.sync_loops) and
              getattr(sl, last) > getattr(sl, first) and not sl.one]

    def eq(sls):
        return [f"{n1[s.var]} = {n2[s.var]}" for s in sls]

    def at(x, nx, sl, end: bool) -> str:   # x's instance at the last (end) or first iteration of loop sl
        lv = next(v for v in x.vars if v.name == sl.var and v.level is None)
        if end:
            return f"{nx[sl.var]} + {sl.step} >= {ih.expr(lv.hi, nx)}"
        return f"{nx[sl.var]} = {ih.expr(lv.lo, nx)}"
    opts = [_all(eq(common))] if sa == sb else []
    for j, lp in enumerate(common):
        for x, nx, sx, y, ny, sy in ((a, n1, sa, b, n2, sb), (b, n2, sb, a, n1, sa)):   # x, then y
            if sx == getattr(lp, last) and sy == getattr(lp, first):
                inner = [at(x, nx, sl, True) for sl in common[j + 1:]] + \
                    [at(y, ny, sl, False) for sl in common[j + 1:]]
                opts.append(_all(eq(common[:j]) + [f"{ny[lp.var]} = {nx[lp.var]} + {lp.step}"] + inner))
    return _any(opts)


def _may_share_interval(a, b) -> bool:
    """Whether _same_interval can hold at all (the structure alone: no common interval makes it false)."""
    if a.seg == b.seg:
        return True
    common = [sl for sl in a.sync_loops if any(sl is s for s in b.sync_loops)]
    return any((a.seg == sl.last and b.seg == sl.first) or (b.seg == sl.last and a.seg == sl.first) for sl in common)


def _race(ki, params, a, x, b, y) -> CheckDiagnostic | None:
    if a.phase != b.phase:
        return None   # a `sync @all` between them orders every task's instances
    if not x.buf.level.off_chip and not _may_share_interval(a, b):
        return None   # on-chip: the pair must lie between the same two barriers, and no interval holds both
    outer = (a.par_vars(*OUTER), b.par_vars(*OUTER))
    inner = (a.par_vars(*INNER), b.par_vars(*INNER))
    if len(outer[0]) != len(outer[1]) or len(inner[0]) != len(inner[1]):
        return None  # different grid shapes: not instances of one launch layout
    n1, c1 = ki.instance(a, "1")
    n2, c2 = ki.instance(b, "2")
    i1, e1, r1 = ki.indices(x, n1, "1")
    i2, e2, r2 = ki.indices(y, n2, "2")
    cons = c1 + c2 + r1 + r2 + [f"{p} = {q}" for p, q in zip(i1, i2)]
    cons += [f"{n1[o]} = {n2[o]}" for o in x.owner]
    for acc, idx in ((x, i1), (y, i2)):
        if acc.mask and acc.buf.level.off_chip:
            cons += [f"0 <= {i} < {d}" for i, d in zip(idx, acc.buf.type.shape)]
    same_outer = _all([f"{n1[p]} = {n2[q]}" for p, q in zip(*outer)])
    diff_inner = _any([f"{n1[p]} != {n2[q]}" for p, q in zip(*inner)])
    local = _all([same_outer, diff_inner, _same_interval(a, b, n1, n2)])
    # off chip, tasks of other clusters (blocks) race unless a barrier of all tasks lies between them
    others = _all([f"(not {same_outer})", _same_interval(a, b, n1, n2, tasks=True)])
    cons.append(f"({others} or {local})" if x.buf.level.off_chip else local)
    dims = list(n1.values()) + list(n2.values()) + e1 + e2
    try:
        pairs = ih.make_set(ki.params, "R", dims, cons).intersect_params(params)
    except ih.NotAffine:
        return make("race", f"could not analyse accesses to '{x.buf.name}' (not quasi-affine)", a,
                    severity="warning")
    point = ih.sample(pairs)
    if point is None:
        return None
    what = "write/write" if x.write and y.write else "read/write"
    addr = _addr(i1, point)
    shown = {k.replace("_1", "@1").replace("_2", "@2"): v for k, v in point.items()
             if k in ki.params or k in n1.values() or k in n2.values()}
    return make("race", f"{what} data race on '{x.buf.name}' between {a.name} ({a.kind}) and {b.name} ({b.kind})",
                x.ref.loc or a, shown,
                notes=[f"both touch element {x.buf.name}[{addr}]; thread 1 runs {a.name}, thread 2 runs {b.name}",
                       f"other access: {y.ref.loc or b.loc}",
                       "separate them with a barrier (" + ("sync @cluster, or sync @all across clusters"
                                                           if ki.family == "mlu" else "sync @block")
                       + ") or give each thread its own elements"])


def _addr(idx: list[str], point: dict[str, int]) -> str:
    import islpy as isl
    vals = []
    for text in idx:
        names = sorted(point)
        s = isl.Set(f"[{', '.join(names)}] -> {{ [v] : v = {text} }}")
        for k, nm in enumerate(names):
            s = s.fix_val(isl.dim_type.param, k, point[nm])
        vals.append(str(ih.sample(s).get("v", "?")) if not s.is_empty() else "?")
    return ", ".join(vals)
