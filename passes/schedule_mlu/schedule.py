"""Top-level MLU scheduling: specialise sizes, pick a strategy, build and verify the explicit function."""
from __future__ import annotations

import dataclasses
import re

from gir import ir
from gir.errors import GirError
from gir.shapes import func_info
from gir.verifier import verify_module
from gir.walk import fold_sizes
from gir.passes.schedule_mlu.fallback import scalar_kernel
from gir.passes.schedule_mlu.opbyop import statement_items
from gir.passes.schedule_mlu.placement import NoTileFits
from gir.passes.schedule_mlu.recipes import RECIPES, Setting, best, describe, missed as _missed, search
from gir.passes.schedule_mlu.rowmodel import NotRowModel
from gir.passes.schedule_mlu.segments import Unfused, describe as describe_split, split as split_segments
from gir.passes.schedule_mlu.vecprep import prepare_kernels

MODES = ("fused", "opbyop", "scalar")


def _concrete(t: ir.TensorType, sizes) -> ir.TensorType:
    return ir.TensorType(t.dtype, tuple(d if isinstance(d, int) else sizes[d] for d in t.shape))


def specialize(func: ir.Func, sizes: dict[str, int]) -> ir.Func:
    """The same function with every size symbol replaced by its value (MLU kernels have static tiles)."""
    missing = [s for s in func.size_symbols() if s not in sizes]
    if missing:
        raise GirError(f"the MLU target needs values for sizes {', '.join(missing)} (use --sizes NAME=INT,...)", func.loc)
    def param(p):   # a reshape view's declared type and dimensions too (the tile recipe's merged views keep them)
        view = None if p.view is None else dataclasses.replace(
            p.view, outer=_concrete(p.view.outer, sizes), dims=tuple(fold_sizes(d, sizes) for d in p.view.dims))
        return dataclasses.replace(p, type=_concrete(p.type, sizes), view=view)
    ps = tuple(param(p) for p in func.params)
    rs = tuple(param(p) for p in func.results)
    body = tuple(dataclasses.replace(s, value=fold_sizes(s.value, sizes),
                                     target=fold_sizes(s.target, sizes)) if isinstance(s, ir.Assign) else s
                 for s in func.body)
    return dataclasses.replace(func, params=ps, results=rs, body=body)


def _single(func: ir.Func, st, types, k: int) -> ir.Func:
    """A one-statement function (for op-by-op scheduling)."""
    target = st.stmt.target.name
    names = []
    for x in _refs(st.stmt.value):
        if x not in names and x != target:
            names.append(x)
    params = tuple(ir.Param(x, types[x]) for x in names)
    return ir.Func(f"{func.name}_s{k}", params, (ir.Param(target, types[target]),), (st.stmt,))


def _refs(e):
    from gir.shapes import _walk
    return [x.name for x in _walk(e) if isinstance(x, ir.Ref)]


