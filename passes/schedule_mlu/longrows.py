"""Row-model functions whose rows do not fit NRAM → chunked multi-pass explicit MLU GIR.

Each core takes tiles of R rows (R divides M, tiles cyclic over the cores) and walks every row in chunks of C
columns (C a multiple of 64; a static tail chunk of N % C columns). The row model's reductions are grouped into
passes by dependence depth; one pass is one loop over the chunks (loads, computes, accumulate into per-row state),
and the final pass recomputes the full values from the inputs and stores the outputs:

    for it in tiles of this core {
      acc = identity                                  # per-row state [R, 1]
      for ch in 0..NC { load x[rows, ch*C:+C]; part = reduce(f(x)); acc = acc (+|max|min) part }   # pass 1
      <tail chunk>;  row ops (mean, rsqrt, ...)
      for ch in 0..NC { load x[...]; y = g(x, row state); store y[rows, ch*C:+C] }                # final pass
      <tail chunk>
    }

Two rewrites reduce the number of passes (each pass is one more read of the input):
* online softmax: `s = sum(exp(A - m))` with `m = max(A)` accumulates in the pass of `m`: per chunk
  `m' = max(m, max(A_c)); s = s * exp(m - m') + sum(exp(A_c - m'))` (softmax: 2 reads of x + 1 write = 1.5x the
  compulsory traffic);
* variance: `sum((A - mu) * (A - mu))` with `mu = sum(A) / N` becomes `sum(A * A) - mu * sum(A)` (one pass for
  both sums; f32 accumulation, less accurate than a two-pass variance when |mean| >> std).
The chunk loops are software-pipelined by the emitter (double-buffered loads and stores).
"""
from __future__ import annotations

from gir import ir
from gir.errors import GirError
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.rowmodel import COL, CONST, FULL, ROW, SCALAR, Op, RowModel, Val

F32 = ir.DType.f32
REDUCE = ("rsum", "rmax", "rmin")
IDENT = {"rsum": 0.0, "rmax": float("-inf"), "rmin": float("inf")}   # (an all -inf row: argmax 0, as numpy)
ONLINE_MAX_START = -3.0e38   # the running max of an online sum starts finite: exp(m - m') of a chunk of -inf only
OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def op_value(op: Op, args: list):
    """The explicit-layer expression of a row-model op over its operands' tile regions (`args`)."""
    if op.fn == "copy":
        return args[0]
    if op.fn in REDUCE:
        return ir.Reduce(op.fn[1:], args[0], (1,))
    if op.fn in OPS:
        return ir.BinOp(OPS[op.fn], *args)
    if op.fn in CMP:
        return ir.BinOp(CMP[op.fn], *args)
    return ir.Call(op.fn, tuple(args))


def _rewrite(model: RowModel) -> tuple[list[Op], dict[str, str]]:
    """(ops after the variance rewrite, online sums: sum name -> max name)."""
    prod = {op.dst.name: op for op in model.ops}
    ops: list[Op] = []
    online: dict[str, str] = {}
    k = 0
    for op in model.ops:
        a = op.args[0] if op.args else None
        if op.fn == "rsum" and a.name in prod:
            e = prod[a.name]
            if e.fn == "exp" and e.args[0].name in prod:
                b = prod[e.args[0].name]
                m = b.args[1] if b.fn == "sub" and len(b.args) == 2 else None
                if m is not None and m.name in prod and prod[m.name].fn == "rmax" \
                        and prod[m.name].args[0] == b.args[0]:
                    online[op.dst.name] = m.name
            q = prod[a.name]
            if q.fn == "mul" and q.args[0] == q.args[1] and q.args[0].name in prod:
                d = prod[q.args[0].name]
                mu = d.args[1] if d.fn == "sub" and len(d.args) == 2 else None
                mop = prod.get(mu.name) if mu is not None and mu.kind == ROW else None
                if mop is not None and mop.fn == "mul" and mop.args[1].kind == CONST \
                        and abs(mop.args[1].const * model.n - 1) < 1e-9 and mop.args[0].name in prod \
                        and prod[mop.args[0].name].fn == "rsum" and prod[mop.args[0].name].args[0] == d.args[0]:
                    k += 1
                    q2, ss, t = Val(FULL, f"lq{k}"), Val(ROW, f"lss{k}"), Val(ROW, f"lt{k}")
                    ops += [Op(q2, "mul", (d.args[0], d.args[0])), Op(ss, "rsum", (q2,)),
                            Op(t, "mul", (mu, mop.args[0])), Op(op.dst, "sub", (ss, t))]
                    continue
        ops.append(op)
    return ops, online


