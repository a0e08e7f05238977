"""Recipe `scan`: a statement `y[..., s, ...] = cumsum|cumprod|cummax|cummin(E, s)` (gir/scan.py) as a
work-efficient parallel scan that reads every input element once and writes every result once.

Two mappings, by where the scan axis s lies:

- `scan-columns` (s is not the innermost output axis): consecutive threads take consecutive points of the
  innermost axis (coalesced), the other non-scan axes go to the grid, and each thread walks s serially carrying
  its running value in a register. N operations for N elements; parallelism = the elements of a slice across s.
- `scan-rows` (s is the innermost axis): one block per row (the other axes on the grid) walks the row in chunks of
  T x V elements with a carried prefix: the chunk is loaded coalesced into shared memory, each thread scans its V
  consecutive elements serially, a Hillis-Steele scan over the T thread totals (log2 T steps) gives each thread
  its prefix, and the chunk is stored coalesced. 2N + (N / V) log2 T operations. A 1-D scan (one row) runs on one
  block (remarked: no decoupled look-back across blocks).

E is evaluated at each element (element-wise producers written into the scan's operand, or inlined into it by
inline-elementwise, are fused this way); exclusive forms store the carried value before combining; reverse
forms walk s from its end (index S - 1 - q for the q-th element walked).
"""
from __future__ import annotations

from gir import ir
from gir.printer import format_const, format_expr
from gir.scan import ScanParts, identity, scan_of
from gir.passes.builtin.exprs import map_expr, refs
from gir.passes.middle.search.candidate import Candidate, Emitted
from gir.passes.middle.search.decision import Decision
from gir.passes.middle.search.options import hint

MAX_THREADS = 256
VEC = 4                 # elements each thread scans serially per chunk (scan-rows)
MAX_GRID = 3            # grid dimensions; further non-scan axes are walked by each thread


def scan_units(unit) -> bool:
    return any(scan_of(s.value) is not None for s in unit.stmts)