def schedule_mlu(func: ir.Func, sizes: dict[str, int], mode: str = "fused", allow_sram: bool = True,
                 tasks: int = 32, max_rows: int = 64, nram: int = 768 * 1024, remarks: list | None = None,
                 choices: list | None = None, split: bool = True) -> ir.Func:
    """Explicit MLU GIR for `func` at `sizes` (verified). Falls back to scalar kernels outside the row model.
    `nram`: the NRAM bytes the schedules may plan for (smaller values force chunked long rows in tests).
    `remarks`: a list that receives a located missed `gir.passes.remarks.Remark` for every slower fallback
    taken in `mode="fused"` (a function split op by op, chunked long rows, a statement left as a scalar kernel).
    `choices`: a list that receives one line per search over the recipes (recipes.describe: the winner, its
    estimate and the other candidates'), for the pass's analysis remarks. `split`: a multi-statement function no
    recipe covers is split into the consecutive segments the cost model prefers (segments.py); False raises
    segments.Unfused instead (the split's own segments)."""
    from gir.limits import refuse_empty_tensors, refuse_f64
    from gir.passes.analysis.index_bounds import clamp_func
    from gir.passes.builtin.argreduce import lower_arg_reductions
    from gir.passes.builtin.hoist import hoist_reductions

    refuse_empty_tensors(func, "compiling", sizes)   # (gir run and gir.compile specialise empty bindings first)
    refuse_f64(func, "mlu-sim")
    func = hoist_reductions(func)   # nested invariant reductions once (a pass of the pipeline, for direct calls)
    func = lower_arg_reductions(func)   # argmax/argmin, boolean max/min: reductions the MLU path runs
    func = clamp_func(func)   # guarded reads of a select stay inside their tensor (both branches are computed)
    from gir.passes.schedule_mlu.boolarith import boolean_arith
    func = boolean_arith(func)   # and / or / not as 0/1 arithmetic: the vector unit has no logic ops
    from gir.passes.builtin.narrow import round_read_results
    func = round_read_results(func)   # a 16-bit result read again is read rounded (passes/builtin/narrow.py)
    from gir.passes.schedule_mlu.scan import has_scan
    from gir.passes.schedule_mlu.scan_operands import materialize_operands
    if has_scan(func):   # scan operands the scan kernel cannot compute on chip get a statement of their own
        func = materialize_operands(func, specialize(func, sizes), remarks)
    marks = (len(remarks) if remarks is not None else 0, len(choices) if choices is not None else 0)
    from gir.passes.schedule_mlu.exactdiv import SCOPES, mark_exact, needs_exact_division
    info = func_info(func)
    exact = needs_exact_division([st.stmt for st in info.stmts], info.types)   # floor(x / s): no reciprocal
    if exact:
        SCOPES.append(func.name)
    try:
        out = _schedule_func(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, split, marks)
        setting = (allow_sram, tasks, max_rows, nram)
        if split and mode == "fused" and _views_ok() and _scalar_kernels(out):
            out = _iotas_if_faster(out, func, sizes, setting, remarks, choices, marks)
        if split and mode == "fused" and _views_ok() and _scalar_kernels(out):
            from gir.passes.schedule_mlu.variants import rewrites_if_faster

            def schedule(variant, got_r, got_c):
                return _schedule_func(variant, sizes, "fused", *setting, got_r, got_c, True, (0, 0))
            out = rewrites_if_faster(out, specialize(func, sizes), schedule, remarks, choices, marks)
    finally:
        if exact:
            SCOPES.pop()
    return mark_exact(out) if exact else out


def _schedule_func(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, split, marks):
    try:
        rank = _flat_shape(func, sizes) if split and _views_ok() else 0   # tensors split_flat may see as rows
        try:
            out = _schedule(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, split)
        except GirError as exc:
            if not rank or (rank > 1 and mode != "fused"):
                raise
            out = _flat_or_raise(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, marks,
                                 exc, rank)
        else:
            if rank and mode == "fused":
                out = _flat_if_faster(out, func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices,
                                      marks, ("row",) if rank == 1 else ("any", "row"))
    except NoTileFits as e:   # (still a NoTileFits: the op-by-op split falls back from it, opbyop.py)
        raise NoTileFits(f"function '{func.name}': {e.message}", func.loc) from None
    from gir.passes.schedule_mlu.intcheck import integer_remark
    integer_remark(func, out, remarks)   # i32 computed in f32 tiles: exact below 2^24 only (said, not silent)
    return out


def _scalar_kernels(out: ir.Func) -> bool:
    return any(re.search(r"_k\d+$", k.name) for k in out.kernels)


INDEX_TENSORS = "its index values read from index tensors filled on chip (iotas.py)"


