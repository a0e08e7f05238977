"""Column / middle-axis reductions → explicit MLU GIR: `y[b, d] = OP_s x[b, s, d]` (and `y[d] = OP_i x[i, d]`).

The input is viewed as [B, S, D] (B = 1 without an outer axis). The S axis is cut into tiles of R rows and the
tiles of each b into P parts; a work unit (b, p) is one core's job (units are assigned cyclically to the cores):

    acc[0:D] = identity
    for k in 0..tiles of the part {                      # loads then computes: software-pipelined by codegen
      load x_t[0:R, 0:D] <- x[b, s0:s0 + R, 0:D]
      cs[0:D] = OP(x_t[0:R, 0:D], axis=0)               # __bang_reduce_*_cols
      acc[0:D] = acc[0:D] OP cs[0:D]
    }
    (last part only: the same for the tail tile of S % R rows, with its exact size)
    store y[b, 0:D] <- acc            (P == 1)   or   store part[b, p, 0:D] <- acc   (P > 1)

With P > 1 a second kernel combines the partials per (b, column chunk): load part[b, 0:P, chunk], reduce over
axis 0, store. Every shape is static (sizes are specialised), so tails need no masks.

f16 / bf16 tensors (x and y of the same float type): tiles land in a 16-bit NRAM tile and are converted to f32
(`x_t = f32(x_h)`) like the row kernels do; accumulation, partials (f32 in GDRAM) and the combine run in f32,
and the result is converted back (`acc_h = f16(acc_t)`) just before the store.
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.exactdiv import mean_of
from gir.passes.schedule_mlu.rowmodel import NotRowModel

F32 = ir.DType.f32
UNIT = B.add(B.mul(B.v("it_"), 32), B.v("task_"))   # the work unit of iteration it_ on core task_ (32 tasks)
IDENT = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}
NRAM_BUDGET = 512 * 1024
HALF_OK = (ir.DType.f32, ir.DType.f16, ir.DType.bf16)   # 16-bit tiles are converted to f32 on chip


def match_colreduce(spec: ir.Func, info) -> tuple | None:
    """(x, y, op, B, S, D, has_outer) when `spec` (sizes specialised) is one column/middle-axis reduction."""
    if len(info.stmts) != 1 or len(spec.results) != 1:
        return None
    st = info.stmts[0]
    val = st.stmt.value
    if not isinstance(val, ir.Reduce) or val.op not in IDENT or not isinstance(val.arg, ir.Ref):
        return None
    x, y = val.arg, st.stmt.target
    if any(not isinstance(i, ir.Var) for i in x.index + y.index):
        return None
    params = {p.name: p for p in spec.params}
    if x.name not in params or y.name != spec.results[0].name:
        return None
    dt = params[x.name].type.dtype
    if dt not in HALF_OK or spec.results[0].type.dtype != dt:
        return None
    xv = [i.name for i in x.index]
    yv = [i.name for i in y.index]
    red = [v for v in xv if v not in yv]
    if len(red) != 1 or len(set(xv)) != len(xv) or [v for v in xv if v in yv] != yv:
        return None
    k = xv.index(red[0])
    if k == len(xv) - 1 or len(xv) - k - 1 != 1 or k > 1 or _n(spec, x.name, k + 1) < 2:
        return None      # reductions over the last axis are row reductions; one inner axis, at most one outer
    shape = params[x.name].type.shape
    b = shape[0] if k == 1 else 1
    return x.name, y.name, val.op, b, shape[k], shape[k + 1], k == 1, dt


def _n(spec, name, axis) -> int:
    d = next(p for p in spec.params if p.name == name).type.shape[axis]
    return d if isinstance(d, int) else 0


def _idx(outer, b, *rest):
    return ((b,) if outer else ()) + rest


def colreduce_func(spec: ir.Func, info, tasks: int = 32) -> list:
    """Items (gdram allocs and kernels) of the explicit function for a matched column reduction."""
    m = match_colreduce(spec, info)
    if m is None or tasks != 32:
        raise NotRowModel("not a column reduction")
    xn, yn, op, nb, s, d, outer, dt = m
    p_d = L.pitch((1, d))
    row_bytes = p_d * (4 + (dt.nbytes if dt != F32 else 0)) * 2   # f32 tile (+ 16-bit landing tile), x2 buffers
    r = max(1, min(64, s, NRAM_BUDGET // row_bytes))
    if NRAM_BUDGET // row_bytes < 1:
        raise NotRowModel("a row does not fit NRAM")
    ntiles = -(-s // r)
    parts = min(ntiles, max(1, tasks // nb))
    tp = -(-ntiles // parts)
    parts = -(-ntiles // tp)
    full, tail = s // r, s % r
    units = nb * parts
    name = spec.name
    red = "sum" if op == "mean" else op
    combine = {"sum": "+", "max": "max", "min": "min"}[red]

    def accum(acc, cs):
        a, c = B.ref(acc, B.sl(0, d)), B.ref(cs, B.sl(0, d))
        return ir.Assign(a, ir.BinOp("+", a, c) if combine == "+" else ir.Call(combine, (a, c)))

    bvar = ir.BinOp("//", UNIT, B.c(parts)) if parts > 1 else UNIT
    punit = ir.BinOp("%", UNIT, B.c(parts)) if parts > 1 else B.c(0)
    pvar = B.v("p_")     # a one-trip loop over punit, so that tile offsets are affine in loop variables

    def tile_steps(rows, s0):
        tile = B.ref("x_t", B.sl(0, rows), B.sl(0, d))
        land = tile if dt == F32 else B.ref("x_h", B.sl(0, rows), B.sl(0, d))
        ld = B.move("load", land, ir.Ref(xn, _idx(outer, bvar, B.sl(s0, rows), B.sl(0, d))))
        conv = [] if dt == F32 else [ir.Assign(tile, ir.Call("f32", (land,)))]
        cs = ir.Assign(B.ref("cs_t", B.sl(0, d)), ir.Reduce(red, tile, (0,)))
        return [ld, *conv, cs, accum("acc_t", "cs_t")]

    def loop(count):
        s0 = B.mul(B.add(B.mul(pvar, tp), B.v("k_")), r)
        return ir.For("k_", B.c(0), B.c(count), tuple(tile_steps(r, s0)))

    last_full = full - (parts - 1) * tp
    last = ([loop(last_full)] if last_full > 0 else []) + (tile_steps(tail, B.c(s - tail)) if tail else [])
    body: list = [ir.Assign(B.ref("acc_t", B.sl(0, d)), B.c(IDENT[op]))]
    if parts == 1:
        body += last
    else:
        body.append(ir.If(ir.BinOp("==", pvar, B.c(parts - 1)), tuple(last), (loop(tp),)))
    items: list = []
    if parts == 1:
        if op == "mean":
            body.append(ir.Assign(B.ref("acc_t", B.sl(0, d)), mean_of(B.ref("acc_t", B.sl(0, d)), s)))
        body += _store_steps(ir.Ref(yn, _idx(outer, bvar, B.sl(0, d))), "acc_t", "acc_h", d, dt)
    else:
        part = f"{name}_part"
        items.append(B.alloc(part, F32, (nb, parts, d), "gdram"))
        body.append(B.move("store", B.ref(part, bvar, pvar, B.sl(0, d)), B.ref("acc_t", B.sl(0, d))))
    body = [ir.For("p_", punit, B.add(punit, 1), tuple(body))]
    allocs = [B.alloc("x_t", F32, (r, d), "nram"), B.alloc("cs_t", F32, (d,), "nram"),
              B.alloc("acc_t", F32, (d,), "nram")]
    if dt != F32:
        allocs.append(B.alloc("x_h", dt, (r, d), "nram"))
        if parts == 1:
            allocs.append(B.alloc("acc_h", dt, (d,), "nram"))
    items.append(_unit_kernel(f"{name}_mlu", units, tasks, allocs, body))
    if parts > 1:
        items.append(_combine_kernel(f"{name}_mlu_combine", spec, yn, op, red, nb, parts, d, s, outer, tasks, dt))
    return items


def _store_steps(dst: ir.Ref, tile: str, half: str, width: int, dt: ir.DType) -> list:
    """Store the f32 tile `tile[0:width]` to `dst`, through the 16-bit tile `half` when the result is 16-bit."""
    src = B.ref(tile, B.sl(0, width))
    if dt == F32:
        return [B.move("store", dst, src)]
    h = B.ref(half, B.sl(0, width))
    return [ir.Assign(h, ir.Call(dt.value, (src,))), B.move("store", dst, h)]


def _unit_kernel(name, units, tasks, allocs, body) -> ir.Kernel:
    loop = ir.For("it_", B.c(0), unit_trips(units, tasks), tuple(body))
    par = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(allocs) + (loop,))
    return ir.Kernel(name, (par,), (("task_dim", str(tasks)),))


def unit_trips(units: int, tasks: int, task: ir.Expr | None = None) -> ir.Expr:
    """Units task_ walks (units task_, task_ + tasks, ...): cdiv(units - task_, tasks). `task`: the task's index
    when it is not the variable task_ (cl_ * 4 + co_ in a kernel of cluster and core scopes)."""
    return ir.BinOp("//", B.add(ir.BinOp("-", B.c(units), task or B.v("task_")), tasks - 1), B.c(tasks))


def _combine_kernel(name, spec, yn, op, red, nb, parts, d, s, outer, tasks, dt=F32) -> ir.Kernel:
    dc = L.round_up(max(1, -(-d // max(1, tasks // nb))), L.PITCH)
    dc = max(L.PITCH, min(dc, (128 * 1024) // (parts * 4) // L.PITCH * L.PITCH))
    dc = min(dc, d)
    chunks = -(-d // dc)
    dl = d - (chunks - 1) * dc
    part = f"{spec.name}_part"
    bvar = ir.BinOp("//", UNIT, B.c(chunks)) if chunks > 1 else UNIT
    cunit = ir.BinOp("%", UNIT, B.c(chunks)) if chunks > 1 else B.c(0)
    cvar = B.v("c_")

    def steps(width):
        c0 = B.mul(cvar, dc)
        ld = B.move("load", B.ref("p_t", B.sl(0, parts), B.sl(0, width)), B.ref(part, bvar, B.sl(0, parts),
                                                                                 B.sl(c0, width)))
        o = B.ref("o_t", B.sl(0, width))
        out = [ld, ir.Assign(o, ir.Reduce(red, B.ref("p_t", B.sl(0, parts), B.sl(0, width)), (0,)))]
        if op == "mean":
            out.append(ir.Assign(o, mean_of(o, s)))
        out += _store_steps(ir.Ref(yn, _idx(outer, bvar, B.sl(c0, width))), "o_t", "o_h", width, dt)
        return out
    body = steps(dc) if dl == dc else [ir.If(ir.BinOp("==", cvar, B.c(chunks - 1)), tuple(steps(dl)),
                                                 tuple(steps(dc)))]
    body = [ir.For("c_", cunit, B.add(cunit, 1), tuple(body))]
    allocs = [B.alloc("p_t", F32, (parts, dc), "nram"), B.alloc("o_t", F32, (dc,), "nram")]
    if dt != F32:
        allocs.append(B.alloc("o_h", dt, (dc,), "nram"))
    return _unit_kernel(name, nb * chunks, tasks, allocs, body)


def decode_units(radix: list, units: int, tasks: int, body: list, task: ir.Expr | None = None) -> list:
    """`body` inside one-trip loops that decode the work unit it_ * tasks + task_ into the mixed-radix digits
    `radix` ([(variable, extent)], most significant first): region starts stay affine. `task`: as unit_trips."""
    unit = B.add(B.mul(B.v("it_"), tasks), task or B.v("task_"))
    div = 1
    for name, ext in reversed(radix):
        x = unit if div == 1 else ir.BinOp("//", unit, B.c(div))
        x = x if div * ext >= units else ir.BinOp("%", x, B.c(ext))
        body = [ir.For(name, x, B.add(x, 1), tuple(body))]
        div *= ext
    return body
