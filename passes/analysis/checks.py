"""Kernel checks, for all values of the symbolic sizes (z3, with isl fast paths).

Each `check_*(ki, ctx)` returns CheckDiagnostics naming the instruction and a counterexample:
- check_inputs: no instruction writes a parameter of the function (inputs are read-only);
- check_threads: the block fits the target machine (threads per block, lanes per warp; cores per cluster),
  see launch.py;
- check_bounds: every unmasked access lies inside its buffer;
- check_races: no two distinct threads/lanes/blocks touch one address between barriers with a write
  (two-thread encoding: two instances with their own copies of the parallel variables);
- check_barriers: `sync @block`/`@cluster` only under conditions uniform across the block/cluster;
- check_collectives: `allreduce` (and `sync @warp` on CUDA) only under conditions uniform across the lanes
  taking part (divergence.py, one encoding with check_barriers);
- check_alignment: a `vec=W` access starts every vector at a linear offset that is a multiple of W;
- check_overflow: linear indices of global tensors fit int32 unless the kernel has `with index=int64`
  (MLU kernels: always, the MLU code generator has no 64-bit indices);
- check_capacity: on-chip allocations fit the target's per-block/per-core memories.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from gir import ir
from gir.errors import GirError
from gir.passes.analysis import isl_helpers as ih
from gir.passes.analysis import z3_helpers as zh
from gir.passes.analysis.access import KernelInfo, collect, slice_len
from gir.passes.analysis.diagnostics import CheckDiagnostic, make
from gir.passes.analysis.divergence import check_barriers, check_collectives
from gir.passes.analysis.launch import check_threads
from gir.passes.analysis.limits import INT32_LIMIT, capacity_limits, mlu_index_overflow
from gir.passes.analysis.races import check_races, unique_accesses


@dataclass
class CheckContext:
    target: str = "cuda"
    sizes: dict[str, int] = field(default_factory=dict)
    strict: bool = False
    env: zh.Env | None = None
    index_type: str = "int32"   # what code generation will use: int32 (as written), auto (int64 where the given
    #                              sizes need it, see codegen.choose_index_type) or int64


# ------------------------------------------------------------------ helpers
def _indices(acc, env, suffix: str) -> tuple[list, list]:
    """z3 terms of the element indices of an access (one fresh variable per slice) and their ranges."""
    idx, cons = [], []
    for k, i in enumerate(acc.ref.index):
        if isinstance(i, ir.Slice):
            e = z3.Int(f"__e{k}{'w' if acc.write else 'r'}@{suffix}")
            cons += [e >= 0, e < slice_len(i)]
            idx.append(zh.expr(i.start, env) + i.step * e)
        else:
            idx.append(zh.expr(i, env))
    return idx, cons


def _in_bounds(acc, idx, env) -> list:
    return [z3.And(x >= 0, x < zh.dim_term(d, env)) for x, d in zip(idx, acc.buf.type.shape)]


def _shown(ki, *instrs) -> list[str]:
    return list(ki.params) + [n for ins in instrs for n in ins.var_names]


# ------------------------------------------------------------------- bounds
def check_bounds(ki: KernelInfo, ctx: CheckContext) -> list[CheckDiagnostic]:
    out = []
    params = ih.size_params(ki.params, ctx.sizes)
    for ins in ki.instrs:
        for acc in unique_accesses(ins):
            if acc.mask and acc.buf.level.off_chip:
                continue  # clipped to the tensor by construction
            if _isl_in_bounds(ki, ins, acc, params):
                continue
            env, cons = ctx.env.instance(ins, "1")
            idx, econs = _indices(acc, env, "1")
            bad = [z3.Not(c) for c in _in_bounds(acc, idx, env)]
            status, model = zh.solve(ctx.env.constraints + cons + econs + [z3.Or(bad)])
            if status == "unsat":
                continue
            if status == "unknown":
                out.append(make("bounds", f"could not prove that '{acc.ref.name}' is accessed in bounds (timeout)",
                                ins, severity="warning"))
                continue
            dim = next(k for k, c in enumerate(bad) if z3.is_true(z3.simplify(z3.substitute(
                c, *[(z3.Int(n), z3.IntVal(v)) for n, v in model.items()]))) or k == len(bad) - 1)
            val = zh.value(model, idx[dim])
            ext = acc.buf.type.shape[dim]
            ext_v = ext if isinstance(ext, int) else model.get(ext, "?")
            out.append(make("bounds", f"out-of-bounds {'write' if acc.write else 'read'} of '{acc.ref.name}': "
                            f"index {dim} is {val}, outside 0..{ext_v}", acc.ref.loc or ins,
                            model, names=_shown(ki, ins),
                            notes=[f"instruction {ins.name} ({ins.kind})"] + (
                                ["add 'mask' to clip the access to the tensor"] if acc.buf.level.off_chip else [])))
    return out


def _isl_in_bounds(ki, ins, acc, params) -> bool:
    try:
        rng = ki.access_map(ins, acc, clip=False).range().intersect_params(params)
        dims = [f"o{k}" for k in range(len(acc.owner) + len(acc.ref.index))]
        box = [f"0 <= {o} < {ih.expr(ir.Var(d) if isinstance(d, str) else ir.Const(d))}"
               for o, d in zip(dims[len(acc.owner):], acc.buf.type.shape)]
        return rng.is_subset(ih.make_set(ki.params, acc.buf.name, dims, box))
    except (ih.NotAffine, Exception):  # isl cannot express it: fall back to z3
        return False


# ---------------------------------------------------------------- alignment
def check_alignment(ki: KernelInfo, ctx: CheckContext) -> list[CheckDiagnostic]:
    out = []
    for ins in ki.instrs:
        if ins.kind not in ("load", "store", "copy") or ins.stmt.vec == 1:
            continue
        vec = ins.stmt.vec
        for acc in ins.accesses:
            last = acc.ref.index[-1] if acc.ref.index else None
            if not isinstance(last, ir.Slice) or last.step != 1:
                out.append(make("alignment", f"vec={vec} access to '{acc.ref.name}' is not contiguous in its "
                                "innermost dimension", acc.ref.loc or ins))
                continue
            env, cons = ctx.env.instance(ins, "1")
            idx, econs = _indices(acc, env, "1")
            econs.append(z3.Int(f"__e{len(idx) - 1}{'w' if acc.write else 'r'}@1") % vec == 0)
            if acc.mask and acc.buf.level.off_chip:
                econs += _in_bounds(acc, idx, env)
            linear, pitch = z3.IntVal(0), z3.IntVal(1)
            for x, d in reversed(list(zip(idx, acc.buf.type.shape))):
                linear = linear + x * pitch
                pitch = pitch * zh.dim_term(d, env)
            status, model = zh.solve(ctx.env.constraints + cons + econs + [linear % vec != 0])
            if status == "sat":
                off = zh.value(model, linear)
                out.append(make("alignment", f"misaligned vec={vec} access to '{acc.ref.name}': a vector starts "
                                f"at linear element offset {off}, not a multiple of {vec}", acc.ref.loc or ins,
                                model, names=_shown(ki, ins),
                                notes=["use a smaller vec, or guard the kernel so that row pitches are multiples "
                                       f"of {vec}"]))
            elif status == "unknown":
                out.append(make("alignment", f"could not prove vec={vec} access to '{acc.ref.name}' aligned "
                                "(timeout)", acc.ref.loc or ins, severity="warning"))
    return out


# ----------------------------------------------------------------- overflow
def check_overflow(ki: KernelInfo, ctx: CheckContext) -> list[CheckDiagnostic]:
    """The one-past-the-end linear index of every global tensor a kernel touches must fit int32
    (numel < 2**31), unless the kernel says `with index=int64`."""
    mlu = ki.family == "mlu"   # no 64-bit indices on the MLU: neither `index=int64` nor an index type helps
    if not mlu and (dict(ki.kernel.attrs).get("index") == "int64" or ctx.index_type == "int64"):
        return []
    out, symbolic, seen = [], [], set()
    for ins in ki.instrs:
        for acc in ins.accesses:
            buf = acc.buf
            if not buf.level.off_chip or buf.name in seen:
                continue
            seen.add(buf.name)
            fixed = [d if isinstance(d, int) else ctx.sizes.get(d) for d in buf.type.shape]
            if None not in fixed:
                numel = _prod(fixed)
                if mlu and numel >= INT32_LIMIT:
                    message, notes = mlu_index_overflow(buf.name, numel)
                    cex = {d: ctx.sizes[d] for d in buf.type.shape if isinstance(d, str)}
                    out.append(make("overflow", message, _declaration(ki.func, buf.name) or ins, cex,
                                    notes=notes + [f"accessed by {ins.name} ({ins.kind}) at {ins.loc}"]))
                elif numel >= INT32_LIMIT and ctx.index_type != "auto":   # auto: the code generator picks int64
                    cex = {d: ctx.sizes[d] for d in buf.type.shape if isinstance(d, str)}
                    out.append(make("overflow", f"'{buf.name}' has {numel} elements: its linear index does not fit "
                                    "int32", ins, cex, notes=["mark the kernel `with index=int64`"]))
            else:
                symbolic.append((buf, ins))
    if symbolic:
        buf, ins = symbolic[0]
        free = [d for d in buf.type.shape if isinstance(d, str) and d not in ctx.sizes]
        rest = _prod([d if isinstance(d, int) else ctx.sizes.get(d, 1) for d in buf.type.shape])
        cex = {d: 1 for d in free}
        cex[free[0]] = -(-INT32_LIMIT // rest)
        names = ", ".join(f"'{b.name}'" for b, _ in symbolic)
        out.append(make("overflow", f"linear indices of {names} can exceed int32 for large sizes",
                        ki.kernel.loc or ins, cex, severity="error" if ctx.strict else "warning",
                        notes=["give --sizes" if mlu else "give --sizes, or mark the kernel `with index=int64`"]))
    return out


def _declaration(func: ir.Func, name: str):
    """Where a global tensor is declared: its parameter/result or function-level alloc."""
    for p in func.params + func.results:
        if p.name == name:
            return p.loc
    return next((item.loc for item in func.body if isinstance(item, ir.Alloc) and item.name == name), None)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


# ------------------------------------------------------------------- inputs
def check_inputs(ki: KernelInfo, ctx: CheckContext) -> list[CheckDiagnostic]:
    """Parameters are inputs: no store, copy or compute of a kernel may write them."""
    inputs = {p.name for p in ki.func.params}
    out = []
    for ins in ki.instrs:
        for acc in ins.accesses:
            if acc.write and acc.buf.name in inputs and acc.buf.level.off_chip:
                out.append(make("input", f"store into input tensor '{acc.buf.name}': inputs are read-only", ins,
                                notes=[f"'{acc.buf.name}' is a parameter of '{ki.func.name}'; write a result or "
                                       "a function-level alloc instead"]))
    return out


# ----------------------------------------------------------------- capacity
def check_capacity(ki: KernelInfo, ctx: CheckContext) -> list[CheckDiagnostic]:
    limits = capacity_limits(ctx.target, ki.family, dict(ki.kernel.attrs))
    totals: dict[tuple, int] = {}
    out = []
    for alloc, _path, owner in ki.allocs:
        limit = limits.get(alloc.level)
        if limit is None:
            continue
        key = (alloc.level, owner)
        totals[key] = totals.get(key, 0) + _prod(alloc.type.shape) * alloc.type.dtype.nbytes
        if totals[key] > limit and totals[key] - _prod(alloc.type.shape) * alloc.type.dtype.nbytes <= limit:
            out.append(make("capacity", f"@{alloc.level.value} allocations need {totals[key]} bytes, more than "
                            f"the {limit} bytes available on target '{ctx.target}'", alloc,
                            notes=[f"'{alloc.name}' crosses the limit"]))
    return out


CHECKS = {"input": check_inputs, "threads": check_threads, "bounds": check_bounds, "race": check_races,
          "barrier": check_barriers, "collective": check_collectives, "alignment": check_alignment,
          "overflow": check_overflow, "capacity": check_capacity}


def check_kernel(func: ir.Func, kernel: ir.Kernel, target: str = "cuda", sizes: dict[str, int] | None = None,
                 strict: bool = False, checks: tuple[str, ...] | None = None,
                 index_type: str = "int32") -> list[CheckDiagnostic]:
    """Run the named checks (all by default) on one kernel; errors and warnings, in check order. Memoized on
    what the checks read (the function's signature and function-level statements, the kernel, with their source
    locations and text) and the options: the search checks every kernel it emits and `gir compile` checks the
    chosen ones again with the same options. What the key does not hold -- machine descriptions and other
    module globals -- is constant in a process (tests that patch it call `clear_memo`)."""
    key = _memo_key(func, kernel, target, sizes, strict, checks, index_type)
    if key in _MEMO:
        return list(_MEMO[key])
    ki = collect(func, kernel)
    ctx = CheckContext(target, dict(sizes or {}), strict, zh.Env(ki.params, sizes), index_type)
    out: list[CheckDiagnostic] = []
    for name, fn in CHECKS.items():
        if checks is None or name in checks:
            out += fn(ki, ctx)
    if len(_MEMO) >= MEMO_ENTRIES:
        _MEMO.clear()
    _MEMO[key] = tuple(out)
    return out


MEMO_ENTRIES = 4096
_MEMO: dict[tuple, tuple[CheckDiagnostic, ...]] = {}


def _memo_key(func: ir.Func, kernel: ir.Kernel, target: str, sizes, strict: bool, checks, index_type: str) -> tuple:
    """The frozen IR the checks read (dataclass equality covers every location inside it, end columns included),
    the source text its locations quote (not compared by `Loc`), the function's name (diagnostics name it) and
    the options."""
    items = tuple(s for s in func.body if not isinstance(s, ir.Kernel))
    source = kernel.loc.source if kernel.loc is not None else None
    return (target, tuple(sorted((sizes or {}).items())), strict, None if checks is None else tuple(checks),
            index_type, func.name, func.params, func.results, items, func.loc, kernel, source)


def clear_memo() -> None:
    """Forget every memoized check (tests that change machine descriptions or other globals call it)."""
    _MEMO.clear()


def check_module(module: ir.Module, target: str = "cuda", sizes: dict[str, int] | None = None,
                 strict: bool = False, index_type: str = "int32") -> list[CheckDiagnostic]:
    """Check every kernel; raise GirError with all errors, else return the warnings. `index_type`: what the code
    generator will use (`gir compile --index-type`), so the overflow check judges the code that is emitted."""
    diags = [d for f in module.funcs for k in f.kernels
             for d in check_kernel(f, k, target, sizes, strict, index_type=index_type)]
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        raise GirError(diagnostics=errors)
    return diags