def _iotas_if_faster(out, func, sizes, setting, remarks, choices, marks) -> ir.Func:
    """`out`, or the schedule of `func` with its index values read from index tensors (iotas.py) when the MLU
    cost model estimates that faster: the recipes refuse an index used as a value, which left scalar kernels."""
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    from gir.passes.schedule_mlu.iotas import ACTIVE, index_tensors, uses_index_values, with_iotas
    if not uses_index_values(func):
        return out
    got = index_tensors(specialize(func, sizes))
    if got is None:
        return out
    variant, iotas = got
    got_r: list = []
    got_c: list = []
    ACTIVE.update(iotas)
    try:
        alt = with_iotas(_schedule_func(variant, sizes, "fused", *setting, got_r, got_c, True, (0, 0)), iotas, func)
        verify_module(ir.Module((alt,)))
        seconds, before = estimate(alt).seconds, estimate(out).seconds
    except (GirError, ValueError, KeyError):
        return out
    finally:
        ACTIVE.difference_update(iotas)
    if not MLU_RANKING.beats(seconds, before):
        return out
    _drop_after(remarks, choices, marks)
    for got_list, new in ((remarks, got_r), (choices, got_c)):
        if got_list is not None:
            got_list.extend(new)
    if choices is not None:
        choices.append(f"{INDEX_TENSORS}: estimate {seconds * 1e6:.1f} us, otherwise {before * 1e6:.1f} us")
    return alt


def _flat_shape(func: ir.Func, sizes: dict[str, int]) -> int:
    """The rank of the tensors split_flat.py may view as [R, C] rows in `func` (0 when it leaves the function alone):
    vectors always are; tensors of rank 2 or more when that schedule is estimated faster (or the only one)."""
    from gir.passes.schedule_mlu.split_flat import split_flat
    full = specialize(func, sizes)
    types = func_info(full).types
    if split_flat(full, types, any_rank=True) is full and split_flat(full, types, one_row=True) is full:
        return 0
    return max(len(t.shape) for t in types.values())


def _drop_after(remarks, choices, marks) -> None:
    for got, n in ((remarks, marks[0]), (choices, marks[1])):
        if got is not None:
            del got[n:]


FLAT = "its tensors (all of one shape) seen as [R, C] rows of their flat memory (a reshape view, split_flat.py)"
FLAT_ROW = "its tensors (all of one shape) seen as one row [1, N], whole-tensor statistics as the row's (split_flat.py)"


def _flat_or_raise(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, marks, exc,
                   rank: int) -> ir.Func:
    """The schedule of `func` when the first one failed with `exc`: vectors as they are (no recipe takes their
    rows: a prime length is one row too long for NRAM) or tensors of rank 2 or more as [R, C] rows of their flat
    memory (a whole sum of [3, 262144], whose rows no tile holds), then, in fused mode, the fastest of that and
    the tensors as one row (split-rows: a whole sum over a prime number of elements); `exc` when none runs."""
    _drop_after(remarks, choices, marks)
    try:
        out = _schedule(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, True,
                        flat=False if rank == 1 else "any")
        if rank > 1 and choices is not None:
            choices.append(f"{FLAT}: no schedule takes them in their shape ({exc.message})")
    except GirError:
        out = None
    if mode != "fused":
        if out is None:
            raise exc from None
        return out
    if out is not None:
        return _flat_if_faster(out, func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices,
                               marks, ("row",))
    _drop_after(remarks, choices, marks)
    try:
        out = _schedule(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, True, flat="row")
    except GirError:
        _drop_after(remarks, choices, marks)
        raise exc from None
    if choices is not None:
        choices.append(f"{FLAT_ROW}: no schedule takes them otherwise ({exc.message})")
    return out


