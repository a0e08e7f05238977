"""Explicit-GIR text of the scan kernels (passes/middle/search/scan.py chooses the mapping).

A kernel scans one or more sibling statements of one group: the same output extents, the scan axis at the same
position. Every statement is a `ScanStmt`; the kernel's coordinates are positions of the output index (statement
k's variable at position i is coordinate i), so siblings written with different variable names share loads: an
operand reference whose index text is the same after substitution is loaded once per element.

- `columns` (the scan axis is not innermost): consecutive threads take consecutive points of the innermost axis
  and walk the scan axis serially, one register accumulator per statement (siblings walk in one direction).
- `rows` (the scan axis is innermost): a block walks its row in chunks of T x V elements (serial scan of V
  elements per thread, a Hillis-Steele scan over the T thread totals, a carried prefix per statement). Forward
  statements are scanned in a forward pass, reverse ones in a reverse pass after it; a reverse statement's values
  at the first `stash` positions of the row are kept in shared memory by the forward pass (read again from
  global memory past them). With R rows per block (the batch axis), an operand that does not depend on the
  batch axis is read from global memory for the block's first row only: its first `cache` positions are kept in
  shared memory for the other rows.
"""
from __future__ import annotations

from gir import ir
from gir.printer import format_const, format_expr
from gir.scan import identity, scan_of
from gir.passes.builtin.exprs import map_expr, refs, var_names

MAX_GRID = 3            # grid dimensions; further non-scan axes are walked by each thread
VEC = 4                 # elements each thread scans serially per chunk (rows)
REGS = "@regs"          # placeholder line: operand registers are allocated there once the body is written


def acc_dtype(g, s) -> ir.DType:
    out_t = g.types[s.target]
    if out_t.dtype.is_float:  # f32 or wider: an f64 scan (or one of an f64 operand) accumulates in f64
        wide = out_t.dtype == ir.DType.f64 or any(g.types[r.name].dtype == ir.DType.f64 for r in refs(s.value))
        return ir.DType.f64 if wide else ir.DType.f32
    if out_t.dtype == ir.DType.i64 or any(g.types[r.name].dtype == ir.DType.i64 for r in refs(s.value)):
        return ir.DType.i64
    return ir.DType.i32


class ScanStmt:
    """One statement of the kernel: its scan, types and operand references."""

    def __init__(self, g, s, k: int):
        self.s, self.k, self.p = s, k, scan_of(s.value)
        self.out_t = g.types[s.target]
        self.acc = acc_dtype(g, s)
        self.ident = format_const(identity(self.p.op, self.acc.is_float, self.acc.numpy))
        self.refs = list(dict.fromkeys(refs(self.p.arg)))
        self.S = str(s.ranges[self.p.axis])

    def combine(self, a: str, b: str) -> str:
        op = self.p.op
        if op in ("cumsum", "cumprod"):
            return f"{a} {'+' if op == 'cumsum' else '*'} {b}"
        return f"{'max' if op == 'cummax' else 'min'}({a}, {b})"

    def var_at(self, pos: int) -> str:
        return self.s.out_vars[pos]


