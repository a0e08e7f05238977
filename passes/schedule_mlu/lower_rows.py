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
The loop body is synchronous; the BANG-C emitter software-pipelines it (see docs/mlu.md). Values are computed in
place where their operand dies (an output into its input's load buffer: three pipeline slots instead of two for
the load and two for the store), so a row of 32768 f32 elements fits NRAM for softmax or rmsnorm.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.rowmodel import COL, CONST, FULL, ROW, SCALAR, Op, RowModel, Val
from gir.passes.schedule_mlu.valnum import number_values

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
    # per-column/scalar inputs (converted once, before the loop), f32 [R, 1] inputs and row outputs keep their own
    # buffers; [R, C] inputs (f32 load tiles, f32 working tiles of 16-bit ones) are freed at their last use and
    # [R, C] outputs share buffers by liveness too: computed in place into a dying operand's tile, an output
    # stored from its input's load tile makes that tile loaded and stored (triple-buffered by the emitter)
    pinned = {x for x in list(model.inputs) + list(model.outputs)
              if (model.dtypes.get(x, F32) == F32 and {**model.inputs, **model.outputs}[x] != FULL)
              or model.inputs.get(x, FULL) not in (FULL, ROW)}
    loaded = {f"{x}_t" for x, k in model.inputs.items() if k == FULL}
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
            pool = free.get(op.dst.kind, [])
            dying = [assign[a.name] for a in op.args if a.kind != CONST and assign.get(a.name) in pool]
            inputs = [b for b in pool if b in loaded]
            if d in pinned:
                assign[d] = f"{d}_t"
            elif dying:                                  # in place: dst = f(a) into a's tile
                assign[d] = dying[0]
                pool.remove(dying[0])
            elif d in model.outputs and inputs:          # an output into a free load tile (three slots, not 2 + 2)
                assign[d] = inputs[-1]
                pool.remove(inputs[-1])
            elif pool:
                assign[d] = pool.pop()
            else:
                assign[d] = f"{d}_t" if d in model.outputs and model.dtypes[d] == F32 else f"b{len(kinds)}"
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
    model = number_values(model)   # a repeated op is computed once per tile (valnum.py)
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

    # 16-bit [R, C] outputs are converted into a 16-bit input's landing tile (dead after its widening, the first
    # compute): that tile is then loaded and stored (three slots instead of two plus two)
    landings = [x for x, k in model.inputs.items() if k == FULL and model.dtypes[x] not in (F32,)]
    for pname, kind in model.outputs.items():
        dt = model.dtypes[pname]
        tile = _region(assign[pname], kind, r, n)
        same = [x for x in landings if model.dtypes[x] == dt]
        if dt != F32 and kind == FULL and same:
            landings.remove(same[0])
            src = _region(f"{same[0]}_h", kind, r, n)
            body.append(ir.Assign(src, ir.Call(dt.value, (tile,))))
        elif dt != F32:
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
