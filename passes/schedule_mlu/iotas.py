"""Index variables used as values, read from index tensors (a variant of the MLU schedule).

The row model builds the column and row index on chip (indexops.py: `cj_`, `ri_`), but the tile recipes and the
row model's other shapes refuse an index used as a value ("an index is used as a value", "leading index used as
a value"), so `y[a, b, c] = x[a, b, c] - f32(a * a - A)`, an argmax over a leading or middle axis (its lowering
selects the index: passes/builtin/argreduce.py) or `y[a] = x[a] + f32(a)` ran as scalar kernels, ~1,000x the DMA
roofline. `index_tensors` rewrites each such use of a variable of extent E into a read of an i32 tensor
`iota<E>_[v]` holding 0..E-1; the recipes then see one more input indexed by that variable (a row, column or
unit operand: E elements beside the tensors' A x B x C). `iota_kernel` fills it in GDRAM first: chunks of CHUNK
elements over the cores, each built on chip from one 0..CHUNK-1 vector (log2 doublings, indexops._iota) plus the
chunk's offset, converted to i32 and stored. schedule.py takes that schedule when the cost model estimates it
faster (the i32 values go through f32 tiles: exact below 2^24, intcheck.py says so).
"""
from __future__ import annotations

import dataclasses
import math

from gir import ir
from gir.errors import GirError
from gir.passes.builtin.exprs import value_vars_of
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.indexops import _iota
from gir.shapes import func_info
from gir.walk import map_expr_pre, reductions_preorder, walk

CHUNK = 4096
TASKS = 32
ACTIVE: set = set()   # index tensors of the variant being scheduled: integers the f32 tiles hold exactly (< 2^24)
I32, F32 = ir.DType.i32, ir.DType.f32


def uses_index_values(func: ir.Func) -> bool:
    return any(isinstance(s, ir.Assign) and value_vars_of(s.value) for s in func.body)


def index_tensors(func: ir.Func) -> tuple[ir.Func, dict[str, int]] | None:
    """`func` (sizes specialised) with every index variable used as a value replaced by a read of `iota<E>_[v]`
    (E: the variable's extent in its statement), declared as i32 parameters, and {tensor: E}; None when no
    statement uses one or an extent is not a number."""
    info = func_info(func)
    if any(not p.type.dtype.is_float and p.type.dtype != ir.DType.bool for p in func.params):
        return None   # (integer inputs hold any value: f32 tiles would round those beyond 2^24)
    taken = set(info.types)
    names: dict[int, str] = {}
    known = _booleans(info.types)   # bounds of the boolean tensors and of the integer tensors computed so far
    body = []
    stmts = iter(info.stmts)
    for s in func.body:
        if not isinstance(s, ir.Assign):
            body.append(s)
            continue
        st = next(stmts)
        extents = {v: _extent(d) for v, d in st.ranges.items()}
        if any(e is None or e < 1 for v, e in extents.items() if v in value_vars_of(s.value)):
            return None
        if not _exact_in_f32(s, extents, info.types, st, known):
            return None   # (i * N + j reaching 2^24: the scalar kernel's exact int, as the row model decides)
        if not value_vars_of(s.value):
            body.append(s)
            continue

        def read(x, extents=extents):
            if isinstance(x, ir.Ref):
                return dataclasses.replace(x)   # (a new node is not descended into: indices stay indices)
            if isinstance(x, ir.Var) and x.name in extents:
                e = extents[x.name]
                if e not in names:
                    name = f"iota{e}_"
                    while name in taken:
                        name += "_"
                    names[e] = name
                    taken.add(name)
                return ir.Ref(names[e], (x,), loc=x.loc)
            return x
        body.append(dataclasses.replace(s, value=map_expr_pre(s.value, read)))
    if not names:
        return None
    extra = tuple(ir.Param(n, ir.TensorType(I32, (e,)), loc=func.loc) for e, n in names.items())
    return dataclasses.replace(func, params=func.params + extra, body=tuple(body)), {n: e for e, n in names.items()}


EXACT = float(1 << 24)


def exact_int_sum(arg, count: int, types: dict) -> bool:
    """Whether a sum of `count` values of `arg` is exact in f32: a float `arg`, or integers interval arithmetic
    bounds (counts of compares: `i32(x > 0)`) so that the total stays below 2^24; not `i32(x)` of floats."""
    from gir.passes.builtin.exprs import KIND_INT, expr_kind
    if expr_kind(arg, types) != KIND_INT:
        return True
    lo_hi = _interval(arg, {v.name: None for v in walk(arg) if isinstance(v, ir.Var)}, {}, _booleans(types))
    return lo_hi is not None and max(abs(lo_hi[0]), abs(lo_hi[1])) * count < EXACT