class KernelText:
    """Text of one scan kernel over `scans` (siblings; coordinates are output positions)."""

    def __init__(self, g, scans: list[ScanStmt], threads: int):
        self.g, self.scans, self.T = g, scans, threads
        first = scans[0]
        self.pos = first.s.out_vars.index(first.p.axis)
        self.n = len(first.s.out_vars)
        self.S = first.S
        self.lines: list[str] = []
        self.depth = 0
        self.held: dict[str, str] = {}      # load text -> register holding it for the current element
        self.reg_for: dict[str, str] = {}   # load text -> its register
        self.regs: list[str] = []           # register allocations (written at the REGS placeholder)
        self.batch: int | None = None
        self.fixed: dict[str, str] = {}     # load text -> register, for operands invariant along the walk

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

    def extent(self, pos: int):
        return self.scans[0].s.ranges[self.scans[0].var_at(pos)]

    def grid(self, positions: list[int], batch: int | None = None, rows: int = 1) -> dict[int, str]:
        """Non-scan positions: the first MAX_GRID on the grid (opened here), the rest as loops inside the thread
        (walk_rest); the batch position has `rows` points per block, walked by the loop variable _rr."""
        env = {}
        for k, i in enumerate(positions[:MAX_GRID]):
            if i == batch:
                self.open(f"parallel _g{k} in 0..cdiv({self.extent(i)}, {rows}) @block")
                env[i] = f"{rows} * _g{k} + _rr"
            else:
                self.open(f"parallel _g{k} in 0..{self.extent(i)} @block")
                env[i] = f"_g{k}"
        return env

    def walk_rest(self, positions: list[int], env: dict[int, str], grid: int = MAX_GRID) -> int:
        """Loops over the positions past the first `grid` (those the grid holds); returns how many it opened."""
        for k, i in enumerate(positions[grid:]):
            self.open(f"for _f{k} in 0..{self.extent(i)}")
            env[i] = f"_f{k}"
        return max(0, len(positions) - grid)

    def at(self, sc: ScanStmt, env: dict[int, str], a: str):
        """Substitution of statement sc's variables: coordinates, and position `a` along the scan axis."""
        sub = {sc.var_at(i): ir.Var(f"({e})") for i, e in env.items()}
        sub[sc.p.axis] = ir.Var(f"({a})")
        return lambda x: sub.get(x.name, x) if isinstance(x, ir.Var) else x

    def ref_text(self, sc: ScanStmt, r: ir.Ref, env: dict[int, str], a: str) -> str:
        at = self.at(sc, env, a)
        idx = [format_expr(map_expr(i, at)) for i in r.index]
        if idx:
            idx[-1] = f"{idx[-1]}:{idx[-1]} + 1"
        return f"{r.name}[{', '.join(idx)}]"

    def register(self, dtype: ir.DType) -> str:
        name = f"_r{len(self.regs)}"
        self.regs.append(f"alloc {name}: {dtype.value}[1] @reg")
        return name

    def cache_key(self, sc: ScanStmt, r: ir.Ref, env: dict[int, str], batch: int | None) -> str | None:
        """An operand that does not depend on the batch position, named independently of the pass (None for
        the others)."""
        if batch is None or sc.var_at(batch) in var_names(r):
            return None
        return self.ref_text(sc, r, env, "_pos")

    def value(self, sc: ScanStmt, env: dict[int, str], a: str, cache: dict | None = None) -> None:
        """_v{k}[0:1] = E of statement sc at position a (masked loads, each distinct one once per element);
        `cache` (key -> (shared buffer, capacity)) serves operands that do not depend on the batch axis from
        shared memory after the block's first row."""
        names = {}
        for r in sc.refs:
            text = self.ref_text(sc, r, env, a)
            if text in self.fixed:
                names[r] = f"{self.fixed[text]}[0:1]"
                continue
            if text not in self.held:
                reg = self.reg_for.get(text) or self.register(self.g.types[r.name].dtype)
                self.reg_for[text] = self.held[text] = reg
                hit = (cache or {}).get(self.cache_key(sc, r, env, self.batch))
                if hit is not None:
                    buf, cap = hit
                    inside = f"{a} >= 0 and {a} < {cap}"
                    self.open(f"if _rr >= 1 and {inside}")
                    self.line(f"copy {reg}[0:1] <- {buf}[{a}:{a} + 1]")
                    self.close()
                    self.open("else")
                    self.line(f"load {reg}[0:1] <- {text} with mask, other=0")
                    self.open(f"if {inside}")
                    self.line(f"copy {buf}[{a}:{a} + 1] <- {reg}[0:1]")
                    self.close(2)
                else:
                    self.line(f"load {reg}[0:1] <- {text} with mask, other=0")
            names[r] = f"{self.held[text]}[0:1]"
        v = map_expr(sc.p.arg, lambda x: ir.Var(names[x]) if isinstance(x, ir.Ref) else x)
        self.line(f"_v{sc.k}[0:1] = {format_expr(map_expr(v, self.at(sc, env, a)))}")

    def accumulate(self, pos: str, sink) -> None:
        """Every statement's _v the identity past the scan axis (position `pos` >= S), combined into its _acc,
        whose value goes to the shared slot sink(statement) (before combining, for exclusive forms)."""
        self.open(f"if {pos} >= {self.S}")
        for sc in self.scans:
            self.line(f"_v{sc.k}[0:1] = {sc.ident}")
        self.close()
        for sc in self.scans:
            acc = f"_acc{sc.k}[0:1]"
            step = f"{acc} = {sc.combine(acc, f'_v{sc.k}[0:1]')}"
            put = f"copy {sink(sc)} <- {acc}"
            for ln in ((put, step) if sc.p.exclusive else (step, put)):
                self.line(ln)

    def preload(self, group: list[ScanStmt], env: dict[int, str]) -> None:
        """Operands that do not depend on the scan axis (`w[j]` in a scan down the columns, `v[i]` along the
        rows): loaded once before the walk into registers value() reads at every position."""
        self.fixed = {}
        for sc in group:
            for r in sc.refs:
                if sc.p.axis in var_names(r):
                    continue
                text = self.ref_text(sc, r, env, "0")
                if text not in self.fixed:
                    self.fixed[text] = self.register(self.g.types[r.name].dtype)
                    self.line(f"load {self.fixed[text]}[0:1] <- {text} with mask, other=0")

    def finish(self) -> str:
        """The text, with the operand registers allocated where the placeholder line stands."""
        out = []
        for ln in self.lines:
            if ln.strip() == REGS:
                pad = ln[:len(ln) - len(ln.lstrip())]
                out.extend(pad + r for r in self.regs)
            else:
                out.append(ln)
        return "\n".join(out)

    def scratch(self, names: tuple[tuple[str, str], ...]) -> None:
        """Per-statement registers: (prefix, length) with the accumulator type, _v and _o."""
        for sc in self.scans:
            self.line(f"alloc _v{sc.k}: {sc.acc.value}[1] @reg")
            self.line(f"alloc _o{sc.k}: {sc.out_t.dtype.value}[1] @reg")
            for prefix, n in names:
                self.line(f"alloc {prefix}{sc.k}: {sc.acc.value}[{n}] @reg")

    def store(self, sc: ScanStmt, env: dict[int, str], a: str, reg: str) -> None:
        idx = [a if i == self.pos else env[i] for i in range(self.n)]
        idx[-1] = f"{idx[-1]}:{idx[-1]} + 1"
        self.line(f"_o{sc.k}[0:1] = {reg}")
        self.line(f"store {sc.s.target}[{', '.join(idx)}] <- _o{sc.k}[0:1] with mask")

    # ----------------------------------------------------------------- mappings
    def columns(self, name: str) -> str:
        """Every statement walks the scan axis in the same direction (the caller groups them so)."""
        T, c = self.T, self.n - 1
        positions = [i for i in range(self.n) if i not in (self.pos, c)]
        reverse = self.scans[0].p.reverse
        self.open(f"kernel {name}")
        self.open(f"parallel _gc in 0..cdiv({self.extent(c)}, {T}) @block")
        env = self.grid(positions[:MAX_GRID - 1])
        self.open(f"parallel _t in 0..{T} @thread")
        self.line(REGS)
        self.scratch((("_acc", 1),))
        nrest = self.walk_rest(positions, env, MAX_GRID - 1)   # one grid dimension holds the lanes
        env[c] = f"{T} * _gc + _t"
        for sc in self.scans:
            self.line(f"_acc{sc.k}[0:1] = {sc.ident}")
        self.preload(self.scans, env)
        self.open(f"for _q in 0..{self.S}")
        a = f"{self.S} - 1 - (_q)" if reverse else "_q"
        self.held = {}
        for sc in self.scans:
            self.value(sc, env, a)
        for sc in self.scans:
            acc, step = f"_acc{sc.k}[0:1]", f"_acc{sc.k}[0:1] = {sc.combine(f'_acc{sc.k}[0:1]', f'_v{sc.k}[0:1]')}"
            if sc.p.exclusive:
                self.store(sc, env, a, acc)
                self.line(step)
            else:
                self.line(step)
                self.store(sc, env, a, acc)
        self.close(1 + nrest + 1 + min(len(positions), MAX_GRID - 1) + 1 + 1)
        return self.finish()

    def rows(self, name: str, batch: int | None = None, R: int = 1, stash: int = 0, cache: int = 0) -> str:
        """Forward statements in a forward pass, then reverse ones in a reverse pass (module docstring); R rows
        of the batch position per block, one after the other."""
        T, V = self.T, VEC
        positions = [i for i in range(self.n) if i != self.pos]
        fwd = [sc for sc in self.scans if not sc.p.reverse]
        rev = [sc for sc in self.scans if sc.p.reverse]
        self.batch = batch if R > 1 else None
        self.open(f"kernel {name}")
        if not positions[:MAX_GRID]:
            self.open("parallel _g0 in 0..1 @block")
        env = self.grid(positions, self.batch, R)
        for sc in self.scans:
            self.line(f"alloc _sh{sc.k}: {sc.acc.value}[{T * V}] @shared")
            self.line(f"alloc _tot{sc.k}: {sc.acc.value}[{T}] @shared")
        stashed = rev if fwd and rev and stash else []
        for sc in stashed:
            self.line(f"alloc _st{sc.k}: {sc.acc.value}[{stash}] @shared")
        held: dict = {}
        if self.batch is not None and cache:
            for sc in self.scans:
                for r in sc.refs:
                    key = self.cache_key(sc, r, env, self.batch)
                    if key is not None and key not in held:
                        held[key] = (f"_wc{len(held)}", cache)
                        self.line(f"alloc _wc{len(held) - 1}: {self.g.types[r.name].dtype.value}[{cache}] @shared")
        self.open(f"parallel _t in 0..{T} @thread")
        self.line(REGS)
        self.scratch((("_loc", V), ("_a", 1), ("_b", 1), ("_carry", 1), ("_pre", 1)))
        nrest = self.walk_rest(positions, env)
        if self.batch is not None:
            self.open(f"for _rr in 0..{R}")
        if fwd and rev:
            self.row_pass(fwd, env, False, held, out=stashed, cap=stash)
            self.row_pass(rev, env, True, held, into=stashed, cap=stash)
        else:
            self.row_pass(self.scans, env, bool(rev), held)
        if self.batch is not None:
            self.close()
        self.close(nrest + 1 + max(1, min(len(positions), MAX_GRID)) + 1)
        return self.finish()

    def row_pass(self, group: list[ScanStmt], env: dict[int, str], reverse: bool, cache: dict,
                 out: list[ScanStmt] = (), into: list[ScanStmt] = (), cap: int = 0, chunks: int = 0) -> None:
        """One walk over the row in chunks scanning `group`; `out`: (reverse) statements whose values are
        stashed at their position while walking forward; `into`: statements read back from the stash.
        `chunks` > 0: the block's segment only (`chunks` chunks from position L * _gs), its scanned values kept
        in `_seg` (chained() adds the prefix of the segments before it)."""
        T, V, S = self.T, VEC, self.S
        for sc in group:
            self.line(f"_carry{sc.k}[0:1] = {sc.ident}")
        self.preload(list(group) + list(out) + list(into), env)
        if chunks:
            self.open(f"for _c in 0..{chunks}")
            q = f"{chunks * T * V} * _gs + {T * V} * _c + {T} * _e + _t"
        else:
            self.open(f"for _c in 0..cdiv({S}, {T * V})")
            q = f"{T * V} * _c + {T} * _e + _t"
        a = f"{S} - 1 - ({q})" if reverse else q
        self.open(f"for _e in 0..{V}")
        self.held = {}
        for sc in list(group) + list(out):
            if sc in out:   # only the stashed positions: past them the reverse pass reads the operands itself
                before = dict(self.held)
                self.open(f"if {q} < {cap}")
                self.value(sc, env, a, cache)
                self.line(f"copy _st{sc.k}[{q}:{q} + 1] <- _v{sc.k}[0:1]")
                self.close()
                self.held = before
            elif sc in into:
                before = dict(self.held)
                self.open(f"if {q} < {S} and {a} < {cap}")
                self.line(f"copy _v{sc.k}[0:1] <- _st{sc.k}[{a}:{a} + 1]")
                self.close()
                self.open("else")
                self.value(sc, env, a, cache)
                self.close()
                self.held = before
            else:
                self.value(sc, env, a, cache)
        self.open(f"if {q} >= {S}")
        for sc in group:
            self.line(f"_v{sc.k}[0:1] = {sc.ident}")
        self.close()
        for sc in group:
            self.line(f"copy _sh{sc.k}[{T} * _e + _t:{T} * _e + _t + 1] <- _v{sc.k}[0:1]")
        self.close()
        self.line("sync @block")
        for sc in group:
            k = sc.k
            self.line(f"copy _loc{k}[0:{V}] <- _sh{k}[{V} * _t:{V} * _t + {V}]")
            self.open(f"for _e in 1..{V}")
            self.line(f"_loc{k}[_e:_e + 1] = {sc.combine(f'_loc{k}[_e - 1:_e]', f'_loc{k}[_e:_e + 1]')}")
            self.close()
            self.line(f"copy _tot{k}[_t:_t + 1] <- _loc{k}[{V - 1}:{V}]")
        self.line("sync @block")
        d = 1
        while d < T:   # Hillis-Steele over the thread totals, every statement in the same rounds
            self.open(f"if _t >= {d}")
            for sc in group:
                self.line(f"copy _a{sc.k}[0:1] <- _tot{sc.k}[_t - {d}:_t - {d} + 1]")
            self.close()
            self.line("sync @block")
            self.open(f"if _t >= {d}")
            for sc in group:
                k = sc.k
                self.line(f"copy _b{k}[0:1] <- _tot{k}[_t:_t + 1]")
                self.line(f"_b{k}[0:1] = {sc.combine(f'_a{k}[0:1]', f'_b{k}[0:1]')}")
                self.line(f"copy _tot{k}[_t:_t + 1] <- _b{k}[0:1]")
            self.close()
            self.line("sync @block")
            d *= 2
        for sc in group:
            k = sc.k
            self.line(f"_pre{k}[0:1] = _carry{k}[0:1]")
            self.open("if _t >= 1")
            self.line(f"copy _a{k}[0:1] <- _tot{k}[_t - 1:_t]")
            self.line(f"_pre{k}[0:1] = {sc.combine(f'_pre{k}[0:1]', f'_a{k}[0:1]')}")
            self.close()
            self.open(f"for _e in 0..{V}")
            if sc.p.exclusive:
                self.line(f"_v{k}[0:1] = _pre{k}[0:1]")
                self.open("if _e >= 1")
                self.line(f"_v{k}[0:1] = {sc.combine(f'_pre{k}[0:1]', f'_loc{k}[_e - 1:_e]')}")
                self.close()
            else:
                self.line(f"_v{k}[0:1] = {sc.combine(f'_pre{k}[0:1]', f'_loc{k}[_e:_e + 1]')}")
            if chunks:
                at = f"{T * V} * _c + {V} * _t + _e"
                self.line(f"copy _seg{k}[{at}:{at} + 1] <- _v{k}[0:1]")
            else:
                self.line(f"copy _sh{k}[{V} * _t + _e:{V} * _t + _e + 1] <- _v{k}[0:1]")
            self.close()
            self.line(f"copy _a{k}[0:1] <- _tot{k}[{T - 1}:{T}]")
            self.line(f"_carry{k}[0:1] = {sc.combine(f'_carry{k}[0:1]', f'_a{k}[0:1]')}")
        if chunks:   # the segment's values stay in _seg; the chunk loop's barriers order _sh and _tot
            self.close()
            return
        self.line("sync @block")
        self.open(f"for _e in 0..{V}")
        for sc in group:
            self.line(f"copy _v{sc.k}[0:1] <- _sh{sc.k}[{T} * _e + _t:{T} * _e + _t + 1]")
            self.store(sc, env, a, f"_v{sc.k}[0:1]")
        self.close()
        self.line("sync @block")
        self.close()  # chunks
