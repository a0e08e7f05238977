"""General fallback: one kernel per operator-layer statement, every core computing a cyclic share of the output
elements with scalar code on 1-element @nram tiles (loads of single elements, scalar compute, reductions as loops).
Correct for every operator-layer function; slow, so the row model is preferred where it applies."""
from __future__ import annotations

from gir import ir
from gir.errors import DiagnosticCollector
from gir.kinds import KIND_FLOAT, KindChecker
from gir.shapes import reductions_preorder
from gir.passes.schedule_mlu import build as B

IDENT = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf"), "prod": 1.0}


def _subst(e, env):
    if isinstance(e, ir.Var):
        return env.get(e.name, e)
    if isinstance(e, ir.BinOp):
        return ir.BinOp(e.op, _subst(e.lhs, env), _subst(e.rhs, env))
    if isinstance(e, ir.UnOp):
        return ir.UnOp(e.op, _subst(e.operand, env))
    if isinstance(e, ir.Call):
        return ir.Call(e.fn, tuple(_subst(a, env) for a in e.args))
    return e


class _Kinds(KindChecker):
    """Value kinds of the (verified) statement's subexpressions."""

    def __init__(self, types):
        self.types, self.diag = types, DiagnosticCollector()


class _Stmt:
    def __init__(self, st, types, sizes, tasks, name):
        self.st, self.types, self.sizes, self.tasks, self.name = st, types, sizes, tasks, name
        self.allocs: list[ir.Alloc] = []
        self.n = 0
        self.reduces = {id(r): k for k, r in enumerate(reductions_preorder(st.stmt.value))}
        self.kinds = _Kinds(types)

    def ext(self, v):
        d = self.st.ranges[v]
        return d if isinstance(d, int) else self.sizes[d]

    def buf(self, dtype: ir.DType) -> str:
        self.n += 1
        name = f"s{self.n}"
        while name in self.types:   # a tensor of the program may be called s1
            name += "_"
        self.allocs.append(B.alloc(name, dtype, (1,), "nram"))
        return name

    def expr(self, e, env, out: list):
        if isinstance(e, ir.Ref):
            dtype = self.types[e.name].dtype
            b = self.buf(dtype)
            idx = tuple(_subst(i, env) for i in e.index)
            out.append(B.move("load", B.ref(b, B.sl(0, 1)), ir.Ref(e.name, idx)))
            return B.ref(b, B.sl(0, 1))
        if isinstance(e, ir.Var):
            if e.name in env:
                return env[e.name]
            return B.c(self.sizes[e.name])
        if isinstance(e, ir.BinOp):
            return ir.BinOp(e.op, self.expr(e.lhs, env, out), self.expr(e.rhs, env, out))
        if isinstance(e, ir.UnOp):
            return ir.UnOp(e.op, self.expr(e.operand, env, out))
        if isinstance(e, ir.Call):
            return ir.Call(e.fn, tuple(self.expr(a, env, out) for a in e.args))
        if isinstance(e, ir.Reduce):
            return self.reduce(e, env, out)
        return e

    def reduce(self, e: ir.Reduce, env, out: list):
        bound = self.st.reduce_vars.get(self.reduces[id(e)], ())
        # the accumulator has the kind the reduction's value is computed in (as the evaluator): an integer reduction
        # (of indices, integer tensors, integer selects) is exact in i32 (the MLU's only integer scalar type), a
        # float one is f32 whatever the statement's target (a float max nested under an i32 result stays float)
        int_valued = e.op != "mean" and self.kinds.expr_kind(e.arg, set()) != KIND_FLOAT
        dt = ir.DType.i32 if int_valued else ir.DType.f32
        acc = B.ref(self.buf(dt), B.sl(0, 1))
        ident = IDENT[e.op]
        if dt.is_int:
            ident = {0.0: 0, 1.0: 1}.get(ident, -2 ** 31 if ident < 0 else 2 ** 31 - 1)
        out.append(ir.Assign(acc, B.c(ident)))
        inner: list = []
        env2 = dict(env)
        for v in bound:
            env2[v] = B.v(f"{v}_r")
        val = self.expr(e.arg, env2, inner)
        op = {"sum": "+", "mean": "+", "prod": "*"}.get(e.op)
        inner.append(ir.Assign(acc, ir.BinOp(op, acc, val) if op else ir.Call(e.op, (acc, val))))
        for v in reversed(bound):
            inner = [ir.For(f"{v}_r", B.c(0), B.c(self.ext(v)), tuple(inner))]
        out.extend(inner)
        if e.op == "mean":
            count = 1
            for v in bound:
                count *= self.ext(v)
            return ir.BinOp("/", acc, B.c(float(count)))
        return acc

    def kernel(self) -> ir.Kernel:
        outs = self.st.out_vars
        total = 1
        for v in outs:
            total *= self.ext(v)
        flat = B.add(B.mul(B.v("fl_e"), self.tasks), B.v("fl_t"))
        env, stride = {}, 1
        for v in reversed(outs):
            ext = self.ext(v)
            x = ir.BinOp("//", flat, B.c(stride)) if stride != 1 else flat
            env[v] = ir.BinOp("%", x, B.c(ext)) if stride * ext < total else x
            stride *= ext
        body: list = []
        val = self.expr(self.st.stmt.value, env, body)
        target = self.st.stmt.target
        res = B.ref(self.buf(self.types[target.name].dtype), B.sl(0, 1))
        body.append(ir.Assign(res, val))
        body.append(B.move("store", ir.Ref(target.name, tuple(env[i.name] for i in target.index)), res))
        trips = ir.BinOp("//", B.add(ir.BinOp("-", B.c(total), B.v("fl_t")), self.tasks - 1), B.c(self.tasks))
        loop = ir.For("fl_e", B.c(0), trips, tuple(body))
        par = ir.Parallel("fl_t", B.c(0), B.c(self.tasks), ir.ParLevel.core, tuple(self.allocs) + (loop,))
        return ir.Kernel(self.name, (par,), (("task_dim", str(self.tasks)),))


def scalar_kernel(st, types, sizes, name: str, tasks: int = 32) -> ir.Kernel:
    return _Stmt(st, types, sizes, tasks, name).kernel()
