"""Permutations → explicit MLU GIR: 2-D transposes via NRAM tiles + `transpose()`, last-axis-preserving
permutations (e.g. permute0213) as strided GDRAM→GDRAM copies.

2-D transpose `y[j, i] = x[i, j]` (x: [M, N]) with tiles of Rb rows x Cb columns of x (both multiples of 64, so
the NRAM tiles are dense and `__bang_transpose` maps the whole buffer). Any element type is moved as is: a transpose
is pure data movement, so 16-bit (and i32 / bool) tiles are never widened to f32. `__bang_transpose` needs only that
each operand spans whole 128-byte units (rows*cols*sizeof % 128 == 0), which 64-multiples give for every element
size (a 64-element 16-bit row is exactly one unit). Cb stays 128 columns for every type (the cores share column
chunks, so wider chunks would idle cores below N = 32*Cb) and Rb grows as elements shrink, keeping 128 KiB tiles
(f32 256 rows, 16-bit 512, bool 1024): same NRAM budget, bytes per DMA transfer and per-tile fixed costs.

    parallel task_ in 0..32 @core {
      for cc_ in 0..(NC - task_ + 31) // 32 {              # full column chunks of x, cyclic over the cores
        for it_ in 0..NR {                                  # full row tiles: software-pipelined by codegen
          load xa[0:Rb, 0:Cb] <- x[it_*Rb : +Rb, c0 : +Cb]
          ta[0:Cb, 0:Rb] = transpose(xa[0:Rb, 0:Cb])
          store y[c0 : +Cb, it_*Rb : +Rb] <- ta[0:Cb, 0:Rb]
        }
        (row tail: the same with an exact-size load/store of M % Rb rows)
      }
      (column tail N % Cb: its row tiles cyclic over the cores; the corner tile on the last core)
    }

Tail tiles transpose the whole buffer (pad elements hold garbage and are never stored), so every transpose has
the same dense shape. Traffic is compulsory: x read once, y written once.

Permutations that keep the last axis (`y[b, h, s, d] = x[b, s, h, d]`): every index of y except its last two
is a work unit (assigned cyclically to the cores, decoded with one-trip loops so region starts stay affine); a
unit is one 2-D strided `GDRAM2GDRAM` copy of the [Y[-2], D] slab (no compute, no on-chip staging).
"""
from __future__ import annotations

from gir import ir
from passes.schedule_mlu import build as B
from passes.schedule_mlu import layout as L
from passes.schedule_mlu.rowmodel import NotRowModel

TILE_BYTES, TILE_COLS = 128 * 1024, 128   # in + out double-buffered = 512 KiB of NRAM


def device_bytes(dt: ir.DType) -> int:
    """Bytes of one element on the device (i64 tensors are `int` there, see codegen/mlu/emit.py)."""
    return 4 if dt == ir.DType.i64 else dt.nbytes


def match_permute(spec: ir.Func, info) -> tuple | None:
    """(x, y, perm) when `spec` is one statement `y[v...] = x[w...]` with w a permutation of v
    (perm[k] = the axis of x that y's axis k reads)."""
    if len(info.stmts) != 1 or len(spec.results) != 1:
        return None
    st = info.stmts[0].stmt
    x, y = st.value, st.target
    if not isinstance(x, ir.Ref) or y.name != spec.results[0].name:
        return None
    params = {p.name: p for p in spec.params}
    if x.name not in params or params[x.name].type.dtype != spec.results[0].type.dtype:
        return None
    if any(not isinstance(i, ir.Var) for i in x.index + y.index):
        return None
    xv, yv = [i.name for i in x.index], [i.name for i in y.index]
    if len(set(xv)) != len(xv) or sorted(xv) != sorted(yv) or xv == yv:
        return None
    return x.name, y.name, tuple(xv.index(v) for v in yv)


def permute_func(spec: ir.Func, info, tasks: int = 32) -> list:
    """Kernels for a permutation (raises NotRowModel when `spec` is not one this module schedules)."""
    m = match_permute(spec, info)
    if m is None:
        raise NotRowModel("not a permutation")
    x, y, perm = m
    xshape = next(p.type.shape for p in spec.params if p.name == x)
    if perm == (1, 0):
        dt = spec.results[0].type.dtype
        return [transpose2d_kernel(x, y, xshape[0], xshape[1], f"{spec.name}_mlu", tasks, dt)]
    if perm[-1] == len(perm) - 1 and len(perm) >= 3:
        yshape = spec.results[0].type.shape
        return [slab_copy_kernel(x, y, perm, yshape, f"{spec.name}_mlu", tasks)]
    raise NotRowModel("permutation not supported")


