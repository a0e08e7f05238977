"""Hypothesis strategies for random, syntactically valid GIR IR of both layers.

The programs need not verify: round-tripping is about syntax, so every node kind and
operator appears, with the corner cases of the printer (negative literals, `-(1.0)`,
infinities, precedence and associativity, empty index lists, slices with steps).
"""
from __future__ import annotations

from hypothesis import strategies as st

from gir import ir
from gir.shapes import KNOWN_FUNCS

KEYWORDS = {"func", "kernel", "alloc", "load", "store", "copy", "allreduce", "over", "chain", "via", "sync", "parallel",
            "in", "step", "for", "if", "else", "with", "or", "and", "not", "inf", "nan", "true", "false"}
BINOPS = ("+", "-", "*", "/", "//", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or")

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,4}", fullmatch=True).filter(lambda s: s not in KEYWORDS)
small_ints = st.integers(min_value=-1000, max_value=10**12)
floats = st.floats(allow_nan=False, allow_infinity=True)  # nan != nan would break equality
consts = st.one_of(small_ints, floats, st.booleans()).map(ir.Const)
variables = names.map(ir.Var)


_FUNCS = sorted(KNOWN_FUNCS) + ["cdiv"]


@st.composite
def _call(draw, children):
    fn = draw(st.sampled_from(_FUNCS))
    arity = 2 if fn in ("max", "min", "cdiv") else KNOWN_FUNCS[fn]  # max(x) alone is a reduction
    return ir.Call(fn, tuple(draw(children) for _ in range(arity)))


@st.composite
def _slice(draw, children):
    return ir.Slice(draw(children), draw(children), draw(st.integers(1, 8)))


def _extend(children):
    index = st.one_of(children, _slice(children))
    axes = st.one_of(st.none(), st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple))
    return st.one_of(
        st.builds(ir.BinOp, st.sampled_from(BINOPS), children, children),
        st.builds(ir.UnOp, st.sampled_from(["-", "not"]), children),
        st.builds(ir.Ref, names, st.lists(index, max_size=3).map(tuple)),
        _call(children),
        st.builds(ir.Reduce, st.sampled_from(ir.REDUCTIONS), children, axes),
    )


exprs = st.recursive(st.one_of(consts, variables), _extend, max_leaves=10)

# affine index expressions: what real programs use in indices and bounds
affine = st.recursive(
    st.one_of(names.map(ir.Var), st.integers(0, 64).map(ir.Const)),
    lambda c: st.one_of(st.builds(ir.BinOp, st.sampled_from(["+", "-"]), c, c),
                        st.builds(ir.BinOp, st.just("*"), st.integers(1, 8).map(ir.Const), c),
                        st.builds(ir.BinOp, st.sampled_from(["//", "%"]), c, st.integers(1, 8).map(ir.Const))),
    max_leaves=4)
indices = st.one_of(affine, st.builds(ir.Slice, affine, affine, st.integers(1, 4)))
refs = st.builds(ir.Ref, names, st.lists(indices, max_size=3).map(tuple))
any_refs = st.builds(ir.Ref, names, st.lists(st.one_of(exprs, _slice(exprs)), max_size=3).map(tuple))

dims = st.one_of(st.integers(0, 4096), names)
ttypes = st.builds(ir.TensorType, st.sampled_from(list(ir.DType)), st.lists(dims, max_size=3).map(tuple))
assigns = st.builds(ir.Assign, st.one_of(refs, any_refs), exprs)
allocs = st.builds(ir.Alloc, names, ttypes, st.sampled_from(list(ir.Level)))
others = st.one_of(st.none(), floats)
moves = st.builds(ir.Move, st.sampled_from(["load", "store", "copy"]), refs, refs,
                  st.sampled_from([1, 2, 4, 8, 16]), st.booleans(), others)
xreduces = st.builds(ir.XReduce, st.sampled_from(["sum", "max", "min", "prod"]), refs, names,
                     st.one_of(st.none(), st.sampled_from([2, 4, 8, 16, 32])))
chains = st.builds(ir.Chain, st.sampled_from(["sum", "max", "min", "prod"]), refs, refs, names, refs)
syncs = st.builds(ir.Sync, st.sampled_from(list(ir.ParLevel)))
simple_stmts = st.one_of(assigns, allocs, moves, xreduces, chains, syncs)


def _nest(body):
    block = st.lists(body, max_size=3).map(tuple)
    return st.one_of(
        st.builds(ir.Parallel, names, affine, affine, st.sampled_from(list(ir.ParLevel)), block),
        st.builds(ir.For, names, affine, affine, block, st.integers(1, 4)),
        st.builds(ir.If, exprs, block, block),
    )


stmts = st.recursive(simple_stmts, _nest, max_leaves=8)
attr_values = st.one_of(st.integers(0, 1024).map(str), names.filter(lambda s: s not in ("inf", "nan")),
                        st.sampled_from(["true", "false", "inf", "-inf", "-3"]))
kernels = st.builds(ir.Kernel, names, st.lists(stmts, min_size=1, max_size=3).map(tuple),
                    st.lists(st.tuples(names, attr_values), max_size=2, unique_by=lambda kv: kv[0]).map(tuple))
params = st.builds(ir.Param, names, ttypes)
funcs = st.builds(ir.Func, names, st.lists(params, max_size=3).map(tuple), st.lists(params, max_size=2).map(tuple),
                  st.lists(st.one_of(assigns, allocs, kernels), max_size=4).map(tuple))
modules = st.builds(ir.Module, st.lists(funcs, min_size=1, max_size=2).map(tuple))