def _flat_if_faster(out, func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks, choices, marks,
                    views) -> ir.Func:
    """`out`, or the schedule of `func`'s tensors (all of one shape) seen as rows of their flat memory -- [R, C]
    ("any", rank 2 or more) or one row [1, N] ("row", whole-tensor statistics as one row's: the split-rows recipe)
    -- that the MLU cost model estimates fastest: [1000003, 3] element-wise kernels had rows too narrow to
    vectorise, [3, 1000003] ones too few rows for the cores, a whole-tensor softmax ran as five kernels."""
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    try:
        best, best_s, picked = out, estimate(out).seconds, None
    except (GirError, ValueError, KeyError):
        return out
    before = best_s
    for view in views:
        got_r, got_c = [], []
        try:
            alt = _schedule(func, sizes, mode, allow_sram, tasks, max_rows, nram, got_r, got_c, True, flat=view)
            seconds = estimate(alt).seconds
        except (GirError, ValueError, KeyError):
            continue
        except Exception as exc:   # noqa: BLE001 - an alternative's bug must not fail a function that has a schedule
            _missed(remarks, f"function '{func.name}': internal error {type(exc).__name__} in the schedule of "
                             f"{FLAT if view == 'any' else FLAT_ROW} (left out; please report): {exc}", func.loc)
            continue
        if MLU_RANKING.beats(seconds, best_s):
            best, best_s, picked = alt, seconds, (view, got_r, got_c)
    if picked is None:
        return out
    view, got_r, got_c = picked
    _drop_after(remarks, choices, marks)
    for got, new in ((remarks, got_r), (choices, got_c)):
        if got is not None:
            got.extend(new)
    if choices is not None:
        what = FLAT if view == "any" else FLAT_ROW
        choices.append(f"{what}: estimate {best_s * 1e6:.1f} us, otherwise {before * 1e6:.1f} us")
    return best