def _passes(model: RowModel, ops: list[Op], online: dict[str, str]):
    """avail[row value] = pass after which it is known (0: before pass 1); need[full value] = max avail of the
    row values it depends on."""
    avail: dict[str, int] = {x: 0 for x, k in model.inputs.items() if k in (ROW, SCALAR)}
    need: dict[str, int] = {x: 0 for x, k in model.inputs.items() if k in (FULL, COL)}
    for op in ops:
        deps = [avail[a.name] if a.kind in (ROW, SCALAR) else need[a.name] for a in op.args if a.kind != CONST]
        d = max(deps, default=0)
        if op.fn in REDUCE:
            avail[op.dst.name] = avail[online[op.dst.name]] if op.dst.name in online else d + 1
        elif op.dst.kind in (ROW, SCALAR):
            avail[op.dst.name] = d
        else:
            need[op.dst.name] = d
    return avail, need


def plan_chunks(model: RowModel, nbufs: int, nram: int, tasks: int) -> tuple[int, int]:
    """(R, C): R the largest divisor of M <= 8 (and <= rows per core), C the widest multiple of 64 that fits."""
    m, n = model.m, model.n
    cap = max(1, min(8, -(-m // tasks)))
    r = max(d for d in range(1, cap + 1) if m % d == 0)
    while True:
        per_col = r * 4 * nbufs
        c = (nram - 16 * 1024) // per_col // L.PITCH * L.PITCH
        if c >= L.PITCH or r == 1:
            break
        r = max(d for d in range(1, r) if m % d == 0)
    if c < L.PITCH:
        raise GirError(f"no chunk fits NRAM ({nram} bytes) for rows of {n} elements")
    c = min(c, max(L.PITCH, n // L.PITCH * L.PITCH))
    nc = -(-n // c)                     # balance the chunks
    c = min(c, L.round_up(-(-n // nc), L.PITCH))
    return r, c


def longrows_kernel(model: RowModel, name: str, tasks: int = 32, nram: int = 768 * 1024,
                    extra_cols: int = 0) -> ir.Kernel:
    """`extra_cols`: chunk-wide vectors a caller adds to the kernel (indexops.patch_long_columns), kept free."""
    ops, online = _rewrite(model)
    avail, need = _passes(model, ops, online)
    reds = [op for op in ops if op.fn in REDUCE]
    npass = max((avail[op.dst.name] for op in reds), default=0)
    kinds: dict[str, str] = {x: k for x, k in model.inputs.items()}
    for op in ops:
        kinds[op.dst.name] = op.dst.kind
    prod = {op.dst.name: op for op in ops}
    full_out = [x for x, k in model.outputs.items() if k == FULL]
    if any(k == COL for k in model.outputs.values()):
        raise GirError(f"'{name}': per-column results of long rows are not supported")

    def ancestors(roots) -> list[Op]:
        """Full/col ops (in program order) that `roots` need within one chunk."""
        seen, stack = set(), [r for r in roots if r in prod and kinds[r] in (FULL, COL)]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            for a in prod[x].args:
                if a.kind in (FULL, COL) and a.name in prod:
                    stack.append(a.name)
        return [op for op in ops if op.dst.name in seen]

    def leaves(opl, roots) -> set:
        names = set(roots)
        for op in opl:
            names |= {a.name for a in op.args if a.kind in (FULL, COL)}
        return {x for x in names if x in model.inputs}

    # per pass: the reductions, the full ops, the inputs to load
    passes = []
    for p in range(1, npass + 1):
        rp = [op for op in reds if avail[op.dst.name] == p]
        plain = [op for op in rp if op.dst.name not in online]
        roots = [op.args[0].name for op in plain]
        for s in [op for op in rp if op.dst.name in online]:
            roots.append(prod[online[s.dst.name]].args[0].name)
        fops = ancestors(roots)
        passes.append((rp, fops, leaves(fops, roots)))
    fin_ops = ancestors(full_out)
    fin = (fin_ops, leaves(fin_ops, full_out)) if full_out else None

    # buffers: full values [R, C] (loaded ones double-buffered by the emitter), row state [R, 1], col chunks [C]
    full_vals = set()
    for _, fops, ins in passes:
        full_vals |= {op.dst.name for op in fops} | ins
    if fin:
        full_vals |= {op.dst.name for op in fin[0]} | fin[1] | set(full_out)
    online_tmp = {s: f"le_{s}" for s in online}
    nfull = sum(1 for x in full_vals if kinds[x] == FULL) + len(online_tmp)
    nbufs = nfull + sum(1 for x in full_vals if x in model.inputs or x in full_out) \
        + sum(1 for x in full_vals if model.dtypes.get(x, F32) != F32) + 4     # doubles, 16-bit landings, scratch
    ncol = sum(1 for x in full_vals if kinds[x] == COL)
    r, c = plan_chunks(model, nbufs + ncol + extra_cols, nram, tasks)
    n, m = model.n, model.m
    nc, tail = n // c, n % c

    allocs: list = []
    rowvals = {x for x, k in kinds.items() if k == ROW or (k == SCALAR and x not in model.inputs)}
    for x in sorted(full_vals):
        allocs.append(B.alloc(f"{x}_t", F32, (r, c) if kinds[x] == FULL else (c,), "nram"))
        if model.dtypes.get(x, F32) != F32:
            allocs.append(B.alloc(f"{x}_h", model.dtypes[x], (r, c) if kinds[x] == FULL else (c,), "nram"))
    for t in online_tmp.values():
        allocs.append(B.alloc(f"{t}_t", F32, (r, c), "nram"))
    extra_rows = []
    for op in reds:
        extra_rows.append(f"p_{op.dst.name}")
        if op.dst.name in online:
            extra_rows += [f"n_{op.dst.name}", f"k_{op.dst.name}"]
    for x in sorted(rowvals) + extra_rows:
        allocs.append(B.alloc(f"{x}_t", F32, (r, 1), "nram"))
        if model.dtypes.get(x, F32) != F32:
            allocs.append(B.alloc(f"{x}_h", model.dtypes[x], (r, 1), "nram"))
    scalars = [x for x, k in model.inputs.items() if k == SCALAR]
    for x in scalars:
        allocs.append(B.alloc(f"{x}_t", model.dtypes[x], (1,), "nram"))

    tvar = B.v("task_")
    row0 = B.mul(B.add(B.mul(B.v("it_"), tasks), tvar), r)

    def t(x, w=None):
        """The tile region of value x (chunk width w)."""
        if x in scalars:
            return B.ref(f"{x}_t", B.sl(0, 1))
        k = kinds.get(x, ROW)
        if k == FULL:
            return B.ref(f"{x}_t", B.sl(0, r), B.sl(0, w))
        if k == COL:
            return B.ref(f"{x}_t", B.sl(0, w))
        return B.ref(f"{x}_t", B.sl(0, r), B.sl(0, 1))

    def opd(a: Val, w):
        return B.c(a.const) if a.kind == CONST else t(a.name, w)

    def value(op: Op, w):
        return op_value(op, [opd(a, w) for a in op.args])

    def chunk(c0, w, ins, fops, rp, outs):
        """loads, computes, stores of one chunk [c0, c0 + w)."""
        loads, body, stores = [], [], []
        for x in sorted(ins):
            dt = model.dtypes[x]
            land = t(x, w) if dt == F32 else ir.Ref(f"{x}_h", t(x, w).index)
            src = B.ref(x, B.sl(row0, r), B.sl(c0, w)) if kinds[x] == FULL else B.ref(x, B.sl(c0, w))
            loads.append(B.move("load", land, src))
            if dt != F32:
                body.append(ir.Assign(t(x, w), ir.Call("f32", (land,))))
        for op in fops:
            if op.fn == "copy" and opd(op.args[0], w) == t(op.dst.name, w):
                continue
            body.append(ir.Assign(t(op.dst.name, w), value(op, w)))
        for op in rp:
            s = op.dst.name
            part = B.ref(f"p_{s}_t", B.sl(0, r), B.sl(0, 1))
            if s in online:
                mx = online[s]
                a = prod[mx].args[0]
                nm, k = B.ref(f"n_{s}_t", B.sl(0, r), B.sl(0, 1)), B.ref(f"k_{s}_t", B.sl(0, r), B.sl(0, 1))
                e = B.ref(f"{online_tmp[s]}_t", B.sl(0, r), B.sl(0, w))
                body += [ir.Assign(part, ir.Reduce("max", opd(a, w), (1,))),
                         ir.Assign(nm, ir.Call("max", (t(mx), part))),
                         ir.Assign(k, ir.BinOp("-", t(mx), nm)),
                         ir.Assign(k, ir.Call("exp", (k,))),
                         ir.Assign(t(s), ir.BinOp("*", t(s), k)),
                         ir.Assign(e, ir.BinOp("-", opd(a, w), nm)),
                         ir.Assign(e, ir.Call("exp", (e,))),
                         ir.Assign(part, ir.Reduce("sum", e, (1,))),
                         ir.Assign(t(s), ir.BinOp("+", t(s), part)),
                         ir.Assign(t(mx), nm)]
                continue
            if op.fn in REDUCE and s in {online[q] for q in online}:
                continue        # the max of an online sum is updated with it
            body.append(ir.Assign(part, value(op, w)))
            comb = {"rsum": ir.BinOp("+", t(s), part), "rmax": ir.Call("max", (t(s), part)),
                    "rmin": ir.Call("min", (t(s), part))}[op.fn]
            body.append(ir.Assign(t(s), comb))
        for x in outs:
            dt = model.dtypes[x]
            src = t(x, w)
            if dt != F32:
                h = ir.Ref(f"{x}_h", src.index)
                body.append(ir.Assign(h, ir.Call(dt.value, (src,))))
                src = h
            stores.append(B.move("store", B.ref(x, B.sl(row0, r), B.sl(c0, w)), src))
        return loads, body, stores

    def chunk_loop(var, ins, fops, rp, outs) -> list:
        lo, bo, st = chunk(B.mul(B.v(var), c), c, ins, fops, rp, outs)
        # the sync orders the previous computes before the pipeline's first async load
        items = [ir.Sync(ir.ParLevel.core), ir.For(var, B.c(0), B.c(nc), tuple(lo + bo + st))] if nc else []
        if tail:
            lo, bo, st = chunk(B.c(nc * c), tail, ins, fops, rp, outs)
            items += lo + bo + st
        return items

    def row_ops(p):
        out = []
        for op in ops:
            if op.fn not in REDUCE and op.dst.kind in (ROW, SCALAR) and avail.get(op.dst.name) == p:
                out.append(ir.Assign(t(op.dst.name), value(op, 1)))
        return out

    pro = [B.move("load", t(x), B.ref(x)) for x in scalars]
    tile: list = []
    for x, k in model.inputs.items():
        if k == ROW:
            dt = model.dtypes[x]
            land = t(x) if dt == F32 else ir.Ref(f"{x}_h", t(x).index)
            tile.append(B.move("load", land, B.ref(x, B.sl(row0, r))))
            if dt != F32:
                tile.append(ir.Assign(t(x), ir.Call("f32", (land,))))
    tile += row_ops(0)
    for p, (rp, fops, ins) in enumerate(passes, 1):
        for op in rp:   # (an online max: a chunk of -inf only would give exp(-inf - -inf) = NaN)
            start = ONLINE_MAX_START if op.dst.name in online.values() else IDENT[op.fn]
            tile.append(ir.Assign(t(op.dst.name), B.c(start)))
        tile += chunk_loop(f"ch{p}_", ins, fops, rp, [])
        tile += row_ops(p)
    if fin:
        tile += chunk_loop("chf_", fin[1], fin[0], [], full_out)
    for x, k in model.outputs.items():
        if k == ROW:
            dt = model.dtypes[x]
            src = t(x)
            if dt != F32:
                h = ir.Ref(f"{x}_h", src.index)
                tile.append(ir.Assign(h, ir.Call(dt.value, (src,))))
                src = h
            tile.append(B.move("store", B.ref(x, B.sl(row0, r)), B.ref(src.name, B.sl(0, r), B.c(0))))
    ntiles = m // r
    trips = ir.BinOp("//", B.add(ir.BinOp("-", B.c(ntiles), tvar), tasks - 1), B.c(tasks))
    loop = ir.For("it_", B.c(0), trips, tuple(tile))
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(allocs + pro + [loop]))
    return ir.Kernel(name, (top,), (("task_dim", str(tasks)),))
