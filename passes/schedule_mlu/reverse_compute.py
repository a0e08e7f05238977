"""Column reversals inside element-wise compute (`y[i, j] = exp(x[i, N-1-j]) + b[N-1-j] - x[i, j]`) → one fused
row-model kernel whose reversed operands are mirrored on chip.

The function is rewritten so that every reversed-column reference of a parameter, `x[i, N-1-j]` of an [M, N]
tensor or `b[N-1-j]` of an [N] one, reads a virtual parameter `x__rev[i, j]` instead; the rewritten function is an
ordinary row-model function (rowmodel.py), placed and lowered by the row-model scheduler (placement.py,
lower_rows.py: loads, f32 widening, three-address vector computes, stores, pipelined by the emitter). Then the
virtual operands' loads are replaced by loads of the real tensor plus a `__bang_mirror` (`reverse()`):

    load  xs[0:R, P-N:P] <- x[r0:r0+R, 0:N] with mask     # staging tile of pitch P = N rounded up to 64 elements
    x__rev_t[0:R, 0:P] = reverse(xs[0:R, 0:P])            # the row lands reversed at [0, N), its pad behind it

An [N] vector is mirrored once per core in the prologue (staged as a [1, P] row, mirrored, copied into its 1-D
tile). When x is also read unreversed and N is a multiple of 64 the mirror reads x's own tile (x is loaded once);
with a padded pitch x is loaded twice (its unreversed tile needs the row at [0, N), the mirror puts it at
[P-N, P)). Limits (the function then falls back): leading-axis reversals with compute, reversed intermediates,
reversed bool tensors (a 64-byte pitch is not whole vector units), rows longer than NRAM (no chunked variant).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.affine import to_affine
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.lower_rows import RowPlan, lower_rows
from gir.passes.schedule_mlu.placement import NoTileFits, solve_placement
from gir.passes.schedule_mlu.rowmodel import COL, FULL, NotRowModel, analyze_rows

SUFFIX = "__rev"


def _reversed_var(e, extent: int) -> str | None:
    """v when `e` is `extent - 1 - v`."""
    a = to_affine(e)
    if a is None or len(a.coeffs) != 1:
        return None
    (v, k), = a.coeffs.items()
    return v if k == -1 and a.const == extent - 1 else None


class _Rewriter:
    """Reversed-column references of parameters → references of virtual parameters."""

    def __init__(self, spec: ir.Func):
        self.params = {p.name: p for p in spec.params}
        self.types = {p.name: p.type for p in spec.params + spec.results}
        self.taken = set(self.types) | {s.target.name for s in spec.body if isinstance(s, ir.Assign)}
        self.virtual: dict[str, str] = {}      # virtual name -> real parameter
        self.seen = False                      # any reversed column (also of one-element axes)

    def name_for(self, real: str) -> str:
        for v, r in self.virtual.items():
            if r == real:
                return v
        v = real + SUFFIX
        while v in self.taken:
            v += "_"
        self.taken.add(v)
        self.virtual[v] = real
        return v

    def expr(self, e):
        if isinstance(e, ir.Ref):
            t = self.types.get(e.name)
            if t is None or len(e.index) not in (1, 2) or len(t.shape) != len(e.index):
                return e
            var = _reversed_var(e.index[-1], t.shape[-1])
            if var is None:
                if any(_reversed_var(i, d) for i, d in zip(e.index, t.shape) if not isinstance(i, ir.Var)):
                    raise NotRowModel(f"'{e.name}' reversed on its leading axis")
                return e
            self.seen = True
            if t.shape[-1] == 1:     # a one-element axis reversed is itself (and [R, 1] tiles are row vectors)
                return dataclasses.replace(e, index=e.index[:-1] + (ir.Var(var),))
            if e.name not in self.params:
                raise NotRowModel(f"reversed intermediate '{e.name}'")
            if t.dtype == ir.DType.bool:
                raise NotRowModel("reversed bool tensor (64-byte pitch: not whole vector units)")
            return dataclasses.replace(e, name=self.name_for(e.name), index=e.index[:-1] + (ir.Var(var),))
        if isinstance(e, ir.BinOp):
            return dataclasses.replace(e, lhs=self.expr(e.lhs), rhs=self.expr(e.rhs))
        if isinstance(e, ir.UnOp):
            return dataclasses.replace(e, operand=self.expr(e.operand))
        if isinstance(e, ir.Call):
            return dataclasses.replace(e, args=tuple(self.expr(a) for a in e.args))
        if isinstance(e, ir.Reduce):
            return dataclasses.replace(e, arg=self.expr(e.arg))
        return e


def rewrite(spec: ir.Func) -> tuple[ir.Func, dict[str, str]]:
    """`spec` reading virtual parameters for its reversed-column references, and virtual name → real name."""
    rw = _Rewriter(spec)
    body = tuple(dataclasses.replace(s, value=rw.expr(s.value)) if isinstance(s, ir.Assign) else s
                 for s in spec.body)
    if not rw.seen:
        raise NotRowModel("no reversed column")
    from gir.shapes import _walk as walk_expr
    used = {x.name for s in body if isinstance(s, ir.Assign) for x in walk_expr(s.value) if isinstance(x, ir.Ref)}
    kept = tuple(p for p in spec.params if p.name in used)    # a tensor read only reversed is not loaded as is
    extra = tuple(ir.Param(v, rw.types[r]) for v, r in rw.virtual.items())
    return dataclasses.replace(spec, params=kept + extra, body=body), rw.virtual


def reverse_compute_kernel(spec: ir.Func, name: str, tasks: int = 32, nram: int = 768 * 1024,
                           allow_sram: bool = True, max_rows: int = 64) -> ir.Kernel:
    """The fused kernel (raises NotRowModel when `spec` is not element-wise row-model compute on column
    reversals of its parameters)."""
    rew, virtual = rewrite(spec)
    model = analyze_rows(rew, {})
    for v in virtual:
        if model.inputs[v] not in (FULL, COL):
            raise NotRowModel(f"'{virtual[v]}' reversed along its row axis")
    p = L.pitch((1, model.n))
    shared = {v for v in virtual if p == model.n and model.inputs[v] == FULL and model.inputs.get(virtual[v]) == FULL}
    # staging tiles of the loaded reversed [M, N] operands, double-buffered by the pipeliner (not in the model)
    extra_row = sum(2 * p * model.dtypes[v].nbytes for v in virtual if model.inputs[v] == FULL and v not in shared)
    budget = nram
    for _ in range(8):
        try:
            pl = solve_placement(model, tasks=tasks, allow_sram=allow_sram, max_rows=max_rows, nram=budget)
        except NoTileFits:   # rows longer than NRAM: no chunked variant (the statement falls back)
            raise NotRowModel("a reversed row does not fit NRAM") from None
        if pl.nram_bytes + pl.rows * extra_row <= nram:
            break
        budget = nram - pl.rows * extra_row
    else:
        raise NotRowModel("reversal staging tiles do not fit NRAM")
    kern = lower_rows(model, RowPlan(pl.rows, tasks, pl.sram), name)
    return _Mirror(model, virtual, shared, pl.rows, p).kernel(kern)


class _Mirror:
    """Rewrites the lowered kernel: virtual operands' loads → loads of the real tensor plus mirrors."""

    def __init__(self, model, virtual: dict[str, str], shared: set, rows: int, pitch: int):
        self.model, self.virtual, self.shared, self.r, self.p = model, virtual, shared, rows, pitch
        self.land: dict[str, str] = {}       # real tensor -> its landing buffer (for shared mirrors)
        self.widen: set[str] = set()         # landing buffers of virtual [M, N] operands: pitch P columns
        self.allocs: list = []

    def kernel(self, k: ir.Kernel) -> ir.Kernel:
        for s in _walk(k.body):   # landing buffers of the real tensors, read by the shared mirrors
            if isinstance(s, ir.Move) and s.src.name in self.model.inputs and s.src.name not in self.virtual:
                self.land[s.src.name] = s.dst.name
        body = self.stmts(k.body)
        return dataclasses.replace(k, body=body)

    def stmts(self, ss) -> tuple:
        out: list = []
        for s in ss:
            if isinstance(s, (ir.Parallel, ir.For)):
                inner = self.stmts(s.body)
                if isinstance(s, ir.Parallel) and s.level == ir.ParLevel.core:
                    allocs = [self._alloc(a) for a in inner if isinstance(a, ir.Alloc)]
                    inner = tuple(allocs + self.allocs + [a for a in inner if not isinstance(a, ir.Alloc)])
                out.append(dataclasses.replace(s, body=inner))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.stmts(s.then), orelse=self.stmts(s.orelse)))
            elif isinstance(s, ir.Move):
                out += self.move(s)
            else:
                out.append(s)
        return tuple(out)

    def _alloc(self, a: ir.Alloc) -> ir.Alloc:
        if a.name in self.widen:
            return dataclasses.replace(a, type=ir.TensorType(a.type.dtype, (a.type.shape[0], self.p)))
        return a

    def move(self, s: ir.Move) -> list:
        v = s.src.name if s.src.name in self.virtual else s.src.name[:-2] if s.src.name.endswith("_s") else None
        if v not in self.virtual:
            return [s]
        real, r, p, n = self.virtual[v], self.r, self.p, self.model.n
        dt = self.model.dtypes[v]
        land = s.dst.name
        if self.model.inputs[v] == FULL:
            self.widen.add(land)
            whole = B.ref(land, B.sl(0, r), B.sl(0, p))
            if v in self.shared:
                return [ir.Assign(whole, ir.Call("reverse", (B.ref(self.land[real], B.sl(0, r), B.sl(0, p)),)))]
            st = f"{v}_st"
            self.allocs.append(B.alloc(st, dt, (r, p), "nram"))
            src = dataclasses.replace(s.src, name=real)
            return [B.move(s.kind, B.ref(st, B.sl(0, r), B.sl(p - n, n)), src, mask=s.mask),
                    ir.Assign(whole, ir.Call("reverse", (B.ref(st, B.sl(0, r), B.sl(0, p)),)))]
        if s.kind == "load" and s.dst.name.endswith("_s"):   # SRAM staging of the vector (cluster level): as is
            return [dataclasses.replace(s, src=dataclasses.replace(s.src, name=real))]
        st, mr = f"{v}_st", f"{v}_mr"
        self.allocs += [B.alloc(st, dt, (1, p), "nram"), B.alloc(mr, dt, (1, p), "nram")]
        src = dataclasses.replace(s.src, name=real) if s.src.name == v else s.src
        return [B.move(s.kind, B.ref(st, B.c(0), B.sl(p - n, n)), src),
                ir.Assign(B.ref(mr, B.sl(0, 1), B.sl(0, p)), ir.Call("reverse", (B.ref(st, B.sl(0, 1), B.sl(0, p)),))),
                B.move("copy", s.dst, B.ref(mr, B.c(0), B.sl(0, n)))]


def _walk(ss):
    for s in ss:
        yield s
        for f in ("body", "then", "orelse"):
            yield from _walk(getattr(s, f, ()))