def _schedule(func, sizes, mode, allow_sram, tasks, max_rows, nram, remarks=None, choices=None,
              split=True, check=True, flat=True) -> ir.Func:
    from gir.passes.schedule_mlu.scan import has_scan
    from gir.passes.schedule_mlu.scan_choose import scan_items
    full = specialize(func, sizes)
    # vectors seen as [R, C] rows (split_flat.py), not in a segment of a split or a statement of the op-by-op
    # baseline (their callers declare the tensors unviewed)
    if split and flat and _views_ok():   # flat: True (vectors), "any" (tensors of any rank), "row" (one row), False
        from gir.passes.schedule_mlu.split_flat import split_flat
        flat_func = split_flat(full, func_info(full).types, any_rank=flat == "any", one_row=flat == "row")
        if flat == "row" and flat_func is full:
            raise GirError("not a whole-tensor statistic and its broadcast", func.loc)
        full = flat_func
    # Inputs no statement reads move nothing: every schedule sees the function without them (their shapes would
    # otherwise have to fit each schedule's tensor kinds), and they are declared again on the result.
    read = {name for s in full.body if isinstance(s, ir.Assign) for name in _refs(s.value)}
    spec = dataclasses.replace(full, params=tuple(p for p in full.params if p.name in read))
    info = func_info(spec)
    types = dict(info.types)
    if split and has_scan(spec) and len(info.stmts) > 1:   # scans of one shape and axis next to each other
        from gir.passes.schedule_mlu.scan_group import order_scans
        spec = order_scans(spec, types)              # (scan_group.py: the split may run them as one kernel)
        info = func_info(spec)
    items: list = []
    views: dict = {}   # parameters and results a split's segments view
    chosen = None
    why_not: list[str] = []   # why each recipe refused the function (said with a scalar kernel's remark)
    if has_scan(spec):   # one pipelined kernel per scan statement (passes/schedule_mlu/scan.py)
        if len(info.stmts) == 1:
            items.extend(scan_items(spec, info, tasks, remarks, allow_sram))
            mode = "done"
        elif not split:   # a segment of the split: scans of one shape and axis run as one kernel (scan_group.py)
            from gir.passes.schedule_mlu.scan_group import group_items
            group = group_items(spec, info, tasks, remarks, allow_sram)
            if group is None:   # scans along the last axis and the one before it (scan_cross.py)
                from gir.passes.schedule_mlu.scan_cross import cross_items
                group = cross_items(spec, info, tasks, remarks, allow_sram)
            if group is None:
                raise Unfused(func.name)
            items.extend(group)
            mode = "done"
        else:
            sp = _split(spec, types, sizes, allow_sram, tasks, max_rows, nram) if mode == "fused" else None
            why = (f"function '{func.name}' holds scans (a scan is fused only with scans of its shape along its "
                   "axis, the last axis or the one before it)")
            if sp is not None:   # the other statements in fused segments (segments.py)
                mode = "done"
                _take_split(sp, items, remarks, choices, views)
                if len(sp.segments) > 1:   # (one segment: the scans run as one kernel, scan_group.py says so)
                    _missed(remarks, f"{why}: {describe_split(sp)}, intermediates through GDRAM", func.loc)
            else:
                if mode == "fused":
                    _missed(remarks, f"{why}: each statement is its own MLU kernel, intermediates go through "
                                     "GDRAM", func.loc)
                mode = "opbyop"
    if mode == "fused":   # every MLU recipe is a candidate, ranked by the cost model (recipes.py)
        setting = Setting(f"{func.name}_mlu", tasks, nram, allow_sram, max_rows, _views_ok())
        found = search(full, spec, info, setting, _compulsory(spec))
        why_not = found.why_not
        for message in found.errors:   # not silent: a recipe that crashed is a compiler bug to report
            _missed(remarks, f"function '{func.name}': {message}", func.loc)
        pick = best(found.candidates)
        if pick is not None:
            chosen = pick.config
            if remarks is not None:
                remarks.extend(pick.estimate["remarks"])
            if choices is not None:
                choices.append(describe(pick, found.candidates))
        elif found.no_fit is not None:
            raise found.no_fit
        elif not split and len(info.stmts) > 1:
            raise Unfused(func.name)
        else:
            why = f"function '{func.name}' is not fused on the MLU: no fused schedule covers it as a whole " \
                  f"({'; '.join(found.why_not)})"
            sp = _split(spec, types, sizes, allow_sram, tasks, max_rows, nram) if len(info.stmts) > 1 else None
            if sp is not None:   # consecutive segments, each fused (segments.py)
                mode = "done"
                _take_split(sp, items, remarks, choices, views)
                _missed(remarks, f"{why}; {describe_split(sp)}, intermediates through GDRAM", func.loc)
            else:
                mode = "opbyop"
                if len(info.stmts) > 1:
                    _missed(remarks, f"{why}; each statement is its own kernel, intermediates go through GDRAM",
                            func.loc)
    if mode == "opbyop" and len(info.stmts) == 1:   # one statement: op-by-op is the fused schedule
        setting = Setting(f"{func.name}_mlu", tasks, nram, allow_sram, max_rows, False)
        for r in RECIPES:
            if r.name in ("columns", "permute"):
                try:
                    items.extend(r.build(spec, info, setting, None))
                    mode = "done"
                    break
                except NotRowModel:
                    pass
    if mode in ("opbyop", "scalar"):
        results = {p.name for p in spec.results}
        for k, st in enumerate(info.stmts):
            target = st.stmt.target.name
            if target not in results and not any(isinstance(i, ir.Alloc) and i.name == target for i in items):
                items.append(ir.Alloc(target, types[target], ir.Level.gdram))
            kernel = None
            if mode == "opbyop":   # the statement alone with the fused schedules (passes/schedule_mlu/opbyop.py)
                kernel = statement_items(spec, st, types, k, items, allow_sram, tasks, max_rows, nram)
            if kernel is None:
                kernel = [scalar_kernel(st, types, sizes, f"{func.name}_k{k}", tasks)]
                if mode == "opbyop":
                    _missed(remarks, f"statement '{target}' runs as a scalar MLU kernel (one element at a time, "
                                     "typically thousands of times slower than the DMA roofline): no vector "
                                     "schedule covers it" + (f" ({'; '.join(why_not)})" if len(info.stmts) == 1 and
                                                             why_not else ""), st.stmt.loc or func.loc)
            items.extend(_located(x, st.stmt.loc or func.loc) for x in kernel)
    # (a split's segments are located by the function that takes them, and checked once chosen: segments.py)
    here = (lambda x: _located(x, func.loc)) if check else (lambda x: x)
    if chosen is not None:   # the search's function: prepared kernels, tensors possibly viewed with merged axes
        out = dataclasses.replace(chosen, body=tuple(here(x) for x in chosen.body))
    else:
        items = prepare_kernels(items, nram)   # hoisted invariant broadcasts, select(c, 1, 0) as c != 0 (vecprep.py)
        out = dataclasses.replace(full, params=tuple(views.get(p.name, p) for p in full.params),
                                  results=tuple(views.get(p.name, p) for p in full.results),
                                  body=tuple(here(x) for x in items))
    if check:
        verify_module(ir.Module((out,)))
    return out


