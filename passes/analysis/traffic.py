"""Traffic analysis: bytes moved at each memory level, per instruction and per kernel, counted
exactly with isl at fixed sizes; compulsory bytes; reuse; 32-byte sectors per warp access.

- bytes(level, read|write) of an instruction = number of (instance, element) pairs of its access
  relations to buffers of that level × element size (masked accesses clipped to the tensor);
- compulsory = every input element read once + every output element written once;
- reuse of a global read = pairs / distinct elements;
- sectors: the distinct 32-byte segments touched by one warp (32 consecutive lanes) for one global access,
  averaged over sampled instances of the other variables (rows off a sector boundary straddle one more),
  against the minimum for those bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir import ir
from gir.affine import eval_int
from gir.passes.analysis import isl_helpers as ih
from gir.passes.analysis.access import KernelInfo, collect, slice_len

WARP = 32
SECTOR = 32


@dataclass
class AccessTraffic:
    buf: str
    level: str
    write: bool
    bytes: int
    distinct_bytes: int
    sectors: int | None = None  # per warp access (global only)
    ideal_sectors: int | None = None
    stride: int | None = None  # elements between consecutive lanes
    warp_bytes: int | None = None  # bytes the lanes of that warp access ask for (a broadcast counts per lane)

    def sector_bytes(self) -> float:
        """Bytes this access moves in whole sectors per warp access (the simulator's count)."""
        if self.sectors and self.warp_bytes:
            return self.bytes * self.sectors * SECTOR / self.warp_bytes
        return float(self.bytes)


@dataclass
class InstrTraffic:
    name: str
    kind: str
    accesses: list[AccessTraffic]


@dataclass
class KernelTraffic:
    kernel: str
    instrs: list[InstrTraffic]
    totals: dict[tuple[str, str], int] = field(default_factory=dict)  # (level, "read"|"write") → bytes

    def total(self, level: str, mode: str) -> int:
        return self.totals.get((level, mode), 0)


def compulsory_bytes(func: ir.Func, sizes: dict[str, int]) -> tuple[int, int]:
    """(bytes read, bytes written) if every input is read once and every output written once."""
    def nbytes(p):
        n = p.type.dtype.nbytes
        for d in p.type.shape:
            n *= d if isinstance(d, int) else sizes[d]
        return n
    return sum(nbytes(p) for p in func.params), sum(nbytes(p) for p in func.results)


def kernel_traffic(func: ir.Func, kernel: ir.Kernel, sizes: dict[str, int] | None = None) -> KernelTraffic:
    ki = collect(func, kernel)
    sizes = dict(sizes or {})
    missing = [p for p in ki.params if p not in sizes]
    if missing:
        from gir.errors import GirError
        raise GirError(f"traffic counts need values for the sizes {', '.join(missing)} (use --sizes)")
    out = KernelTraffic(kernel.name, [])
    for ins in ki.instrs:
        accs = []
        for acc in ins.accesses:
            m = ki.access_map(ins, acc)
            nb = acc.buf.type.dtype.nbytes
            at = AccessTraffic(acc.buf.name, acc.buf.level.value, acc.write, ih.count(m, ki.params, sizes) * nb,
                               ih.count(m.range(), ki.params, sizes) * nb)
            if acc.buf.level.off_chip and ki.family == "gpu":
                at.sectors, at.ideal_sectors, at.stride, at.warp_bytes = warp_sectors(ki, ins, acc, sizes)
            accs.append(at)
            key = (at.level, "write" if acc.write else "read")
            out.totals[key] = out.totals.get(key, 0) + at.bytes
        out.instrs.append(InstrTraffic(ins.name, ins.kind, accs))
    return out


def _lane_var(ins):
    inner = [v for v in ins.vars if v.level in (ir.ParLevel.lane, ir.ParLevel.thread)]
    return inner[-1] if inner else None


def _warp_lanes(ins, env, pick=None) -> list[dict[str, int]]:
    """The thread variables of one warp's lanes: @lane values 0..31 (the warp is an outer variable), or 32
    consecutive linear thread ids of nested @thread scopes (the innermost varies fastest, as threadIdx.x): the
    first warp, or warp `pick(number of warps)`."""
    lanes = [v for v in ins.vars if v.level == ir.ParLevel.lane]
    if lanes:
        v = lanes[-1]
        lo, hi = eval_int(v.lo, env), eval_int(v.hi, env)
        return [{v.name: l} for l in range(lo, min(hi, lo + WARP))]
    threads = [v for v in ins.vars if v.level == ir.ParLevel.thread]
    bounds = [(eval_int(v.lo, env), eval_int(v.hi, env)) for v in threads]
    total = 1
    for lo, hi in bounds:
        total *= max(0, hi - lo)
    out = []
    w0 = pick(-(-total // WARP)) * WARP if pick is not None and total > WARP else 0
    for tid in range(w0, min(total, w0 + WARP)):
        point, rest = {}, tid
        for v, (lo, hi) in reversed(list(zip(threads, bounds))):
            point[v.name] = lo + rest % (hi - lo)
            rest //= hi - lo
        out.append(point)
    return out


SAMPLES = 64   # instances of the non-thread variables whose warps are counted (seeded, with the first instance)


def warp_sectors(ki: KernelInfo, ins, acc, sizes) -> tuple[float | None, int | None, int | None, float | None]:
    """(sectors touched, minimum sectors for those bytes, lane stride in elements, bytes the lanes ask for) per
    warp access: the first warp of each of SAMPLES instances of the other variables (the first instance, then
    seeded uniform ones), averaged: rows that start off a sector boundary (f32 rows of odd length) straddle one
    sector more than aligned ones, which the first instance alone (row 0) does not show. The minimum and the
    stride are the first instance's. All None if there is no lane variable."""
    import random
    lane = _lane_var(ins)
    if lane is None:
        return None, None, None, None
    thread_names = {v.name for v in ins.vars if v.level in (ir.ParLevel.lane, ir.ParLevel.thread)}
    rng = random.Random(0)
    total_sectors = total_asked = 0
    first_result = None
    for k in range(SAMPLES):
        env = dict(sizes)
        empty = False
        for v in ins.vars:
            if v.name not in thread_names:
                lo = eval_int(v.lo, env)
                hi = _bound(v.hi, env, lo + 1)
                if hi <= lo:
                    empty = True
                    break
                env[v.name] = lo if k == 0 else rng.randrange(lo, hi)
        if empty:
            break
        res = _one_warp(ins, acc, sizes, env, thread_names, None if k == 0 else rng.randrange)
        if first_result is None:
            first_result = res
        total_sectors += res[0]
        total_asked += res[3]
        if k == 0 and all(v.name in thread_names or _bound(v.hi, env, 0) - eval_int(v.lo, env) <= 1
                          for v in ins.vars):
            break   # a single instance
    if first_result is None or not total_asked:
        return (first_result or (0, 0, None, 0))
    _, ideal, stride, asked = first_result
    return total_sectors * asked / total_asked, ideal, stride, asked


def _bound(e, env, default: int) -> int:
    """An upper bound that may use thread variables (a loop inside the thread scope): `default` then (the loop
    is not sampled)."""
    try:
        return eval_int(e, env)
    except KeyError:
        return default


def _one_warp(ins, acc, sizes, env, thread_names, pick=None) -> tuple[int, int, int | None, int]:
    """(sectors, ideal sectors, lane stride, bytes asked) of one warp (the first, or `pick`'s: _warp_lanes) at
    the instance `env`."""
    for v in ins.vars:  # thread variables' bounds may only use outer variables: their lower bounds first
        if v.name in thread_names:
            env.setdefault(v.name, eval_int(v.lo, env))
    shape = [d if isinstance(d, int) else sizes[d] for d in acc.buf.type.shape]
    nb = acc.buf.type.dtype.nbytes
    addrs, first, asked = set(), {}, 0
    for k, point in enumerate(_warp_lanes(ins, env, pick)):
        env.update(point)
        if not all(_truth(c, env) for c in ins.conds):
            continue
        for idx in _elements(acc.ref, env):
            if acc.mask and not all(0 <= i < n for i, n in zip(idx, shape)):
                continue
            lin = 0
            for i, n in zip(idx, shape):
                lin = lin * n + i
            addrs.add(lin * nb)
            first.setdefault(k, lin)
            asked += nb
    if not addrs:
        return 0, 0, None, 0
    sectors = len({a // SECTOR for a in addrs})
    ideal = -(-len(addrs) * nb // SECTOR)
    stride = first[1] - first[0] if 0 in first and 1 in first else None
    return sectors, ideal, stride, asked


def _elements(ref: ir.Ref, env):
    pts = [[]]
    for i in ref.index:
        if isinstance(i, ir.Slice):
            start = eval_int(i.start, env)
            vals = [start + i.step * e for e in range(slice_len(i))]
        else:
            vals = [eval_int(i, env)]
        pts = [p + [v] for p in pts for v in vals]
    return pts


def _truth(c, env) -> bool:
    if isinstance(c, ir.Const):
        return bool(c.value)
    if isinstance(c, ir.UnOp) and c.op == "not":
        return not _truth(c.operand, env)
    if c.op == "and":
        return _truth(c.lhs, env) and _truth(c.rhs, env)
    if c.op == "or":
        return _truth(c.lhs, env) or _truth(c.rhs, env)
    a, b = eval_int(c.lhs, env), eval_int(c.rhs, env)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[c.op]


def format_table(func: ir.Func, reports: list[KernelTraffic], sizes: dict[str, int]) -> str:
    levels = ["global", "shared", "reg"] if not any(
        a.level in ("gdram", "sram", "nram", "wram") for r in reports for i in r.instrs for a in i.accesses) \
        else ["gdram", "sram", "nram", "wram"]
    head = f"{'instr':<7}{'kind':<10}" + "".join(f"{lv + ' r':>12}{lv + ' w':>12}" for lv in levels) + \
        f"{'sectors/warp':>14}{'ideal':>7}{'stride':>8}"
    lines = []
    for r in reports:
        lines += [f"kernel {r.kernel}  ({', '.join(f'{k}={v}' for k, v in sizes.items())})", head]
        for it in r.instrs:
            cells = ""
            for lv in levels:
                for w in (False, True):
                    n = sum(a.bytes for a in it.accesses if a.level == lv and a.write == w)
                    cells += f"{n:>12}"
            g = [a for a in it.accesses if a.sectors is not None]
            sec = f"{g[0].sectors:>14}{g[0].ideal_sectors:>7}{str(g[0].stride):>8}" if g else ""
            lines.append(f"{it.name:<7}{it.kind:<10}{cells}{sec}")
        lines.append(f"{'total':<17}" + "".join(f"{r.total(lv, 'read'):>12}{r.total(lv, 'write'):>12}"
                                                for lv in levels))
    cr, cw = compulsory_bytes(func, sizes)
    off = levels[0]
    gr = sum(r.total(off, "read") for r in reports)
    gw = sum(r.total(off, "write") for r in reports)
    lines.append(f"compulsory: read {cr} B, write {cw} B; {off}: read {gr} B ({_ratio(gr, cr)}), "
                 f"write {gw} B ({_ratio(gw, cw)})")
    return "\n".join(lines) + "\n"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}x compulsory" if b else "n/a"
