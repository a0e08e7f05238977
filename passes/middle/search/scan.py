"""Recipe `scan`: statements `y[..., s, ...] = cumsum|cumprod|cummax|cummin(E, s)` (gir/scan.py) as a
work-efficient parallel scan that reads every input element once and writes every result once. A unit holds one
scan, or sibling scans fuse grouped (the same output extents, the scan axis at the same position): they share
one kernel and its operand loads. The kernel text is scan_text.py's.

Two mappings, by where the scan axis s lies:

- `scan-columns` (s is not the innermost output axis): consecutive threads take consecutive points of the
  innermost axis (coalesced), the other non-scan axes go to the grid, and each thread walks s serially carrying
  its running value in a register. N operations for N elements; parallelism = the elements of a slice across s.
  Siblings walking s in opposite directions are two kernels (remarked: a column is not held on chip).
- `scan-rows` (s is the innermost axis): one block per row (the other axes on the grid) walks the row in chunks of
  T x V elements with a carried prefix: the chunk is loaded coalesced into shared memory, each thread scans its V
  consecutive elements serially, a Hillis-Steele scan over the T thread totals (log2 T steps) gives each thread
  its prefix, and the chunk is stored coalesced. 2N + (N / V) log2 T operations. A 1-D scan (one row) runs on one
  block (remarked: no decoupled look-back across blocks). Forward and reverse siblings share one kernel: the
  forward pass keeps the reverse statements' values of the row's first positions in shared memory for the
  reverse pass. A block takes R rows when an operand does not depend on a grid axis (`x[i, j] * w[j]`): that
  operand is read once for the R rows (its first positions kept in shared memory).

E is evaluated at each element (element-wise producers written into the scan's operand, or inlined into it by
inline-elementwise, are fused this way); exclusive forms store the carried value before combining; reverse
forms walk s from its end (index S - 1 - q for the q-th element walked).
"""
from __future__ import annotations

from gir import ir
from gir.passes.builtin.exprs import substitute_vars, var_names
from gir.passes.middle.search.candidate import Candidate, Emitted
from gir.passes.middle.search.decision import Decision
from gir.passes.middle.search.options import hint
from gir.passes.middle.search.scan_chain_text import ChainedText, status_words
from gir.passes.middle.search.scan_text import MAX_GRID, VEC, KernelText, ScanStmt
from gir.scan import scan_of

MAX_THREADS = 256
ROW_BATCH = 8           # scan-rows: at most this many rows per block share the loads of a broadcast operand
SHARED_SLACK = 1024     # bytes of the block's default shared memory left unused by the stash and the cache
MAX_CHUNKS = 8          # scan-chained: chunks of T x VEC elements per segment (one block each)
MAX_SEG, MIN_SEG = 128, 64  # scan-columns-chained: positions of the scan axis per segment (64 and more: the
#                           three 8-byte status words per column and segment stay under 5% of f32 in + out)


def scan_units(unit) -> bool:
    return any(scan_of(s.value) is not None for s in unit.stmts)


