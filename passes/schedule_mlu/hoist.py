"""Row vectors out of the tile loop, for row-model kernels with little traffic per row (cross_entropy).

A row-model kernel loads every `[M]` input and stores every `[M]` output once per tile: R * 4 bytes, each DMA paying
the full GDRAM latency (500 cycles) on the serialised IO pipe. The tiles of a core can be made contiguous (core t
processes tiles t * TPC .. t * TPC + TPC - 1, "blocked" instead of cyclic), so each core's rows of a row vector are
one contiguous range of RPC = TPC * R values (where M % (tasks * R) != 0 the last busy core's run stops at M, its
vector moves masked, and cores past M skip them and run no tile):

    load t_all[0:RPC, 0:1] <- target[task_ * RPC:task_ * RPC + RPC]       # once per core
    for it_ in 0..TPC {
      load x_t[0:R, 0:N] <- x[(task_ * TPC + it_) * R:..., 0:N]
      target_h[0:R, 0:1] = t_all[it_ * R:it_ * R + R, 0:1]                  # [R, 1] copy at an offset (scalar loop)
      ...
      o_all[it_ * R:it_ * R + R, 0:1] = loss_row_t[0:R, 0:1]                # a move from 32 rows (vecops MOVE_ROWS)
    }
    store loss_row[task_ * RPC:task_ * RPC + RPC] <- o_all[0:RPC, 0]          # once per core

`blocked_rows` picks R (the largest divisor of M / tasks not above the placement's R, or, where M % tasks != 0, the
balanced height for ceil(M / tasks) rows per core); `hoist_rows` rewrites the
kernel of `lower_rows` (single-level `parallel task_ @core`, no SRAM staging).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.rowmodel import ROW

MAX_VECTOR_BYTES = 64 * 1024   # NRAM for the hoisted row vectors of one core (inside the placement's 64 KiB slack)


def row_vectors(model) -> int:
    """How many `[M]` inputs and outputs the row model moves (what hoisting moves once per core)."""
    return sum(k == ROW for k in list(model.inputs.values()) + list(model.outputs.values()))


def blocked_rows(rows: int, m: int, tasks: int, n_vectors: int, uneven: bool = False) -> int | None:
    """R for the blocked schedule, or None when the vectors do not fit or (unless `uneven`) the tiles cannot split
    evenly. Even: the largest divisor of M / tasks not above `rows`. Uneven: each core takes TPC = ceil(ceil(M /
    tasks) / R) tiles of R = ceil(ceil(M / tasks) / TPC) rows (`core_tiles`); the last core's run is cut short
    by M, and cores past M idle."""
    if n_vectors == 0 or (m % tasks and not uneven):
        return None
    per_core = -(-m // tasks)
    r = min(rows, per_core)
    balanced = -(-per_core // -(-per_core // r))
    if core_tiles(m, balanced, tasks) * balanced * 8 * n_vectors > MAX_VECTOR_BYTES:
        return None
    if m % tasks:
        return balanced
    while per_core % r:
        r -= 1
    # an even split into much shorter tiles (M / 32 prime: cross_entropy at M = 2144 took 1-row tiles, 2.32x the
    # DMA roofline against 1.39x at M = 2143) loses to the uneven one where that is allowed
    return balanced if uneven and 2 * r < balanced else r


def core_tiles(m: int, rows: int, tasks: int) -> int:
    """Tiles of R rows per core in the blocked schedule (the last core's may run past M)."""
    per_core = -(-m // tasks)
    return -(-per_core // rows)


def _is_cyclic_tile(e) -> bool:
    """`it_ * tasks + task_`: the cyclic tile index of lower_rows."""
    return (isinstance(e, ir.BinOp) and e.op == "+" and isinstance(e.rhs, ir.Var) and e.rhs.name == "task_"
            and isinstance(e.lhs, ir.BinOp) and e.lhs.op == "*" and isinstance(e.lhs.lhs, ir.Var)
            and e.lhs.lhs.name == "it_")


def _blocked(e, tpc: int):
    if _is_cyclic_tile(e):
        return B.add(B.mul(B.v("task_"), tpc), B.v("it_"))
    if isinstance(e, ir.BinOp):
        return dataclasses.replace(e, lhs=_blocked(e.lhs, tpc), rhs=_blocked(e.rhs, tpc))
    if isinstance(e, ir.Ref):
        return dataclasses.replace(e, index=tuple(_blocked(i, tpc) for i in e.index))
    if isinstance(e, ir.Slice):
        return dataclasses.replace(e, start=_blocked(e.start, tpc), stop=_blocked(e.stop, tpc))
    return e


def hoist_rows(kernel: ir.Kernel, model, rows: int, tasks: int, dtypes: dict) -> ir.Kernel:
    """The kernel with blocked tiles and its `[M]` inputs/outputs moved once per core (see the module doc)."""
    (top,) = kernel.body
    if not (isinstance(top, ir.Parallel) and top.level == ir.ParLevel.core and top.var == "task_"):
        return kernel
    loop = top.body[-1]
    if not isinstance(loop, ir.For) or loop.var != "it_":
        return kernel
    tpc = core_tiles(model.m, rows, tasks)
    rpc = tpc * rows
    even = rpc * tasks == model.m
    row_in = {x for x, k in model.inputs.items() if k == ROW}
    row_out = {x for x, k in model.outputs.items() if k == ROW}
    it_r = B.mul(B.v("it_"), rows)
    core_rows = B.sl(B.mul(B.v("task_"), rpc), rpc)
    allocs, pro, loads, copies, comps, outs, post = [], [], [], [], [], [], []
    for s in loop.body:
        if isinstance(s, ir.Move) and s.kind == "load" and s.src.name in row_in:
            name = s.src.name
            buf = f"{name}_all"
            allocs.append(B.alloc(buf, dtypes[name], (rpc, 1), "nram"))
            pro.append(B.move("load", B.ref(buf, B.sl(0, rpc), B.sl(0, 1)), B.ref(name, core_rows), mask=not even))
            copies.append(ir.Assign(s.dst, B.ref(buf, B.sl(it_r, rows), B.sl(0, 1))))
        elif isinstance(s, ir.Move) and s.kind == "store" and s.dst.name in row_out:
            name = s.dst.name
            buf = f"{name}_all"
            allocs.append(B.alloc(buf, dtypes[name], (rpc, 1), "nram"))
            src = s.src
            outs.append(ir.Assign(B.ref(buf, B.sl(it_r, rows), B.sl(0, 1)),
                                  B.ref(src.name, B.sl(0, rows), B.sl(0, 1))))
            post.append(B.move("store", B.ref(name, core_rows), B.ref(buf, B.sl(0, rpc), B.c(0)), mask=not even))
        elif isinstance(s, ir.Move) and s.kind == "load":
            loads.append(dataclasses.replace(s, src=_blocked(s.src, tpc)))
        elif isinstance(s, ir.Move) and s.kind == "store":
            outs.append(dataclasses.replace(s, dst=_blocked(s.dst, tpc)))
        elif isinstance(s, ir.Assign):
            comps.append(s)
        else:
            return kernel
    stores = [s for s in outs if isinstance(s, ir.Move)]
    tail = [s for s in outs if isinstance(s, ir.Assign)]
    body = tuple(loads + copies + comps + tail + stores)
    if even:
        new_loop = dataclasses.replace(loop, hi=B.c(tpc), body=body)
    else:   # the core's tiles up to M (none past it); its vectors' moves masked, and skipped by idle cores
        left = ir.BinOp("-", B.c(model.m), B.mul(B.v("task_"), rpc))
        hi = ir.Call("min", (B.c(tpc), ir.BinOp("//", B.add(left, rows - 1), B.c(rows))))
        new_loop = dataclasses.replace(loop, hi=hi, body=body)
        busy = ir.BinOp("<", B.mul(B.v("task_"), rpc), B.c(model.m))
        pro = [ir.If(busy, tuple(pro), ())] if pro else []
        post = [ir.If(busy, tuple(post), ())] if post else []
    head = list(top.body[:-1])
    k = max((i for i, x in enumerate(head) if isinstance(x, ir.Alloc)), default=-1) + 1
    head[k:k] = allocs
    new_top = dataclasses.replace(top, body=tuple(head + pro + [new_loop] + post))
    return dataclasses.replace(kernel, body=(new_top,))
