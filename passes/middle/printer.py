"""Any state of the IDFG printed as explicit GIR: the reference mapping of the decisions taken so far.

Every group is one kernel in which **one thread is one team**: the innermost team axis goes to consecutive
threads, up to two more to block dimensions, the rest to loops. The thread runs the group's statements in
program order, each as serial loops over its own non-team variables. The buffer decisions are honoured: a value
in @global is stored and loaded back, a `reg`/`shared` value lives in an on-chip tile, a `recompute` value is
inlined at every read; loads merged by load-cse share a register within a loop body. A cross-team statement
writes one partial per team into `<target>_part` and a second kernel combines them.

For an op-by-op graph this is the op-by-op program (one thread per output element). It is slow for fused groups
- the search (`schedule`) chooses the real thread mapping - but it is the executable meaning of every graph
state, runs on the simulator and prints after each pass (`--print-ir-after-all`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from gir import ir
from gir.errors import GirError
from gir.parser import parse_text
from gir.printer import format_expr, format_type
from gir.scan import scan_of
from gir.walk import reductions_preorder
from gir.passes.schedule.emit import C, Lines, V, add, alloc, dim_expr, fx, identity, mul, prod_expr, simplify, tile
from gir.passes.schedule.kinds import BOOL, F32, kind_of

WARP = 32


def pick_threads(ext_hint: int, warp: int) -> int:
    """Threads per block of the reference mapping: the team count rounded up to a power of two, 32..256."""
    t = warp
    while t < 256 and t < ext_hint:
        t *= 2
    return t


def print_graph(g) -> ir.Func:
    """The explicit function a FuncGraph stands for."""
    items: list[str] = []
    kernels: list[str] = []
    for grp in g.groups:
        if any(scan_of(g.stmts[s].value) is not None for s in grp.stmts):
            kernels += _scan_kernels(g, grp)   # the reference mapping cannot express a scan
            continue
        kp = KernelPrinter(g, grp)
        kernels += kp.kernels(f"{g.name}_{grp.id}")
        items += kp.global_allocs
    for b in g.buffers.values():
        if b.role == "temp" and b.stored:
            items.insert(0, f"alloc {b.name}: {format_type(b.type)} @global")
    params = ", ".join(f"{p.name}: {format_type(p.type)}" for p in g.func.params)
    res = ", ".join(f"{p.name}: {format_type(p.type)}" for p in g.func.results)
    text = f"func {g.name}({params}) -> ({res}) {{\n" + "\n".join(items + kernels) + "\n}\n"
    try:
        out = parse_text(text, f"<idfg {g.name}>", limits=False).funcs[0]
    except GirError as exc:
        raise GirError(f"internal error: the IDFG of '{g.name}' printed as invalid GIR: {exc}\n{text}") from None
    return replace(out, loc=g.func.loc)


def _scan_kernels(g, grp) -> list[str]:
    """A group of scans as the `scan` recipe maps it (passes/middle/search/scan.py) on the default GPU machine with
    the default size hints: the printed IDFG is a faithful program before the search runs."""
    from gir.passes.machines import DEFAULT_FOR_TARGET
    from gir.passes.middle.search import scan as recipe
    from gir.passes.middle.search.units import Unit
    unit = Unit([g.stmts[s] for s in grp.stmts], grp)
    return recipe.candidates(g, unit, DEFAULT_FOR_TARGET["sim"], {})[0].emit(f"{g.name}_{grp.id}").kernels


@dataclass
class _Scope:
    """Loads emitted in one loop body: (root load node, index text) -> register."""
    loads: dict = field(default_factory=dict)


class KernelPrinter:
    """The reference kernel(s) of one group."""

    def __init__(self, g, grp, extra_stores: set[str] = frozenset()):
        self.g, self.grp = g, grp
        self.extra_stores = set(extra_stores)
        self.global_allocs: list[str] = []
        self.n = 0

    # ------------------------------------------------------------------ kernel skeleton
    def kernels(self, name: str) -> list[str]:
        g, grp = self.g, self.grp
        L = Lines()
        L.open(f"kernel {name}")
        self.team_env: dict[str, ir.Expr] = {}
        self.tpb = 1
        self.declared: set[str] = set()
        team = list(grp.team)
        conds: list[str] = []
        loops: list[tuple[str, ir.Dim]] = []
        if not team:
            L.open("parallel _b0 in 0..1 @block")
            L.open("parallel _t in 0..1 @thread")
        else:
            last = team[-1]
            ext = grp.axes[last]
            tpb = pick_threads(ext if isinstance(ext, int) else 1024, WARP)
            self.tpb = tpb
            outer = team[:-1]
            blocks = outer[-2:]
            for k, a in enumerate(blocks):
                L.open(f"parallel _b{k} in 0..{format_expr(dim_expr(grp.axes[a]))} @block")
                self.team_env[a] = V(f"_b{k}")
            L.open(f"parallel _bt in 0..cdiv({format_expr(dim_expr(ext))}, {tpb}) @block")
            L.open(f"parallel _t in 0..{tpb} @thread")
            self.team_env[last] = add(mul(V("_bt"), C(tpb)), V("_t"))
            if not (isinstance(ext, int) and ext % tpb == 0):
                conds.append(f"{fx(self.team_env[last])} < {format_expr(dim_expr(ext))}")
            for a in outer[:len(outer) - len(blocks)]:
                loops.append((f"_o_{a}", grp.axes[a]))
                self.team_env[a] = V(f"_o_{a}")
        self.allocs: list[str] = []
        B = Lines()
        self.combines: list[str] = []
        for s in grp.stmts:
            self.statement(B, g.stmts[s])
        for a in self.allocs:
            L(a)
        for var, ext in loops:
            L.open(f"for {var} in 0..{format_expr(dim_expr(ext))}")
        if conds:
            L.open(f"if {' and '.join(conds)}")
        for line in B.lines:
            L(line)
        while L.depth:
            L.close()
        return [L.text()] + self.combines

    # ------------------------------------------------------------------ statements
    def level(self, tensor: str) -> str:
        b = self.g.buffers[tensor]
        return b.level

    def in_group(self, tensor: str) -> bool:
        p = self.g.producer(tensor)
        return p is not None and p.id in self.grp.stmts

    def statement(self, B: Lines, s) -> None:
        g, grp = self.g, self.grp
        buf = g.buffers[s.target]
        stored = buf.stored or s.target in self.extra_stores
        consumed_here = any(n.forwarded for n in g.nodes if n.kind == "load" and n.tensor == s.target)
        if buf.level == "recompute" and not stored:
            return  # inlined at every read
        env = {}
        team_vars = dict(zip(grp.team_vars(s.id), grp.team)) if set(grp.team) <= set(grp.varmap[s.id].values()) \
            else {}
        for v, a in team_vars.items():
            env[v] = self.team_env[a]
        own = [v for v in s.out_vars if v not in team_vars]
        for v in own:
            env[v] = V(_loopvar(s, v))
            B.open(f"for {_loopvar(s, v)} in 0..{format_expr(dim_expr(s.ranges[v]))}")
        self.scopes = [_Scope()]
        self.stmt = s
        self.node_of = {id(n.ref): n for n in g.loads(s.id)}
        cross = s.id in grp.cross
        if cross:  # this team's partial of the (single) reduction; the rest of the value is in the combine
            val = self.reduce(reductions_preorder(s.value)[0], env, B, s, cross_part=True)
        else:
            val = self.expr(s.value, env, B, s)
        dt = g.types[s.target].dtype
        res = self.reg(dt if not cross else self.acc_dtype(s), [1])
        B(f"{res}[0:1] = {format_expr(val)}")
        idx = [env[v] for v in s.out_vars]
        if cross:
            part = f"{s.target}_part"
            tdims = [grp.axes[a] for a in grp.team]
            self.global_allocs.append(alloc(part, self.acc_dtype(s), tdims + [s.ranges[v] for v in s.out_vars],
                                            "global"))
            pidx = [self.team_env[a] for a in grp.team] + idx
            B(f"store {part}[{', '.join(fx(i) for i in pidx)}] <- {res}[0:1]")
            self.combines.append(self.combine_kernel(s, part))
        else:
            if stored:
                B(f"store {s.target}[{', '.join(fx(i) for i in idx)}] <- {res}[0:1]")
            if consumed_here and buf.level in ("reg", "shared"):
                B(f"copy {format_expr(self.onchip(s.target, idx))} <- {res}[0:1]")
        for _ in own:
            B.close()

    def acc_dtype(self, s) -> ir.DType:
        red = reductions_preorder(s.value)[0]
        dt = kind_of(red, self.g.types)
        return F32 if dt == BOOL else dt

    # ------------------------------------------------------------------ on-chip buffers
    def onchip(self, tensor: str, idx: list[ir.Expr]) -> ir.Ref:
        """The on-chip tile element of a forwarded value at `idx` (indices of its producer's output variables):
        a tile over the producer's non-team dimensions (constant extents), one per thread (`reg`) or one per
        block with a row per thread (`shared`)."""
        p = self.g.producer(tensor)
        name = f"_v_{tensor}"
        own = [k for k, v in enumerate(p.out_vars) if self.grp.varmap[p.id][v] not in self.grp.team]
        shape = [p.ranges[p.out_vars[k]] for k in own]
        if any(not isinstance(d, int) for d in shape):
            raise GirError(f"internal error: '{tensor}' is kept on chip but its tile has symbolic extents")
        level = self.g.buffers[tensor].level
        if name not in self.declared:
            self.declared.add(name)
            if level == "shared":
                self.allocs.insert(0, alloc(name, self.g.types[tensor].dtype, [self.tpb] + (shape or [1]), "shared"))
            else:
                self.allocs.append(alloc(name, self.g.types[tensor].dtype, shape or [1], "reg"))
        parts: list = [idx[k] for k in own]
        parts = parts[:-1] + [(parts[-1], 1)] if parts else [(C(0), 1)]
        if level == "shared":
            parts = [V("_t") if self.grp.team else C(0)] + parts
        return tile(name, parts)

    def reg(self, dtype: ir.DType, shape) -> str:
        self.n += 1
        name = f"_r{self.n}"
        self.allocs.append(alloc(name, dtype, shape, "reg"))
        return name

    # ------------------------------------------------------------------ expressions
    def expr(self, e, env, B: Lines, s) -> ir.Expr:
        """Operator-layer expression -> compute expression over registers, emitting loads and reduction loops."""
        if isinstance(e, ir.Ref):
            return self.ref(e, env, B)
        if isinstance(e, ir.Var):
            return simplify(env[e.name]) if e.name in env else e
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, self.expr(e.lhs, env, B, s), self.expr(e.rhs, env, B, s))
        if isinstance(e, ir.UnOp):
            return ir.UnOp(e.op, self.expr(e.operand, env, B, s))
        if isinstance(e, ir.Call):
            return ir.Call(e.fn, tuple(self.expr(a, env, B, s) for a in e.args))
        if isinstance(e, ir.Reduce):
            return self.reduce(e, env, B, s, False)
        return e

    def reduce(self, e: ir.Reduce, env, B: Lines, s, cross_part: bool) -> ir.Expr:
        k = reductions_preorder(s.value).index(e)
        bound = s.reduce_vars.get(k, ())
        dt = kind_of(e, self.g.types)
        dt = F32 if dt == BOOL else dt
        acc = self.reg(dt, [1])
        B(f"{acc}[0:1] = {identity(e.op, dt)}")
        inner = dict(env)
        team_vars = dict(zip(self.grp.team_vars(s.id), self.grp.team)) if cross_part else {}
        looped = []
        for v in bound:
            if v in team_vars:  # a cross-team reduction: this team's coordinate, no loop
                inner[v] = self.team_env[team_vars[v]]
                continue
            B.open(f"for {_loopvar(s, v)} in 0..{format_expr(dim_expr(s.ranges[v]))}")
            inner[v] = V(_loopvar(s, v))
            looped.append(v)
        self.scopes.append(_Scope())
        val = format_expr(self.expr(e.arg, inner, B, s))
        self.scopes.pop()
        a = f"{acc}[0:1]"
        op = "sum" if e.op == "mean" else e.op
        upd = {"sum": f"{a} + ({val})", "prod": f"{a} * ({val})"}.get(op, f"{op}({a}, {val})")
        B(f"{a} = {upd}")
        for _ in looped:
            B.close()
        ref = ir.Ref(acc, (ir.Slice(C(0), C(1)),))
        if e.op == "mean" and not cross_part:
            return ir.BinOp("/", ref, prod_expr([s.ranges[v] for v in bound]))
        return ref

    def ref(self, e: ir.Ref, env, B: Lines) -> ir.Expr:
        g = self.g
        node = self.node_of.get(id(e))
        if self.in_group(e.name) and self.level(e.name) == "recompute" and (node is None or node.forwarded):
            return self.inline(e, env, B)
        idx = [simplify(_subst(i, env)) for i in e.index]
        if self.in_group(e.name) and node is not None and node.forwarded and self.level(e.name) in ("reg", "shared"):
            return self.onchip(e.name, [_subst(i, env) for i in e.index])
        root = node.merged_into if node is not None and node.merged_into is not None else \
            (node.id if node is not None else None)
        key = (root, e.name, tuple(fx(i) for i in idx))
        for sc in reversed(self.scopes):
            if root is not None and key in sc.loads:
                return ir.Ref(sc.loads[key], (ir.Slice(C(0), C(1)),))
        r = self.reg(g.types[e.name].dtype, [1])
        B(f"load {r}[0:1] <- {e.name}[{', '.join(fx(i) for i in idx)}]")
        self.scopes[-1].loads[key] = r
        return ir.Ref(r, (ir.Slice(C(0), C(1)),))

    def inline(self, e: ir.Ref, env, B: Lines) -> ir.Expr:
        """A recomputed value: its producer's expression at the consumer's indices."""
        p = self.g.producer(e.name)
        penv = {v: _subst(i, env) for v, i in zip(p.out_vars, e.index)}
        saved = self.node_of
        self.node_of = {id(n.ref): n for n in self.g.loads(p.id)}
        saved_stmt = self.stmt
        self.stmt = p
        try:
            return self.expr(p.value, penv, B, p)
        finally:
            self.node_of, self.stmt = saved, saved_stmt

    # ------------------------------------------------------------------ cross-team combine
    def combine_kernel(self, s, part: str) -> str:
        """`target[out] = g(op over teams of part[teams, out])` as a one-statement kernel."""
        from gir.passes.middle.graph import Stmt
        red = reductions_preorder(s.value)[0]
        tvars = [f"_q{k}" for k in range(len(self.grp.team))]
        ref = ir.Ref(part, tuple(ir.Var(v) for v in tvars) + tuple(ir.Var(v) for v in s.out_vars))
        op = "sum" if red.op == "mean" else red.op
        combined: ir.Expr = ir.Reduce(op, ref)
        if red.op == "mean":
            combined = ir.BinOp("/", combined, prod_expr([s.ranges[v] for v in s.reduce_vars[0]]))
        value = _replace_node(s.value, red, combined)
        ranges = dict(s.ranges)
        ranges.update({v: self.grp.axes[a] for v, a in zip(tvars, self.grp.team)})
        cs = Stmt(-1, s.target, s.out_vars, ranges, value, {0: tuple(tvars)}, s.loc)
        ptype = ir.TensorType(self.acc_dtype(s), tuple([self.grp.axes[a] for a in self.grp.team]
                                                       + [s.ranges[v] for v in s.out_vars]))
        return standalone_kernel(self.g, cs, f"{self.g.name}_{self.grp.id}_{s.target}", {part: ptype})


def standalone_kernel(g, stmt, name: str, extra_types: dict | None = None) -> str:
    """The reference kernel of one statement that is not part of the graph (a combine step, a statement peeled
    out of its group): every tensor it reads comes from @global; one thread per output element."""
    from gir.passes.middle.graph import Group
    shim = _Shim(g, stmt, extra_types or {})
    grp = Group(-1, [stmt.id], {v: stmt.ranges[v] for v in stmt.vars}, {stmt.id: {v: v for v in stmt.vars}},
                tuple(stmt.out_vars))
    return KernelPrinter(shim, grp).kernels(name)[0]


class _Shim:
    """A one-statement view of a graph: the statement's reads all come from @global."""

    def __init__(self, g, stmt, extra_types):
        from gir.passes.middle.graph import Buffer
        self.name = g.name
        self.types = dict(g.types)
        self.types.update(extra_types)
        self.stmts = {stmt.id: stmt}
        self.buffers = dict(g.buffers)
        self.buffers[stmt.target] = Buffer(stmt.target, g.types[stmt.target], "result")
        self.nodes = []

    def producer(self, tensor):
        return None

    def loads(self, stmt):
        return []


def _loopvar(s, v: str) -> str:
    return f"_u{s.id}_{v}" if s.id >= 0 else f"_uc_{v}"


def _subst(e, env):
    from gir.passes.schedule.emit import subst
    return subst(e, env)


def _replace_node(e, old, new):
    """`e` with the sub-expression `old` (by identity) replaced by `new`."""
    if e is old:
        return new
    if isinstance(e, ir.BinOp):
        return replace(e, lhs=_replace_node(e.lhs, old, new), rhs=_replace_node(e.rhs, old, new))
    if isinstance(e, ir.UnOp):
        return replace(e, operand=_replace_node(e.operand, old, new))
    if isinstance(e, ir.Call):
        return replace(e, args=tuple(_replace_node(a, old, new) for a in e.args))
    if isinstance(e, ir.Reduce):
        return replace(e, arg=_replace_node(e.arg, old, new))
    return e