def candidates(g, unit, m, hints: dict[str, int]) -> list[Candidate]:
    scans = [ScanStmt(g, s, k) for k, s in enumerate(unit.stmts)]   # fuse groups sibling scans only
    first = scans[0]
    s, p = first.s, first.p
    comp = unit.compulsory(g, hints)
    pos = s.out_vars.index(p.axis)
    inner = s.out_vars[pos + 1:]
    n = 1
    for v in s.out_vars:
        n *= hint(s.ranges[v], hints)
    extent = hint(s.ranges[p.axis], hints)
    slices = max(1, n // max(1, extent))
    names = ", ".join(f"'{x.s.target}'" for x in scans)
    remarks = []
    if inner:
        c = inner[-1]
        threads = min(MAX_THREADS, _round_up(hint(s.ranges[c], hints), m.warp))
        lanes_used = min(1.0, hint(s.ranges[c], hints) / threads)
        util = min(1.0, slices / (m.sms * 1024.0))
        cols_ = hint(s.ranges[c], hints)
        blocks = slices // max(1, cols_) * -(-cols_ // threads)   # the other axes x lane blocks of the columns
        kind, team, lanes = "scan-columns", "thread", c
        if hint(s.ranges[c], hints) < m.warp:
            remarks.append(f"the innermost axis '{c}' has fewer than {m.warp} points: the warps of this scan along "
                           f"'{p.axis}' are partly idle and its accesses partly coalesced")
        ways = [[x for x in scans if x.p.reverse == r] for r in (False, True)]
        ways = [w for w in ways if w]
        cols = hint(s.ranges[c], hints)
        chained = _column_chain_plan(ways, slices, extent, threads, cols, len(s.out_vars) - 2, m)
        if isinstance(chained, dict):
            chained_cand = _column_chained_candidate(g, ways, chained, slices, cols, comp, m, s, p)
        elif slices < m.sms * 256:
            remarks.append(f"{names}: the scan along '{p.axis}' has {slices} independent point(s) across it, one "
                           f"thread each walking {extent} positions serially: parallelism is limited to {slices} "
                           f"threads ({m.sms} SMs; not chained across blocks: {chained})")
        if len(ways) > 1:
            remarks.append(f"{names}: scans along '{p.axis}' in both directions run as two kernels (a thread walks "
                           f"a column serially and does not hold it), each reading the operands they share")
        plan = {}
    else:
        threads = min(MAX_THREADS, max(m.warp, _pow2(-(-extent // VEC))))
        lanes_used = 1.0
        util = min(1.0, slices * threads / (m.sms * 1024.0))
        kind, team, lanes, c = "scan-rows", "block", p.axis, None
        plan = _row_plan(g, scans, slices, extent, threads, hints, m)
        blocks = -(-slices // plan.get("R", 1))   # up to R rows per block
        ways = [scans]
        chained = _chain_plan(scans, slices, extent, threads, hints, m)
        if isinstance(chained, dict):
            chained_cand = _chained_candidate(g, scans, chained, threads, slices, comp, m, s, p)
        elif slices < m.sms:
            remarks.append(f"{names}: the scan along '{p.axis}' has {slices} row(s) and runs on {slices} block(s) "
                           f"(single-block scan per row: {chained}); parallelism is limited to "
                           f"{slices * threads} threads")
        if plan["rereads"]:
            remarks.append(f"{names}: the reverse pass keeps the first {plan['stash']} values of a row in shared "
                           f"memory and reads the other {extent - plan['stash']} of each row's operands again")
    seconds = max(comp / m.dram_bw / max(util * lanes_used * 0.85, 1e-3), m.dispatch_s(blocks)) \
        + m.launch_s * len(ways)
    others = tuple(v for v in s.out_vars if v not in (p.axis, c))
    notes = {"mapping": kind}
    if plan.get("R", 1) > 1:
        notes["rows per block"] = f"{plan['R']} of '{s.out_vars[plan['batch']]}'"
    dec = Decision("scan", blocks=others + ((c,) if c else ()), lanes=lanes, loops=(p.axis,), team=team,
                   threads=threads, vec=VEC if c is None else 1,
                   reduction=" ".join(f"{x.p.op} {x.p.form()}" for x in scans), notes=notes)

    def emit(name: str) -> Emitted:
        if c is None:
            return Emitted([KernelText(g, scans, threads).rows(name, **plan_args(plan))], [], [name])
        kernel_names = [name if k == 0 else f"{name}_{k}" for k in range(len(ways))]
        texts = [KernelText(g, w, threads).columns(kn) for w, kn in zip(ways, kernel_names)]
        return Emitted(texts, [], kernel_names)

    est = {"mapping": kind}
    if remarks:
        est["remark"] = "; ".join(remarks)
    out = [Candidate(dec, kind, seconds, comp, 0.0, comp, emit, None, est)]
    if isinstance(chained, dict):
        out.append(chained_cand)
    return out


def _chain_plan(scans: list[ScanStmt], slices: int, extent: int, threads: int, hints: dict[str, int], m):
    """scan-chained: rows cut into segments of C chunks (C x T x VEC elements) chained across blocks, when the
    rows alone leave SMs idle. C is the largest power of two up to MAX_CHUNKS that keeps 2 blocks per SM busy
    and fits the segments in the block's default shared memory. A dict, or why not (a string)."""
    if slices >= m.sms:
        return "enough rows"
    if len({x.p.reverse for x in scans}) > 1:
        return "siblings in both directions do not chain in one order"
    if len(scans[0].s.out_vars) - 1 > MAX_GRID - 1:
        return "more than two other axes"
    chunk = threads * VEC
    if extent <= chunk:
        return "the row fits one chunk"
    per_elem = sum(x.acc.nbytes for x in scans)
    room = m.smem_per_block_default - SHARED_SLACK - sum((chunk + threads) * x.acc.nbytes for x in scans)
    C = MAX_CHUNKS
    while C > 1 and (C * chunk * per_elem > room or slices * -(-extent // (C * chunk)) < 2 * m.sms):
        C //= 2
    if C * chunk * per_elem > room:
        return "a segment does not fit shared memory"
    return {"chunks": C, "segs": -(-extent // (C * chunk))}


def _column_chain_plan(ways: list, slices: int, extent: int, threads: int, cols: int, others: int, m):
    """scan-columns-chained: the scan axis cut into segments of L positions (a block per segment and lane
    block), when the columns alone leave the GPU mostly idle. Blocks of T threads (halved from the unchained
    kernel's until MAX_SEG x T values per statement fit the default shared memory, down to a warp); L is the
    largest power of two from MAX_SEG down to MIN_SEG that still gives 2 blocks per SM and fits. A dict, or why
    not (a string)."""
    if slices >= m.sms * 256:
        return "enough columns"
    if others > 1:
        return "more than one axis besides the columns and the scan axis"
    room = m.smem_per_block_default - SHARED_SLACK
    per_col = max(sum(x.acc.nbytes for x in w) for w in ways)
    while threads > m.warp and MAX_SEG * threads * per_col > room:   # narrower blocks keep long segments
        threads //= 2
    per_pos = per_col * threads
    L = MAX_SEG
    while L > MIN_SEG and (L * per_pos > room or slices // max(1, cols) * -(-cols // threads) *
                           -(-extent // L) < 2 * m.sms):
        L //= 2
    if L * per_pos > room:
        return "a segment does not fit shared memory"
    if extent <= L:
        return "the scan axis fits one segment"
    return {"seg": L, "segs": -(-extent // L), "threads": threads}


def _column_chained_candidate(g, ways: list, plan: dict, slices: int, cols: int, comp: float, m, s, p):
    L, segs, threads = plan["seg"], plan["segs"], plan["threads"]
    blocks = slices // max(1, cols) * -(-cols // threads) * segs
    util = min(1.0, blocks * threads / (m.sms * 1024.0)) * min(1.0, cols / threads)
    status = 8.0 * slices * segs * sum(status_words(x) for w in ways for x in w)
    traffic = comp + 3 * status          # zeroed, written, read by the successor's look-back
    seconds = max(traffic / m.dram_bw / max(util * 0.85, 1e-3), m.dispatch_s(blocks)) + 2 * m.launch_s * len(ways)
    c = s.out_vars[-1]
    others = tuple(v for v in s.out_vars if v not in (p.axis, c))
    dec = Decision("scan", blocks=others + (c, "segment"), lanes=c, loops=(p.axis,), team="thread",
                   threads=threads, vec=1,
                   reduction=" ".join(f"{x.p.op} {x.p.form()} chained" for w in ways for x in w),
                   notes={"mapping": "scan-columns-chained", "segments": f"{segs} of {L} positions"})

    def emit(name: str) -> Emitted:
        texts, allocs, names = [], [], []
        for k, w in enumerate(ways):
            kn = name if k == 0 else f"{name}_{k}"
            kt = ChainedText(g, w, threads)
            texts += [kt.init_text(kn, f"{kn}_init", L, columns=True),
                      ChainedText(g, w, threads).columns_chained(kn, L)]
            allocs += kt.status_allocs(kn, columns=True)
            names += [f"{kn}_init", kn]
        return Emitted(texts, allocs, names)

    est = {"mapping": "scan-columns-chained"}
    if len(ways) > 1:
        est["remark"] = (f"{', '.join(repr(x.s.target) for w in ways for x in w)}: scans along '{p.axis}' in both "
                         "directions run as two kernels, each reading the operands they share")
    return Candidate(dec, "scan-columns-chained", seconds, traffic, 0.0, comp, emit, None, est)


def _chained_candidate(g, scans: list[ScanStmt], plan: dict, threads: int, slices: int, comp: float, m, s, p):
    segs, C = plan["segs"], plan["chunks"]
    blocks = slices * segs
    util = min(1.0, blocks * threads / (m.sms * 1024.0))
    status = 8.0 * blocks * sum(status_words(x) for x in scans)
    traffic = comp + 3 * status          # zeroed, written, read by the successor's look-back
    seconds = max(traffic / m.dram_bw / max(util * 0.85, 1e-3), m.dispatch_s(blocks)) + 2 * m.launch_s
    others = tuple(v for v in s.out_vars if v != p.axis)
    dec = Decision("scan", blocks=others + ("segment",), lanes=p.axis, loops=(p.axis,), team="block",
                   threads=threads, vec=VEC, reduction=" ".join(f"{x.p.op} {x.p.form()} chained" for x in scans),
                   notes={"mapping": "scan-chained", "segments": f"{segs} of {C * threads * VEC} elements"})

    def emit(name: str) -> Emitted:
        kt = ChainedText(g, scans, threads)
        init = f"{name}_init"
        return Emitted([kt.init_text(name, init, C * threads * VEC), ChainedText(g, scans, threads).chained(name, C)],
                       kt.status_allocs(name), [init, name])

    return Candidate(dec, "scan-chained", seconds, traffic, 0.0, comp, emit, None, {"mapping": "scan-chained"})


def plan_args(plan: dict) -> dict:
    return {k: plan[k] for k in ("batch", "R", "stash", "cache")}


def _row_plan(g, scans: list[ScanStmt], slices: int, extent: int, threads: int, hints: dict[str, int], m) -> dict:
    """scan-rows: rows per block, and the shared-memory positions of the stash and of the operand cache.

    R rows of a grid position go to one block when an operand does not depend on it (a weight broadcast over
    the rows): R is the largest power of two up to ROW_BATCH that leaves at least 2 blocks per SM. The shared
    memory left by the chunk buffers (the block's default, less SHARED_SLACK) is shared evenly by the stashed
    statements (reverse ones next to forward ones) and the cached operands, in positions of the row."""
    s = scans[0].s
    axis = scans[0].p.axis
    grid = [i for i, v in enumerate(s.out_vars) if v != axis][:MAX_GRID]
    free = {i: sum(x.var_at(i) not in var_names(r) for x in scans for r in x.refs) for i in grid}
    batch = max(grid, key=lambda i: (free[i], hint(s.ranges[s.out_vars[i]], hints)), default=None)
    R = ROW_BATCH if batch is not None and free[batch] else 1
    while R > 1 and (slices // R < 2 * m.sms or hint(s.ranges[s.out_vars[batch]], hints) < R):
        R //= 2
    mixed = any(x.p.reverse for x in scans) and not all(x.p.reverse for x in scans)
    stashed = [x for x in scans if x.p.reverse] if mixed else []
    cached = set()   # one shared buffer per operand text with the variables named by position (siblings may
    if R > 1:        # name them differently), as scan_text.py keys them
        for x in scans:
            pos = {v: ir.Var(f"@{i}") for i, v in enumerate(x.s.out_vars)}
            for r in x.refs:
                if x.var_at(batch) not in var_names(r):
                    cached.add((r.name, str(substitute_vars(r, pos))))
    per_pos = sum(x.acc.nbytes for x in stashed) + sum(g.types[name].dtype.nbytes for name, _ in cached)
    used = sum((threads * VEC + threads) * x.acc.nbytes for x in scans)
    room = max(0, m.smem_per_block_default - SHARED_SLACK - used)
    cap = room // per_pos if per_pos else 0
    cap = min(cap // 64 * 64, _round_up(extent, 64))
    return {"batch": batch if R > 1 else None, "R": R, "stash": cap if stashed else 0,
            "cache": cap if cached else 0, "rereads": bool(stashed) and cap < extent}


def _round_up(n: int, k: int) -> int:
    return max(k, -(-n // k) * k)


def _pow2(n: int) -> int:
    k = 1
    while k < n:
        k *= 2
    return k


