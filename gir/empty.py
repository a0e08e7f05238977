"""Zero-size dimensions: the part of a function that remains to be computed when some extents are 0.

At a binding where a size (or a literal dimension) is 0, every tensor with that extent is empty. The evaluator runs
such bindings directly (numpy; reductions over an empty range give their identity, gir/evaluate.py `identity`).
The targets run `specialize_empty(func, sizes)` instead, the same computation with the emptiness resolved:

  * a statement whose own domain is empty is dropped (its tensor has no elements);
  * a reduction over an empty range becomes its identity (sum 0, prod 1, max -inf, min +inf, mean NaN; integer
    max/min the type's smallest/largest value; boolean max/min false/true, as ONNX), and an arg-reduction over
    one is a located error (no position exists, as ONNX ArgMax);
  * sizes become constants; the remaining intermediates become results (their shapes are then declared, so a
    statement such as `s[i] = 0.0` keeps the range of `i`); parameters nobody reads any more are dropped.

A remaining statement that still reads an empty tensor (an index such as `x[i, 0]` into an extent 0) is a located
error. The caller returns the dropped results as empty arrays: `Empty.outputs(...)`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from gir import ir
from gir.errors import GirError
from gir.walk import fold_sizes, map_children


@dataclass
class Empty:
    func: ir.Func | None                   # what remains to compute (None: nothing; every result is empty)
    empty: dict[str, tuple[int, ...]]      # results with no elements: name -> shape
    dtypes: dict[str, ir.DType]

    def outputs(self, computed: dict, results: tuple[ir.Param, ...]) -> dict:
        """Every result of the original function: computed ones, and the empty ones as empty arrays."""
        out = {}
        for p in results:
            out[p.name] = computed[p.name] if p.name not in self.empty else np.empty(self.empty[p.name],
                                                                                     p.type.dtype.numpy)
        return out


def has_empty(func: ir.Func, sizes: dict[str, int]) -> bool:
    """Some parameter or result has an extent 0 at `sizes` (a size bound to 0 or a literal 0)."""
    return any((d if isinstance(d, int) else sizes.get(d, 1)) == 0
               for p in func.params + func.results for d in p.type.shape)


def specialize_empty(func: ir.Func, sizes: dict[str, int]) -> Empty:
    from gir.shapes import func_info
    from gir.walk import walk

    info = func_info(func)
    extent = {s: sizes[s] for s in func.size_symbols() if s in sizes}

    def ext(d) -> int:
        return d if isinstance(d, int) else extent[d]

    shape = {name: tuple(ext(d) for d in t.shape) for name, t in info.types.items()}
    results = {p.name for p in func.results}
    empty = {p.name: shape[p.name] for p in func.results if math.prod(shape[p.name]) == 0}
    kept: list[ir.Assign] = []
    for st in info.stmts:
        name = st.stmt.target.name
        if math.prod(shape[name]) == 0:
            continue
        value = _resolve(st, ext, info.types)
        for x in walk(value):
            if isinstance(x, ir.Ref) and math.prod(shape[x.name]) == 0:
                raise GirError(f"'{x.name}' has no elements at these sizes ({_sizes_text(func, x.name, extent)}), "
                               "but this statement reads it outside a reduction over it", x.loc)
        kept.append(dataclasses.replace(st.stmt, value=fold_sizes(value, extent),
                                        target=fold_sizes(st.stmt.target, extent)))
    live = set(results) - set(empty)   # only what a non-empty result needs (a softmax over N=0 needs nothing)
    for s in reversed(kept):
        if s.target.name in live:
            live |= {x.name for x in walk(s.value) if isinstance(x, ir.Ref)}
    kept = [s for s in kept if s.target.name in live]
    if not kept:
        return Empty(None, empty, {p.name: p.type.dtype for p in func.results})
    read = {x.name for s in kept for x in walk(s.value) if isinstance(x, ir.Ref)}
    concrete = lambda t: ir.TensorType(t.dtype, tuple(ext(d) for d in t.shape), loc=t.loc)  # noqa: E731
    params = tuple(dataclasses.replace(p, type=concrete(p.type)) for p in func.params if p.name in read)
    assigned = [s.target.name for s in kept]
    outs = tuple(dataclasses.replace(p, type=concrete(p.type)) for p in func.results if p.name in assigned)
    outs += tuple(ir.Param(n, concrete(info.types[n]), loc=func.loc) for n in assigned if n not in results)
    return Empty(dataclasses.replace(func, params=params, results=outs, body=tuple(kept)), empty,
                 {p.name: p.type.dtype for p in func.results})


def _sizes_text(func, name, extent) -> str:
    return ", ".join(f"{k}={v}" for k, v in extent.items() if v == 0) or "a literal 0 extent"


def _resolve(st, ext, types) -> ir.Expr:
    """The statement's value with each reduction over an empty range replaced by its identity."""
    from gir.kinds import KIND_BOOL, KIND_FLOAT, KindChecker
    from gir.errors import DiagnosticCollector

    class _Kinds(KindChecker):
        pass

    kinds = _Kinds()
    kinds.types, kinds.diag = types, DiagnosticCollector()
    counter = [0]

    def visit(e):
        if isinstance(e, ir.Reduce):
            n = counter[0]
            counter[0] += 1
            bound = st.reduce_vars.get(n, ())
            if any(ext(st.ranges[v]) == 0 for v in bound):
                skip(e.arg)
                if e.op in ir.ARG_REDUCTIONS:
                    raise GirError(f"{e.op}() over an empty range: the index it reduces has extent 0, so there is "
                                   "no position to give", e.loc)
                kind = kinds.expr_kind(e.arg, set(st.ranges))
                wide = any(isinstance(x, ir.Ref) and x.name in types and types[x.name].dtype == ir.DType.i64
                           for x in _walk(e.arg))
                value = _identity(e.op, kind, KIND_BOOL, KIND_FLOAT, wide)
                if isinstance(value, int) and not isinstance(value, bool) and value == -(1 << 63):
                    # -2^63 has no literal (2^63 does not fit in 64 bits): -(2^63 - 1) - 1
                    return ir.BinOp("-", ir.Const(value + 1, loc=e.loc), ir.Const(1, loc=e.loc), loc=e.loc)
                return ir.Const(value, loc=e.loc)
        return map_children(e, visit)

    def skip(e):   # keep the preorder numbering of the reductions inside a replaced one
        counter[0] += sum(1 for x in _walk(e) if isinstance(x, ir.Reduce))

    return visit(st.stmt.value)


