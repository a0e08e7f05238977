"""The general fallback: one kernel per statement, one thread per output element.

The innermost output index maps to consecutive threads (coalesced when it is the contiguous dim of
the operands, e.g. a column sum); further output dims map to block dims (at most 3 in all) and then
to sequential loops. Reductions run thread-serially per output element, any nesting allowed.
"""
from __future__ import annotations

from gir import ir
from gir.printer import format_expr
from gir.shapes import FuncInfo, StmtInfo, reductions_preorder
from passes.schedule.emit import C, Lines, V, add, alloc, dim_expr, fx, mul, prod_expr, simplify, subst
from passes.schedule.kinds import BOOL, F32, kind_of


def pick_threads(ext_hint: int, warp: int) -> int:
    t = warp
    while t < 256 and t < ext_hint:
        t *= 2
    return t


class GenericKernel:
    def __init__(self, st: StmtInfo, info: FuncInfo, warp: int, hints: dict[str, int]):
        self.st, self.info, self.warp = st, info, warp
        self.types = info.types
        self.hints = hints
        self.n = 0

    def emit(self, kname: str, threads: int | None = None) -> str:
        st = self.st
        L = Lines()
        L.open(f"kernel {kname}")
        outs = list(st.out_vars)
        env: dict[str, ir.Expr] = {}
        conds = []
        loops: list[str] = []
        if not outs:
            L.open("parallel _b0 in 0..1 @block")
            L.open("parallel _t in 0..1 @thread")
        else:
            last = outs[-1]
            ext = st.ranges[last]
            hint = ext if isinstance(ext, int) else self.hints.get(ext, 1024)
            T = threads or pick_threads(hint, self.warp)
            outer = outs[:-1]
            blocks = outer[-2:] if len(outer) > 2 else outer
            loops = outer[: len(outer) - len(blocks)]
            for k, v in enumerate(blocks):
                L.open(f"parallel _b{k} in 0..{format_expr(dim_expr(st.ranges[v]))} @block")
                env[v] = V(f"_b{k}")
            L.open(f"parallel _bt in 0..cdiv({format_expr(dim_expr(ext))}, {T}) @block")
            L.open(f"parallel _t in 0..{T} @thread")
            env[last] = add(mul(V("_bt"), C(T)), V("_t"))
            if not (isinstance(ext, int) and ext % T == 0):
                conds.append(f"{fx(env[last])} < {format_expr(dim_expr(ext))}")
            for v in loops:
                env[v] = V(f"_o_{v}")
        self.body_lines = Lines()
        B = self.body_lines
        B.depth = 0
        self.allocs: list[str] = []
        val = self.gen(st.stmt.value, env, B)
        tdt = self.types[st.stmt.target.name].dtype
        self.allocs.append(alloc("_res", tdt, [1], "reg"))
        B(f"_res[0:1] = {format_expr(val)}")
        tgt = ir.Ref(st.stmt.target.name, tuple(env[v] for v in outs))
        B(f"store {format_expr(_simp(tgt))} <- _res[0:1]")
        for a in self.allocs:
            L(a)
        for v in loops:
            L.open(f"for _o_{v} in 0..{format_expr(dim_expr(st.ranges[v]))}")
        if conds:
            L.open(f"if {' and '.join(conds)}")
        for line in B.lines:
            L(line)
        while L.depth:
            L.close()
        return L.text()

    def gen(self, e: ir.Expr, env: dict[str, ir.Expr], B: Lines) -> ir.Expr:
        if isinstance(e, ir.Ref):
            self.n += 1
            name = f"_r{self.n}"
            self.allocs.append(alloc(name, self.types[e.name].dtype, [1], "reg"))
            B(f"load {name}[0:1] <- {format_expr(_simp(subst(e, env)))}")
            return ir.Ref(name, (ir.Slice(C(0), C(1)),))
        if isinstance(e, ir.Var):
            return simplify(env[e.name]) if e.name in env else e
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, self.gen(e.lhs, env, B), self.gen(e.rhs, env, B))
        if isinstance(e, ir.UnOp):
            return ir.UnOp(e.op, self.gen(e.operand, env, B))
        if isinstance(e, ir.Call):
            return ir.Call(e.fn, tuple(self.gen(a, env, B) for a in e.args))
        if isinstance(e, ir.Reduce):
            k = reductions_preorder(self.st.stmt.value).index(e)
            bound = self.st.reduce_vars.get(k, ())
            dt = kind_of(e, self.types)
            dt = F32 if dt == BOOL else dt
            self.n += 1
            acc = f"_a{self.n}"
            self.allocs.append(alloc(acc, dt, [1], "reg"))
            from passes.schedule.emit import identity
            B(f"{acc}[0:1] = {identity(e.op, dt)}")
            inner = dict(env)
            for v in bound:
                B.open(f"for _u_{v} in 0..{format_expr(dim_expr(self.st.ranges[v]))}")
                inner[v] = V(f"_u_{v}")
            val = format_expr(self.gen(e.arg, inner, B))
            a = f"{acc}[0:1]"
            op = "sum" if e.op == "mean" else e.op
            upd = {"sum": f"{a} + ({val})", "prod": f"{a} * ({val})"}.get(op, f"{op}({a}, {val})")
            B(f"{a} = {upd}")
            for _ in bound:
                B.close()
            ref = ir.Ref(acc, (ir.Slice(C(0), C(1)),))
            if e.op == "mean":
                return ir.BinOp("/", ref, prod_expr([self.st.ranges[v] for v in bound]))
            return ref
        return e


def _simp(r: ir.Ref) -> ir.Ref:
    return ir.Ref(r.name, tuple(simplify(i) for i in r.index))
