"""Row-model functions → explicit MLU GIR: one kernel, each core processes tiles of `R` rows.

    kernel K with task_dim=32 {
      parallel t in 0..32 @core {               # or: parallel c in 0..8 @cluster { alloc @sram ... parallel k @core
        alloc ... @nram                          # one tile buffer per value (temporaries reused by liveness)
        load g[0:N] <- gamma[0:N]                # per-column operands, once per core (or SRAM → NRAM copy)
        for it in 0..(T - t + 31) // 32 {        # tiles t, t+32, ... (cyclic)
          load x[0:R, 0:N] <- x[row0:row0 + R, 0:N] with mask   # mask clips the tail tile
          ...three-address computes...
          store y[row0:row0 + R, 0:N] <- y[0:R, 0:N] with mask
        }
      }
    }
The loop body is synchronous; the BANG-C emitter software-pipelines it (see docs/mlu.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from passes.schedule_mlu import build as B
from passes.schedule_mlu.rowmodel import COL, CONST, FULL, ROW, SCALAR, Op, RowModel, Val

F32 = ir.DType.f32
CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@dataclass(frozen=True)
class RowPlan:
    rows: int                       # R: rows per tile
    tasks: int = 32                 # total cores used
    sram: frozenset = frozenset()   # per-column inputs staged in SRAM once per cluster
    cores_per_cluster: int = 4


def liveness_buffers(model: RowModel) -> tuple[dict[str, str], dict[str, str]]:
    """value name → tile buffer name (temporaries share buffers after their last use), buffer → kind."""
    # f32 inputs/outputs and per-column/scalar inputs (converted once, before the loop) keep their own buffers;
    # the f32 working tiles of 16-bit row-tile inputs/outputs are converted per tile and share buffers by liveness
    pinned = {x for x in list(model.inputs) + list(model.outputs)
              if model.dtypes.get(x, F32) == F32 or model.inputs.get(x, FULL) not in (FULL, ROW)}
    last: dict[str, int] = {}
    for k, op in enumerate(model.ops):
        for a in op.args:
            if a.kind != CONST:
                last[a.name] = k
    assign: dict[str, str] = {}
    kinds: dict[str, str] = {}
    free: dict[str, list[str]] = {}
    for name, kind in model.inputs.items():
        if name not in pinned:
            assign[name] = f"{name}_t"
            kinds[assign[name]] = kind
    for k, op in enumerate(model.ops):
        d = op.dst.name
        # operands dying here are freed first, so an elementwise op may write in place (dst = f(a): the vector
        # emitter's multi-instruction forms go through scratch tiles when dst aliases an operand)
        for a in sorted(set(x.name for x in op.args if x.kind != CONST)):
            if last.get(a) == k and a not in pinned and a not in model.outputs and a in assign and a != d:
                free.setdefault(model.temps.get(a) or kinds[assign[a]], []).append(assign[a])
        if d not in assign:
            if d in pinned:
                assign[d] = f"{d}_t"
            elif free.get(op.dst.kind):
                assign[d] = free[op.dst.kind].pop()
            else:
                assign[d] = f"b{len(kinds)}"
            kinds[assign[d]] = op.dst.kind
    for name in model.inputs:
        assign.setdefault(name, f"{name}_t")
        kinds[assign[name]] = model.inputs[name]
    return assign, kinds


def _tile_shape(kind: str, r: int, n: int) -> tuple[int, ...]:
    return {FULL: (r, n), ROW: (r, 1), COL: (n,), SCALAR: (1,)}[kind]


def _region(buf: str, kind: str, r: int, n: int) -> ir.Ref:
    if kind == FULL:
        return B.ref(buf, B.sl(0, r), B.sl(0, n))
    if kind == ROW:
        return B.ref(buf, B.sl(0, r), B.sl(0, 1))
    if kind == COL:
        return B.ref(buf, B.sl(0, n))
    return B.ref(buf, B.sl(0, 1))


def lower_rows(model: RowModel, plan: RowPlan, name: str) -> ir.Kernel:
    m, n, r = model.m, model.n, plan.rows
    assign, kinds = liveness_buffers(model)
    nt = -(-m // r)
    cpc = plan.cores_per_cluster
    clusters = plan.sram and plan.tasks > cpc
    tvar = B.add(B.mul(B.v("cl_"), cpc), B.v("co_")) if clusters else B.v("task_")
    row0 = B.mul(B.add(B.mul(B.v("it_"), plan.tasks), tvar), r)

    allocs, pro, loads, body, stores = [], [], [], [], []
    for buf, kind in kinds.items():
        allocs.append(B.alloc(buf, F32, _tile_shape(kind, r, n), "nram"))
    staged = []

    def gregion(tname, kind):
        if kind == FULL:
            return B.ref(tname, B.sl(row0, r), B.sl(0, n))
        if kind == ROW:
            return B.ref(tname, B.sl(row0, r))
        if kind == COL:
            return B.ref(tname, B.sl(0, n))
        return B.ref(tname)

    for pname, kind in model.inputs.items():
        dt = model.dtypes[pname]
        buf = assign[pname]
        tile = _region(buf, kind, r, n)
        src = gregion(pname, kind)
        if dt != F32:
            hb = f"{pname}_h"
            allocs.append(B.alloc(hb, dt, _tile_shape(kind, r, n), "nram"))
            land = _region(hb, kind, r, n)
        else:
            land = tile
        if kind in (FULL, ROW):
            loads.append(B.move("load", land, src, mask=True))
            seq = loads
        elif clusters and pname in plan.sram:
            sb = f"{pname}_s"
            staged.append((B.alloc(sb, dt, (n,), "sram"), B.move("load", B.ref(sb, B.sl(0, n)), src)))
            pro.append(B.move("copy", land, B.ref(sb, B.sl(0, n))))
            seq = pro
        else:
            pro.append(B.move("load", land, src))
            seq = pro
        if dt != F32:
            seq.append(ir.Assign(tile, ir.Call("f32", (land,))))

    def operand(a: Val):
        if a.kind == CONST:
            return B.c(a.const)
        return _region(assign[a.name], kinds[assign[a.name]], r, n)

    for op in model.ops:
        dst = _region(assign[op.dst.name], op.dst.kind, r, n)
        args = [operand(a) for a in op.args]
        if op.fn == "copy":
            if args[0] == dst:
                continue
            val = args[0]
        elif op.fn in ("rsum", "rmax", "rmin"):
            val = ir.Reduce(op.fn[1:], args[0], (1,))
        elif op.fn in ("add", "sub", "mul", "div"):
            val = ir.BinOp({"add": "+", "sub": "-", "mul": "*", "div": "/"}[op.fn], *args)
        elif op.fn in ("max", "min", "pow"):
            val = ir.Call(op.fn, tuple(args))
        elif op.fn in CMP:
            val = ir.BinOp(CMP[op.fn], *args)
        else:
            val = ir.Call(op.fn, tuple(args))
        body.append(ir.Assign(dst, val))

    for pname, kind in model.outputs.items():
        dt = model.dtypes[pname]
        tile = _region(assign[pname], kind, r, n)
        if dt != F32:
            hb = f"{pname}_h"
            allocs.append(B.alloc(hb, dt, _tile_shape(kind, r, n), "nram"))
            src = _region(hb, kind, r, n)
            body.append(ir.Assign(src, ir.Call(dt.value, (tile,))))
        else:
            src = tile
        if kind == ROW:
            src = B.ref(src.name, B.sl(0, r), B.c(0))
        stores.append(B.move("store", gregion(pname, kind), src, mask=True))

    trips = ir.BinOp("//", B.add(ir.BinOp("-", B.c(nt), tvar), plan.tasks - 1), B.c(plan.tasks))
    loop = ir.For("it_", B.c(0), trips, tuple(loads + body + stores))
    if clusters:
        core = ir.Parallel("co_", B.c(0), B.c(cpc), ir.ParLevel.core, tuple(allocs + pro + [loop]))
        cl_body = [a for a, _ in staged] + [mv for _, mv in staged] + [ir.Sync(ir.ParLevel.cluster), core]
        top = ir.Parallel("cl_", B.c(0), B.c(plan.tasks // cpc), ir.ParLevel.cluster, tuple(cl_body))
    else:
        top = ir.Parallel("task_", B.c(0), B.c(plan.tasks), ir.ParLevel.core, tuple(allocs + pro + [loop]))
    return ir.Kernel(name, (top,), (("task_dim", str(plan.tasks)),))