def _walk(e):
    from gir.walk import walk
    return walk(e)


def _identity(op, kind, KIND_BOOL, KIND_FLOAT, wide: bool):
    if op == "mean":
        return float("nan")
    if op in ("sum", "prod"):
        return (0 if op == "sum" else 1) if kind != KIND_FLOAT else (0.0 if op == "sum" else 1.0)
    if kind == KIND_BOOL:
        return op == "min"
    if kind == KIND_FLOAT:
        return float("-inf") if op == "max" else float("inf")
    info = np.iinfo(np.int64 if wide else np.int32)
    return int(info.min if op == "max" else info.max)


# -- gir.compile (gir/api.py): a binding with zero-size dimensions ------------------------------------------------

def empty_program(kernel, sizes: dict[str, int]):
    """The api.Program of `kernel` at a binding with an empty dimension: what remains (if anything) compiled as
    its own Kernel with every size folded in."""
    from gir.api import Kernel, Program
    from gir.printer import print_module

    empty = specialize_empty(kernel.func, sizes)
    sub = None
    if empty.func is not None:
        sub = Kernel(print_module(ir.Module((empty.func,))), kernel.filename, empty.func, kernel.target, {},
                     kernel.options, kernel.cache, kernel.check_races)
        sub.compile_for({})
    return Program(dict(sizes), None, empty=(empty, sub))


def run_empty(kernel, program, runtime, values: dict, arrays: dict, outs, sizes) -> list:
    """The remaining kernel on the arrays it reads; every empty result is a fresh empty array (or out=)."""
    from gir.evaluate import shape_of

    empty, sub = program.empty
    computed = {}
    if sub is not None:
        got = runtime.run(sub, sub.compile_for({}), {k: values[k] for k in sub.params},
                          {k: arrays[k] for k in sub.params}, None, {})
        computed = dict(zip(sub.results, got))
    results = []
    for k, p in enumerate(kernel.func.results):
        if p.name in computed:
            r = computed[p.name]
        elif kernel.target == "cuda":   # a device array, as the inputs
            r = runtime.device.wrap(runtime.device.empty(shape_of(p.type, sizes), p.type.dtype.numpy),
                                    next(iter(values.values()), None), p.type.dtype.numpy)
        else:
            r = np.empty(shape_of(p.type, sizes), p.type.dtype.numpy)
        if outs is not None:
            given, arr = outs[k]
            if r.size:
                arr[...] = r.reshape(arr.shape)
            r = given
        results.append(r)
    return results