def candidates(g, unit, m, hints: dict[str, int]) -> list[Candidate]:
    (s,) = unit.stmts          # fuse keeps a scan statement in a group of its own
    p = scan_of(s.value)
    out_t = g.types[s.target]
    acc = _acc_dtype(g, s, out_t)
    comp = unit.compulsory(g, hints)
    pos = s.out_vars.index(p.axis)
    inner = s.out_vars[pos + 1:]
    n = 1
    for v in s.out_vars:
        n *= hint(s.ranges[v], hints)
    slices = max(1, n // max(1, hint(s.ranges[p.axis], hints)))
    if inner:
        c = inner[-1]
        threads = min(MAX_THREADS, _round_up(hint(s.ranges[c], hints), m.warp))
        lanes_used = min(1.0, hint(s.ranges[c], hints) / threads)
        util = min(1.0, slices / (m.sms * 1024.0))
        kind, team, lanes = "scan-columns", "thread", c
        remark = None
        if hint(s.ranges[c], hints) < m.warp:
            remark = (f"the innermost axis '{c}' has fewer than {m.warp} points: the warps of this scan along "
                      f"'{p.axis}' are partly idle and its accesses partly coalesced")
    else:
        threads = min(MAX_THREADS, max(m.warp, _pow2(-(-hint(s.ranges[p.axis], hints) // VEC))))
        lanes_used = 1.0
        util = min(1.0, slices * threads / (m.sms * 1024.0))
        kind, team, lanes, c = "scan-rows", "block", p.axis, None
        remark = None
        if slices < m.sms:
            remark = (f"{s.target}: the scan along '{p.axis}' has {slices} row(s) and runs on {slices} block(s) "
                      f"(single-block scan per row, no look-back across blocks); parallelism is limited to "
                      f"{slices * threads} threads")
    seconds = comp / m.dram_bw / max(util * lanes_used * 0.85, 1e-3) + m.launch_s
    others = tuple(v for v in s.out_vars if v not in (p.axis, c))
    dec = Decision("scan", blocks=others + ((c,) if c else ()), lanes=lanes, loops=(p.axis,), team=team,
                   threads=threads, vec=VEC if c is None else 1, reduction=f"{p.op} {p.form()}",
                   notes={"mapping": kind})

    def emit(name: str) -> Emitted:
        k = _Kernel(g, s, p, out_t, acc, threads)
        text = k.columns(name, c) if c else k.rows(name)
        return Emitted([text], [], [name])

    est = {"mapping": kind}
    if remark:
        est["remark"] = remark
    return [Candidate(dec, kind, seconds, comp, 0.0, comp, emit, None, est)]


def _acc_dtype(g, s, out_t: ir.TensorType) -> ir.DType:
    if out_t.dtype.is_float:  # f32 or wider: an f64 scan (or one of an f64 operand) accumulates in f64
        wide = out_t.dtype == ir.DType.f64 or any(g.types[r.name].dtype == ir.DType.f64 for r in refs(s.value))
        return ir.DType.f64 if wide else ir.DType.f32
    if out_t.dtype == ir.DType.i64 or any(g.types[r.name].dtype == ir.DType.i64 for r in refs(s.value)):
        return ir.DType.i64
    return ir.DType.i32


def _round_up(n: int, k: int) -> int:
    return max(k, -(-n // k) * k)


def _pow2(n: int) -> int:
    k = 1
    while k < n:
        k *= 2
    return k


class _Kernel:
    """Text of one scan kernel (explicit GIR)."""

    def __init__(self, g, s, p: ScanParts, out_t: ir.TensorType, acc: ir.DType, threads: int):
        self.g, self.s, self.p, self.out_t, self.acc, self.T = g, s, p, out_t, acc, threads
        self.S = str(s.ranges[p.axis])
        self.ident = format_const(identity(p.op, acc.is_float, acc.numpy))
        self.refs = list(dict.fromkeys(refs(p.arg)))
        self.lines: list[str] = []
        self.depth = 0

    # ------------------------------------------------------------------ helpers
    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def open(self, text: str) -> None:
        self.line(text + " {")
        self.depth += 1

    def close(self, n: int = 1) -> None:
        for _ in range(n):
            self.depth -= 1
            self.line("}")

    def combine(self, a: str, b: str) -> str:
        op = self.p.op
        if op in ("cumsum", "cumprod"):
            return f"{a} {'+' if op == 'cumsum' else '*'} {b}"
        return f"{'max' if op == 'cummax' else 'min'}({a}, {b})"

    def src(self, q: str) -> str:
        """Index along the scan axis of the q-th element walked."""
        return f"{self.S} - 1 - ({q})" if self.p.reverse else q

    def grid(self, axes: list[str]) -> dict[str, str]:
        """Non-scan axes: the first MAX_GRID on the grid (opened here), the rest as loops inside the thread."""
        env = {}
        for k, v in enumerate(axes[:MAX_GRID]):
            self.open(f"parallel _g{k} in 0..{self.s.ranges[v]} @block")
            env[v] = f"_g{k}"
        return env

    def walk_rest(self, axes: list[str], env: dict[str, str]) -> int:
        for k, v in enumerate(axes[MAX_GRID:]):
            self.open(f"for _f{k} in 0..{self.s.ranges[v]}")
            env[v] = f"_f{k}"
        return max(0, len(axes) - MAX_GRID)

    def allocs(self) -> None:
        for k, r in enumerate(self.refs):
            self.line(f"alloc _r{k}: {self.g.types[r.name].dtype.value}[1] @reg")
        self.line(f"alloc _v: {self.acc.value}[1] @reg")
        self.line(f"alloc _o: {self.out_t.dtype.value}[1] @reg")

    def load_value(self, env: dict[str, str], q: str) -> None:
        """_v[0:1] = E at the q-th element walked (masked loads; the tail gives the identity)."""
        sub = {v: ir.Var(f"({e})") for v, e in env.items()}
        sub[self.p.axis] = ir.Var(f"({self.src(q)})")

        def at(x):
            return sub.get(x.name, x) if isinstance(x, ir.Var) else x
        names = {}
        for k, r in enumerate(self.refs):
            idx = [format_expr(map_expr(i, at)) for i in r.index]
            if idx:
                idx[-1] = f"{idx[-1]}:{idx[-1]} + 1"
            self.line(f"load _r{k}[0:1] <- {r.name}[{', '.join(idx)}] with mask, other=0")
            names[r] = f"_r{k}[0:1]"
        value = map_expr(self.p.arg, lambda x: ir.Var(names[x]) if isinstance(x, ir.Ref) else x)
        value = map_expr(value, at)
        self.line(f"_v[0:1] = {format_expr(value)}")

    def store(self, env: dict[str, str], q: str, reg: str) -> None:
        idx = [env[v] if v != self.p.axis else self.src(q) for v in self.s.out_vars]
        idx[-1] = f"{idx[-1]}:{idx[-1]} + 1"
        self.line(f"_o[0:1] = {reg}")
        self.line(f"store {self.s.target}[{', '.join(idx)}] <- _o[0:1] with mask")

    # ----------------------------------------------------------------- mappings
    def columns(self, name: str, c: str) -> str:
        axes = [v for v in self.s.out_vars if v not in (self.p.axis, c)]
        self.open(f"kernel {name}")
        self.open(f"parallel _gc in 0..cdiv({self.s.ranges[c]}, {self.T}) @block")
        env = self.grid(axes[:MAX_GRID - 1])
        self.open(f"parallel _t in 0..{self.T} @thread")
        self.allocs()
        self.line(f"alloc _acc: {self.acc.value}[1] @reg")
        nrest = 0
        for k, v in enumerate(axes[MAX_GRID - 1:]):
            self.open(f"for _f{k} in 0..{self.s.ranges[v]}")
            env[v] = f"_f{k}"
            nrest += 1
        env[c] = f"{self.T} * _gc + _t"
        self.line(f"_acc[0:1] = {self.ident}")
        self.open(f"for _q in 0..{self.S}")
        self.load_value(env, "_q")
        if self.p.exclusive:
            self.store(env, "_q", "_acc[0:1]")
            self.line(f"_acc[0:1] = {self.combine('_acc[0:1]', '_v[0:1]')}")
        else:
            self.line(f"_acc[0:1] = {self.combine('_acc[0:1]', '_v[0:1]')}")
            self.store(env, "_q", "_acc[0:1]")
        self.close(1 + nrest + 1 + min(len(axes), MAX_GRID - 1) + 1 + 1)
        return "\n".join(self.lines)

    def rows(self, name: str) -> str:
        T, V, acc = self.T, VEC, self.acc.value
        axes = [v for v in self.s.out_vars if v != self.p.axis]
        self.open(f"kernel {name}")
        if not axes[:MAX_GRID]:
            self.open("parallel _g0 in 0..1 @block")
        env = self.grid(axes)
        self.line(f"alloc _sh: {acc}[{T * V}] @shared")
        self.line(f"alloc _tot: {acc}[{T}] @shared")
        self.open(f"parallel _t in 0..{T} @thread")
        self.allocs()
        for buf, n in (("_loc", V), ("_a", 1), ("_b", 1), ("_carry", 1), ("_pre", 1)):
            self.line(f"alloc {buf}: {acc}[{n}] @reg")
        nrest = self.walk_rest(axes, env)
        self.line(f"_carry[0:1] = {self.ident}")
        self.open(f"for _c in 0..cdiv({self.S}, {T * V})")
        q = f"{T * V} * _c + {T} * _e + _t"
        self.open(f"for _e in 0..{V}")
        self.load_value(env, q)
        self.open(f"if {q} >= {self.S}")
        self.line(f"_v[0:1] = {self.ident}")
        self.close()
        self.line(f"copy _sh[{T} * _e + _t:{T} * _e + _t + 1] <- _v[0:1]")
        self.close()
        self.line("sync @block")
        self.line(f"copy _loc[0:{V}] <- _sh[{V} * _t:{V} * _t + {V}]")
        self.open(f"for _e in 1..{V}")
        self.line(f"_loc[_e:_e + 1] = {self.combine('_loc[_e - 1:_e]', '_loc[_e:_e + 1]')}")
        self.close()
        self.line(f"copy _tot[_t:_t + 1] <- _loc[{V - 1}:{V}]")
        self.line("sync @block")
        d = 1
        while d < T:   # Hillis-Steele over the thread totals
            self.open(f"if _t >= {d}")
            self.line(f"copy _a[0:1] <- _tot[_t - {d}:_t - {d} + 1]")
            self.close()
            self.line("sync @block")
            self.open(f"if _t >= {d}")
            self.line("copy _b[0:1] <- _tot[_t:_t + 1]")
            self.line(f"_b[0:1] = {self.combine('_a[0:1]', '_b[0:1]')}")
            self.line("copy _tot[_t:_t + 1] <- _b[0:1]")
            self.close()
            self.line("sync @block")
            d *= 2
        self.line("_pre[0:1] = _carry[0:1]")
        self.open("if _t >= 1")
        self.line("copy _a[0:1] <- _tot[_t - 1:_t]")
        self.line(f"_pre[0:1] = {self.combine('_pre[0:1]', '_a[0:1]')}")
        self.close()
        self.open(f"for _e in 0..{V}")
        if self.p.exclusive:
            self.line("_v[0:1] = _pre[0:1]")
            self.open("if _e >= 1")
            self.line(f"_v[0:1] = {self.combine('_pre[0:1]', '_loc[_e - 1:_e]')}")
            self.close()
        else:
            self.line(f"_v[0:1] = {self.combine('_pre[0:1]', '_loc[_e:_e + 1]')}")
        self.line(f"copy _sh[{V} * _t + _e:{V} * _t + _e + 1] <- _v[0:1]")
        self.close()
        self.line(f"copy _a[0:1] <- _tot[{T - 1}:{T}]")
        self.line(f"_carry[0:1] = {self.combine('_carry[0:1]', '_a[0:1]')}")
        self.line("sync @block")
        self.open(f"for _e in 0..{V}")
        self.line(f"copy _v[0:1] <- _sh[{T} * _e + _t:{T} * _e + _t + 1]")
        self.store(env, q, "_v[0:1]")
        self.close()
        self.line("sync @block")
        self.close()  # chunks
        self.close(nrest + 1 + max(1, min(len(axes), MAX_GRID)) + 1)
        return "\n".join(self.lines)
