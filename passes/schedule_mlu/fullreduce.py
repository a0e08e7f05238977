"""Scalar (full) reductions for the MLU: `loss[] = OP(...)` over a whole [M, N] value or over a row value.

The fused schedule splits each scalar statement in two:
  * the row-model kernel computes per-row partials `p_[i] = OP_j(...)` (or uses an existing row value such as
    `loss_row[i]`) and stores them to a small GDRAM buffer `[M]` (tails are handled by the row kernel's masks);
  * a one-core combine kernel reduces that buffer into the scalar and applies the scalar arithmetic around the
    reduction (e.g. `/ M`, the `1 / count` of a mean):

    kernel K_c with task_dim=1 {
      parallel task_ in 0..1 @core {
        acc[0:1] = IDENT
        for k in 0..M // C { load cb[0:C] <- p_[k*C:k*C+C]; cs[0:1] = OP(cb[0:C]); acc[0:1] = acc OP cs }
        cb[0:C] = IDENT; load cb[0:T] <- p_[...]; cs[0:1] = OP(cb[0:C]); acc[0:1] = acc OP cs   # tail T = M % C
        acc[0:1] = wrapper(acc); store loss <- acc[0:1]
      }
    }
The partial buffer costs 8 bytes per row of GDRAM traffic (M * N * 4-byte inputs dominate).
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.shapes import reductions_preorder
from gir.walk import map_expr, walk
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.exactdiv import in_exact_scope, mean_of
from gir.passes.schedule_mlu.rowmodel import NotRowModel

F32, I32 = ir.DType.f32, ir.DType.i32
IDENT = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}
INT_IDENT = {"sum": 0, "mean": 0, "max": -(1 << 31), "min": (1 << 31) - 1}
CHUNK = 8192


@dataclass
class ScalarReduce:
    target: str          # the rank-0 result
    op: str              # sum mean max min
    src: str             # the row value [M] reduced by the combine kernel
    value: ir.Expr       # the statement's value (the Reduce node is replaced by the accumulator)
    node: ir.Reduce
    count: int           # elements averaged by a mean


def split_scalar(func: ir.Func, info) -> tuple[ir.Func, list[ScalarReduce], list[ir.Param]]:
    """(row-model function without the scalar statements, the scalar reductions, extra row buffers to allocate)."""
    results = {p.name: p for p in func.results}
    scalars = [st for st in info.stmts if not st.out_vars]
    if not scalars:
        return func, [], []
    body, extra_results, extra, reds = [], [], [], []
    names = {st.stmt.target.name for st in scalars}
    for k, st in enumerate(info.stmts):
        from gir.shapes import _walk
        if any(isinstance(x, ir.Ref) and x.name in names for x in _walk(st.stmt.value)):
            raise NotRowModel("a scalar reduction result is used by another statement")
        if st.out_vars:
            body.append(st.stmt)
            continue
        nodes = reductions_preorder(st.stmt.value)
        if len(nodes) != 1 or nodes[0].op not in IDENT or st.stmt.target.name not in results:
            raise NotRowModel("scalar statement is not one sum/mean/max/min")
        node, bound = nodes[0], st.reduce_vars.get(0, ())
        if any(isinstance(x, ir.Reduce) for x in _walk(node.arg)):
            raise NotRowModel("nested reduction in a scalar statement")
        sizes = [st.ranges[v] for v in bound]
        if any(not isinstance(s, int) for s in sizes) or len(bound) not in (1, 2):
            raise NotRowModel("scalar reduction over unsupported axes")
        count = 1
        for s in sizes:
            count *= s
        arg = node.arg
        if len(bound) == 1 and isinstance(arg, ir.Ref) and len(arg.index) == 1 and \
                isinstance(arg.index[0], ir.Var) and arg.index[0].name == bound[0]:
            src = arg.name
            if src not in results and src not in {p.name for p in extra_results + list(func.params)}:
                typ = info.types[src]
                extra_results.append(ir.Param(src, typ))
                extra.append(ir.Param(src, typ))
        else:
            src = f"p{k}_"
            row_op = "sum" if node.op == "mean" else node.op
            val = ir.Reduce(row_op, arg) if len(bound) == 2 else arg
            body.append(ir.Assign(ir.Ref(src, (ir.Var(bound[0]),)), val))
            typ = ir.TensorType(F32, (sizes[0],))
            extra_results.append(ir.Param(src, typ))
            extra.append(ir.Param(src, typ))
        reds.append(ScalarReduce(st.stmt.target.name, node.op, src, st.stmt.value, node, count))
    res = tuple(p for p in func.results if p.name not in names) + tuple(extra_results)
    main = ir.Func(func.name, func.params, res, tuple(body))
    return main, reds, extra


def _replace(e, node, new):
    if e is node:
        return new
    if isinstance(e, ir.BinOp):
        lhs, rhs = _replace(e.lhs, node, new), _replace(e.rhs, node, new)
        if e.op == "/" and isinstance(rhs, ir.Const) and rhs.value and not in_exact_scope():   # x * (1 / c)
            return ir.BinOp("*", lhs, B.c(1.0 / float(rhs.value)))
        return ir.BinOp(e.op, lhs, rhs)
    if isinstance(e, ir.UnOp):
        return ir.UnOp(e.op, _replace(e.operand, node, new))
    if isinstance(e, ir.Call):
        return ir.Call(e.fn, tuple(_replace(a, node, new) for a in e.args))
    return e


def combine_kernel(red: ScalarReduce, m: int, name: str, src_dtype: ir.DType = F32,
                   dst_dtype: ir.DType = F32, types: dict | None = None) -> ir.Kernel:
    """One core reduces the [m] partials `red.src` (elements of `src_dtype`) into the scalar `red.target`
    (`dst_dtype`). Data movement does not convert: other element types land in a tile of their own type and are
    widened to f32 by a compute (`cb_ = f32(cl_)`); a non-f32 result is rounded into `co_` before its store.
    Scalars the statement reads besides the reduction (`t[] = sum(x[i]) + s[]`; `types` gives theirs) are loaded
    into NRAM first (a compute reads no GDRAM)."""
    c = min(CHUNK, -(-m // 64) * 64)
    op = "sum" if red.op == "mean" else red.op
    acc, cs = B.ref("ca_", B.sl(0, 1)), B.ref("cs_", B.sl(0, 1))
    cb = B.ref("cb_", B.sl(0, c))
    # i32 partials of an integer result reduce as integers (the vector reductions accumulate int in int64): f32
    # would round values beyond 2^24, and the tail's padding must be an integer identity
    exact = src_dtype == I32 and not dst_dtype.is_float and op in ("sum", "max", "min")
    adt = I32 if exact else F32
    ident = INT_IDENT[op] if exact else IDENT[op]
    allocs = [B.alloc("cb_", adt, (c,), "nram"), B.alloc("cs_", adt, (1,), "nram"), B.alloc("ca_", adt, (1,), "nram")]
    land = "cb_"
    if src_dtype != adt:
        land = "cl_"
        allocs.append(B.alloc(land, src_dtype, (c,), "nram"))
    widen = [] if land == "cb_" else [ir.Assign(cb, ir.Call("f32", (B.ref(land, B.sl(0, c)),)))]

    def step():
        comb = ir.BinOp("+", acc, cs) if op == "sum" else ir.Call(op, (acc, cs))
        return widen + [ir.Assign(cs, ir.Reduce(op, cb)), ir.Assign(acc, comb)]
    body: list = allocs + [ir.Assign(acc, B.c(ident))]
    full, tail = divmod(m, c)
    if full:
        k0 = B.mul(B.v("k_"), c)
        body.append(ir.For("k_", B.c(0), B.c(full), tuple(
            [B.move("load", B.ref(land, B.sl(0, c)), B.ref(red.src, B.sl(k0, c)))] + step())))
    if tail:
        pad = INT_IDENT[op] if not src_dtype.is_float and src_dtype != ir.DType.bool else IDENT[op]
        body.append(ir.Assign(B.ref(land, B.sl(0, c)), B.c(ident if land == "cb_" else pad)))
        body.append(B.move("load", B.ref(land, B.sl(0, tail)), B.ref(red.src, B.sl(full * c, tail))))
        body += step()
    wrapped = mean_of(acc, red.count) if red.op == "mean" else acc
    value = _replace(red.value, red.node, wrapped)
    scalars = list(dict.fromkeys(x.name for x in walk(value) if isinstance(x, ir.Ref) and not x.index and
                                 types is not None and x.name in types and not types[x.name].shape))
    on_chip = {}
    for k, nm in enumerate(scalars):
        dt = types[nm].dtype
        tile = B.ref(f"cv{k}_", B.sl(0, 1))
        body[len(allocs):len(allocs)] = [B.alloc(f"cv{k}_", dt, (1,), "nram")]
        body.append(B.move("load", tile, B.ref(nm)))
        on_chip[nm] = tile if dt == adt else ir.Call(adt.value, (tile,))
    if on_chip:
        value = map_expr(value, lambda x: on_chip.get(x.name, x) if isinstance(x, ir.Ref) and not x.index else x)
    body.append(ir.Assign(acc, value))
    if dst_dtype != adt:
        out = B.ref("co_", B.sl(0, 1))
        body.insert(len(allocs), B.alloc("co_", dst_dtype, (1,), "nram"))
        body += [ir.Assign(out, ir.Call(dst_dtype.value, (acc,))), B.move("store", B.ref(red.target), out)]
    else:
        body.append(B.move("store", B.ref(red.target), acc))
    par = ir.Parallel("task_", B.c(0), B.c(1), ir.ParLevel.core, tuple(body))
    return ir.Kernel(name, (par,), (("task_dim", "1"),))