def exact_integers(func: ir.Func) -> set[str]:
    """The integer and boolean tensors `func` (sizes specialised) computes whose values and integer subexpressions
    interval arithmetic bounds below 2^24 (f32 vectors hold them exactly): an argmax's position, a count of
    compares; not `sum(i32(x))` (its values are unknown: the exact scalar kernel keeps it, a review's finding)."""
    info = func_info(func)
    known = _booleans(info.types)
    for st in info.stmts:
        _exact_in_f32(st.stmt, {v: _extent(d) for v, d in st.ranges.items()}, info.types, st, known)
    return set(known) - {p.name for p in func.params}


def _exact_in_f32(s: ir.Assign, extents: dict, types: dict, st, known: dict) -> bool:
    """Whether every integer subexpression of the statement stays below 2^24 in magnitude (bounded by interval
    arithmetic over the index variables' extents and the bounds of the integer tensors computed before, recorded
    in `known`): the f32 tiles then compute it exactly."""
    from gir.passes.builtin.exprs import KIND_INT, expr_kind
    counts = {}
    for k, node in enumerate(reductions_preorder(s.value)):
        n = 1
        for v in st.reduce_vars.get(k, ()):
            if not extents.get(v):
                return False   # (an unknown count: no bound)
            n *= extents[v]
        counts[id(node)] = n
    # `n[] = i32(mean(x))`: converting the f32 value is exact, whatever it is; the integer is unbounded for later
    # arithmetic (which then is not exact)
    final = isinstance(s.value, ir.Call) and s.value.fn == "i32" and expr_kind(s.value.args[0], types) == "float"
    for node in walk(s.value):
        if expr_kind(node, types) == KIND_INT and not (final and node is s.value):
            lo_hi = _interval(node, extents, counts, known)
            if lo_hi is None or max(abs(lo_hi[0]), abs(lo_hi[1])) >= EXACT:
                return False
    if not types[s.target.name].dtype.is_float:
        lo_hi = (-math.inf, math.inf) if final else _interval(s.value, extents, counts, known)
        if lo_hi is None:
            return False
        known[s.target.name] = lo_hi
    return True


def _booleans(types: dict) -> dict[str, tuple]:
    return {name: (0.0, 1.0) for name, t in types.items() if t.dtype == ir.DType.bool}


