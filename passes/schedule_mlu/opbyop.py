"""The op-by-op baseline (`schedule_mlu(..., mode="opbyop")`): every operator statement is scheduled on its own
with the same fused schedules (row model, long rows, column reductions, permutations, scalar reductions, index
values) as a one-statement function whose inputs and output live in GDRAM. So the baseline differs from the fused
schedule only by fusion: intermediates go through GDRAM and every statement is its own kernel (or kernels). A
statement no fused schedule covers alone is split into statements they do cover (`splitstmt.py`: reductions over
several trailing axes, operands broadcast over the row axes, through small GDRAM temporaries); one still outside
them becomes a scalar kernel (`fallback.py`).
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu.placement import NoTileFits

_ACTIVE: set = set()   # statements being scheduled (a one-statement function may fall back to op-by-op itself:
#                        inside, statement_items answers None, i.e. the scalar kernel)


def single_func(func: ir.Func, st, types, k: int) -> ir.Func:
    """The statement `st` as a function of the tensors it reads (GDRAM inputs) returning its target."""
    from gir.shapes import _walk
    target = st.stmt.target.name
    names: list[str] = []
    for x in _walk(st.stmt.value):
        if isinstance(x, ir.Ref) and x.name not in names and x.name != target:
            names.append(x.name)
    params = tuple(ir.Param(x, types[x]) for x in names)
    return ir.Func(f"{func.name}_s{k}", params, (ir.Param(target, types[target]),), (st.stmt,), loc=st.stmt.loc)


def statement_items(func: ir.Func, st, types, k: int, items: list, allow_sram: bool = True, tasks: int = 32,
                    max_rows: int = 64, nram: int = 768 * 1024) -> list | None:
    """Body items (GDRAM temporaries, kernels) scheduling statement `st` of `func` (sizes specialised) with the
    fused schedules, or None when only the scalar fallback covers it (or a temporary's name would collide)."""
    if _ACTIVE:
        return None
    kw = dict(allow_sram=allow_sram, tasks=tasks, max_rows=max_rows, nram=nram)
    taken = {p.name for p in func.params + func.results} | {x.name for x in items if isinstance(x, ir.Alloc)}
    taken |= set(types)
    sub = single_func(func, st, types, k)
    out = _vector(sub, taken, kw)
    if out is not None:
        return out
    from gir.passes.schedule_mlu.splitstmt import split_statement
    split = split_statement(st.stmt, types, set(taken))
    if len(split.stmts) < 2:
        return None
    allt = dict(types, **split.temps)
    got: list = [ir.Alloc(name, t, ir.Level.gdram) for name, t in split.temps.items()]
    taken |= set(split.temps)
    for j, stmt in enumerate(split.stmts):
        piece = _one(f"{sub.name}_{j}", stmt, allt)
        part = _vector(piece, taken, kw)
        if part is None:
            return None
        taken |= {x.name for x in part if isinstance(x, ir.Alloc)}
        got += part
    return got


def _one(name: str, stmt: ir.Assign, types) -> ir.Func:
    from gir.shapes import _walk
    t = stmt.target.name
    names: list[str] = []
    for x in _walk(stmt.value):
        if isinstance(x, ir.Ref) and x.name not in names and x.name != t:
            names.append(x.name)
    return ir.Func(name, tuple(ir.Param(x, types[x]) for x in names), (ir.Param(t, types[t]),), (stmt,))


def _vector(sub: ir.Func, taken: set, kw: dict) -> list | None:
    """The allocs and kernels of the one-statement function `sub` scheduled alone, or None if that needs a
    scalar kernel or one of its GDRAM temporaries' names is `taken`."""
    from gir.passes.schedule_mlu.schedule import schedule_mlu
    _ACTIVE.add(sub.name)
    try:
        out = schedule_mlu(sub, {}, mode="fused", **kw)
    except NoTileFits:   # no tile of its rows fits NRAM: the caller splits it or takes the scalar kernel (other
        return None      # refusals, e.g. a scan's element type, are the program's located errors)
    finally:
        _ACTIVE.discard(sub.name)
    kernels = [x for x in out.body if isinstance(x, ir.Kernel)]
    if any(x.name.startswith(f"{sub.name}_k") for x in kernels):   # the scalar fallback's kernel names
        return None
    allocs = [x for x in out.body if isinstance(x, ir.Alloc)]
    if any(a.name in taken for a in allocs):
        return None
    return allocs + kernels