def _split(spec, types, sizes, allow_sram, tasks, max_rows, nram):
    """The cost model's split of `spec` into consecutive fused segments, or None (segments.py)."""
    # (the segments come from `spec`, already specialised and prepared by schedule_mlu: straight to _schedule;
    # one scheduled in the same compilation before, under another name, is taken again: segcache.py)
    from gir.passes.schedule_mlu.segcache import scheduled
    settings = (tuple(sorted(sizes.items())), allow_sram, tasks, max_rows, nram)

    def one(sub, r, c):
        return _schedule(sub, sizes, "fused", allow_sram, tasks, max_rows, nram, r, c, split=False, check=False)
    return split_segments(spec, types, lambda sub, r, c: scheduled(sub, settings + _modes(), one, r, c),
                          lambda done: verify_module(ir.Module((done,))))


def _modes() -> tuple:
    """The global modes a segment's schedule depends on besides its function and settings (segcache.py's key):
    views allowed, exact division (exactdiv.py), i32 index tensors held in f32 tiles (iotas.py)."""
    from gir.passes.schedule_mlu.exactdiv import SCOPES
    from gir.passes.schedule_mlu.iotas import ACTIVE
    return _views_ok(), bool(SCOPES), tuple(sorted(ACTIVE))


def _take_split(sp, items: list, remarks, choices, views: dict) -> None:
    items.extend(sp.items)
    views.update(sp.views)   # (merged-axis views of its segments, declared on the function: segments.py)
    if remarks is not None:
        remarks.extend(sp.remarks)
    if choices is not None:
        choices.extend(sp.choices)


def _compulsory(spec: ir.Func) -> int:
    """Bytes of every input read once and every output written once (the DMA roofline's numerator)."""
    import math
    return sum(math.prod(p.type.shape) * p.type.dtype.nbytes for p in spec.params + spec.results)


def _views_ok() -> bool:
    """Whether a schedule may view the tensors with merged axes: not inside the op-by-op baseline's scheduling of
    one statement (opbyop.py), whose caller keeps only the kernels and declares the tensors as they are."""
    from gir.passes.schedule_mlu.opbyop import _ACTIVE
    from gir.passes.schedule_mlu.segments import NO_VIEWS
    return not _ACTIVE and not NO_VIEWS


def _located(node, loc):
    """`node` with every generated IR node (statements, regions, expressions) lacking a location given `loc`
    (the operator statement or function it implements), so that checker messages on generated kernels point at
    the source."""
    if loc is None or isinstance(node, (str, int, float, bool, ir.Loc)) or node is None:
        return node
    if isinstance(node, tuple):
        return tuple(_located(x, loc) for x in node)
    if not dataclasses.is_dataclass(node):
        return node
    changes = {f.name: _located(getattr(node, f.name), loc) for f in dataclasses.fields(node)
               if f.name != "loc" and (isinstance(getattr(node, f.name), tuple)
                                       or dataclasses.is_dataclass(getattr(node, f.name)))}
    if hasattr(node, "loc") and node.loc is None:
        changes["loc"] = loc
    return dataclasses.replace(node, **changes) if changes else node


def lower_module(module: ir.Module, target: str = "mlu", options: dict | None = None) -> ir.Module:
    """Every operator-layer function of `module` scheduled for the MLU (`options["sizes"]` binds every size);
    explicit functions pass through. The entry point of `gir run --target mlu-sim`."""
    sizes = dict((options or {}).get("sizes") or {})
    return ir.Module(tuple(f if f.is_explicit else schedule_mlu(f, sizes) for f in module.funcs))