def _trips(n: int, tvar, tasks: int) -> ir.Expr:
    """Iterations of `for it in 0..` covering units task, task + tasks, ... < n."""
    return ir.BinOp("//", B.add(ir.BinOp("-", B.c(n), tvar), tasks - 1), B.c(tasks))


def _tile(x, y, r0, rlen: int, c0, clen: int, rb: int, cb: int) -> list:
    """Load x[r0:+rlen, c0:+clen], transpose the whole [rb, cb] buffer, store y[c0:+clen, r0:+rlen]."""
    return [B.move("load", B.ref("xa", B.sl(0, rlen), B.sl(0, clen)), B.ref(x, B.sl(r0, rlen), B.sl(c0, clen))),
            ir.Assign(B.ref("ta", B.sl(0, cb), B.sl(0, rb)), ir.Call("transpose", (B.ref("xa", B.sl(0, rb), B.sl(0, cb)),))),
            B.move("store", B.ref(y, B.sl(c0, clen), B.sl(r0, rlen)), B.ref("ta", B.sl(0, clen), B.sl(0, rlen)))]


def transpose2d_kernel(x: str, y: str, m: int, n: int, name: str, tasks: int = 32,
                       dt: ir.DType = ir.DType.f32) -> ir.Kernel:
    rb = min(TILE_BYTES // (TILE_COLS * device_bytes(dt)), L.round_up(m, L.PITCH))
    cb = min(TILE_COLS, L.round_up(n, L.PITCH))
    nr, rt = divmod(m, rb)
    nc, ct = divmod(n, cb)
    t = B.v("task_")
    body: list = [B.alloc("xa", dt, (rb, cb), "nram"), B.alloc("ta", dt, (cb, rb), "nram")]
    if nc:
        c0 = B.mul(B.add(B.mul(B.v("cc_"), tasks), t), cb)
        inner: list = []
        if nr:
            inner.append(ir.For("it_", B.c(0), B.c(nr), tuple(_tile(x, y, B.mul(B.v("it_"), rb), rb, c0, cb, rb, cb))))
        if rt:
            inner += _tile(x, y, B.c(nr * rb), rt, c0, cb, rb, cb)
        body.append(ir.For("cc_", B.c(0), _trips(nc, t, tasks), tuple(inner)))
    if ct:
        c0 = B.c(nc * cb)
        if nr:
            r0 = B.mul(B.add(B.mul(B.v("jt_"), tasks), t), rb)
            body.append(ir.For("jt_", B.c(0), _trips(nr, t, tasks), tuple(_tile(x, y, r0, rb, c0, ct, rb, cb))))
        if rt:
            cond = ir.BinOp("==", t, B.c(tasks - 1))
            body.append(ir.If(cond, tuple(_tile(x, y, B.c(nr * rb), rt, c0, ct, rb, cb)), ()))
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(body))
    return ir.Kernel(name, (top,), (("task_dim", str(tasks)),))


def slab_copy_kernel(x: str, y: str, perm: tuple, yshape: tuple, name: str, tasks: int = 32) -> ir.Kernel:
    """y[u..., 0:S, 0:D] <- x[(the same indices, permuted)] per unit u over y's leading axes."""
    lead = yshape[:-2]
    units = 1
    for d in lead:
        units *= d
    t = B.v("task_")
    u = B.add(B.mul(B.v("it_"), tasks), t)
    names = [f"u{k}_" for k in range(len(lead))]
    yidx = [B.v(v) for v in names] + [B.sl(0, yshape[-2]), B.sl(0, yshape[-1])]
    xidx: list = [None] * len(perm)
    for k, ax in enumerate(perm):
        xidx[ax] = yidx[k]
    stmt: ir.Stmt = B.move("copy", B.ref(y, *yidx), B.ref(x, *xidx))
    inner = 1
    for k in reversed(range(len(lead))):      # u = ((u0 * L1 + u1) * L2 + u2) ...: one-trip decoding loops
        lo = ir.BinOp("%", ir.BinOp("//", u, B.c(inner)), B.c(lead[k])) if k else ir.BinOp("//", u, B.c(inner))
        stmt = ir.For(names[k], lo, B.add(lo, 1), (stmt,))
        inner *= lead[k]
    loop = ir.For("it_", B.c(0), _trips(units, t, tasks), (stmt,))
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, (loop,))
    return ir.Kernel(name, (top,), (("task_dim", str(tasks)),))