def _interval(e, ext: dict, counts: dict, known: dict) -> tuple[float, float] | None:
    """Bounds of an integer-valued expression (None: unknown, e.g. an integer tensor's values)."""
    def iv(x):
        return _interval(x, ext, counts, known)
    if isinstance(e, ir.Ref):
        return known.get(e.name)
    if isinstance(e, ir.Const):
        return (float(e.value), float(e.value)) if not isinstance(e.value, bool) else (0.0, 1.0)
    if isinstance(e, ir.Var):
        return (0.0, float(ext[e.name] - 1)) if ext.get(e.name) else None
    if isinstance(e, ir.UnOp) and e.op == "-":
        b = iv(e.operand)
        return None if b is None else (-b[1], -b[0])
    if isinstance(e, ir.BinOp):
        if e.op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"):
            return (0.0, 1.0)
        a, b = iv(e.lhs), iv(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if e.op == "*":
            p = [x * y for x in a for y in b]
            return (min(p), max(p))
        if e.op in ("//", "%") and b[0] == b[1] and b[0] > 0:
            return (math.floor(a[0] / b[0]), math.floor(a[1] / b[0])) if e.op == "//" else (0.0, b[0] - 1)
        return None
    if isinstance(e, ir.Call):
        args = [iv(a) for a in e.args]
        if e.fn == "select" and len(args) == 3 and args[1] is not None and args[2] is not None:
            return (min(args[1][0], args[2][0]), max(args[1][1], args[2][1]))
        if e.fn in ("max", "min") and len(args) == 2 and None not in args:
            f = max if e.fn == "max" else min
            return (f(args[0][0], args[1][0]), f(args[0][1], args[1][1]))
        if e.fn in ("abs", "neg", "i32", "f32") and len(args) == 1 and args[0] is not None:
            lo, hi = args[0]
            if e.fn == "neg":
                return (-hi, -lo)
            if e.fn == "abs":
                return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
            return args[0]
        return None
    if isinstance(e, ir.Reduce) and e.op in ("sum", "max", "min"):
        b = iv(e.arg)
        if b is None:
            return None
        n = counts.get(id(e), 0) if e.op == "sum" else 1
        return (min(b[0] * n, b[0]), max(b[1] * n, b[1]))
    return None


def _extent(d) -> int | None:
    if isinstance(d, int):
        return d
    if isinstance(d, ir.Const) and isinstance(d.value, int):
        return d.value
    return None


def iota_kernel(name: str, tensor: str, shape: tuple) -> ir.Kernel:
    """A kernel storing 0..E-1 (i32) into the GDRAM tensor `tensor` of `shape` ((E,), or a view's (R, C)): chunks
    of up to CHUNK elements (a row each when R > 1), chunk k on task k mod 32, each the on-chip base 0..c-1 plus
    the chunk's first value."""
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    c = cols if rows > 1 else min(CHUNK, cols)
    if c > CHUNK:
        raise GirError(f"index tensor rows of {c} elements do not fit one chunk", None)
    chunks = rows if rows > 1 else math.ceil(cols / c)
    tasks = min(TASKS, chunks)
    tasks = tasks if tasks <= 4 else tasks - tasks % 4   # (task_dim: at most 4, or whole clusters of 4)
    tail = cols - (chunks - 1) * c if rows == 1 else c
    k = B.add(B.mul(B.v("it_"), tasks), B.v("task_"))

    def region(n: int) -> ir.Ref:
        if len(shape) == 1:
            return B.ref(tensor, B.sl(B.mul(k, c), n))
        return B.ref(tensor, B.sl(k, 1), B.sl(0, n)) if rows > 1 else B.ref(tensor, B.sl(0, 1), B.sl(B.mul(k, c), n))

    def chunk(n: int) -> list:
        tile = (lambda x: B.ref(x, B.sl(0, 1), B.sl(0, n))) if len(shape) == 2 else (lambda x: B.ref(x, B.sl(0, n)))
        return [ir.Assign(B.ref("io_", B.sl(0, 1)), B.mul(k, c)),   # (the chunk's first value, then the vector op)
                ir.Assign(tile("iv_"), ir.BinOp("+", tile("ib_"), B.ref("io_", B.sl(0, 1)))),
                ir.Assign(tile("ih_"), ir.Call("i32", (tile("iv_"),))),
                B.move("store", region(n), tile("ih_"))]
    step = chunk(c) if tail == c else [ir.If(ir.BinOp("<", k, B.c(chunks - 1)), tuple(chunk(c)),
                                             tuple(chunk(tail)))]
    dims = (1, c) if len(shape) == 2 else (c,)
    body = [B.alloc("gs_", F32, (1,), "nram"), B.alloc("io_", F32, (1,), "nram"), B.alloc("ib_", F32, dims, "nram"),
            B.alloc("iv_", F32, dims, "nram"), B.alloc("ih_", I32, dims, "nram")]
    body += _iota("ib_", "iv_", c, False, row=len(shape) == 2)
    trips = math.ceil(chunks / tasks)
    loop_body = step if trips * tasks == chunks else [ir.If(ir.BinOp("<", k, B.c(chunks)), tuple(step))]
    body.append(ir.For("it_", B.c(0), B.c(trips), tuple(loop_body)))
    par = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(body))
    return ir.Kernel(name, (par,), (("task_dim", str(tasks)),))


def with_iotas(out: ir.Func, iotas: dict[str, int], func: ir.Func) -> ir.Func:
    """The schedule `out` of the rewritten function as a schedule of `func`: the index tensors are GDRAM
    temporaries (in the shape the schedule sees them: a view's) filled by their kernels before the others, not
    parameters."""
    types = {p.name: p.type for p in out.params if p.name in iotas}
    items = [ir.Alloc(n, types[n], ir.Level.gdram, loc=func.loc) for n in iotas]
    items += [dataclasses.replace(iota_kernel(f"{func.name}_{n}fill", n, tuple(types[n].shape)), loc=func.loc)
              for n in iotas]
    return dataclasses.replace(out, params=tuple(p for p in out.params if p.name not in iotas),
                               body=tuple(items) + tuple(out.body))
