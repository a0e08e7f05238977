"""Every built-in pass (and the default pipeline) keeps the meaning of every sample program, and the
canonicalizer keeps the meaning of random expressions."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gir
from conftest import SAMPLES, assert_same_semantics
from gir import ir
from gir.scan import is_scan
from gir.verifier import verify_module
from gir.passes.base import PassContext
from gir.passes.builtin.exprs import refs, rename_refs
from gir.passes.manager import PassManager
from gir.passes.pipeline import DEFAULT_PIPELINE

PIPELINES = ["canonicalize", "dce", "cse", "inline-elementwise", "inline-elementwise{max_uses=4}", DEFAULT_PIPELINE]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_samples_keep_their_meaning(path, pipeline):
    module = gir.parse_file(path)
    out = PassManager(pipeline).run(module, PassContext(filename=str(path)))
    for before, after in zip(module.funcs, out.funcs):
        assert_same_semantics(before, after, seed=len(before.name))
    again = PassManager(pipeline).run(out)
    if "inline-elementwise{max_uses=4}" not in pipeline:  # more inlining can expose more work
        assert again == out, f"{pipeline} is not idempotent on {path.name}"


def test_the_passes_do_something_on_the_samples():
    changed = {p: 0 for p in PIPELINES}
    for path in SAMPLES:
        module = gir.parse_file(path)
        for p in PIPELINES:
            changed[p] += PassManager(p).run(module) != module
    assert changed["inline-elementwise"] >= 2 and changed[DEFAULT_PIPELINE] >= 2
    assert changed["inline-elementwise{max_uses=4}"] >= 9


def _pollute(func: ir.Func) -> ir.Func:
    """Add work for canonicalize, cse and dce: a renamed duplicate of every intermediate (read by its last
    reader), a dead variant of it, `* (2.0 - 1.0) + 0.0` around every float result and a dead copy of every other
    result."""
    results = {r.name: r for r in func.results}
    body = list(func.body)
    for stmt in func.body:
        name = stmt.target.name
        if name in results:
            continue
        readers = [k for k, s in enumerate(body) if any(r.name == name for r in refs(s.value))]
        if not readers:
            continue
        k = readers[-1]
        body[k] = dataclasses.replace(body[k], value=rename_refs(body[k].value, {name: name + "_dup"}))
        at = next(k for k, s in enumerate(body) if s.target.name == name)
        stmt = body[at]
        at += 1
        dup = dataclasses.replace(stmt, target=dataclasses.replace(stmt.target, name=name + "_dup"))
        dead = ir.Assign(dataclasses.replace(stmt.target, name=name + "_dead"), ir.UnOp("-", stmt.value))
        body[at:at] = [dup, dead]
    for k, s in reversed(list(enumerate(body))):
        if s.target.name not in results:
            continue
        if results[s.target.name].type.dtype.is_float and not is_scan(s.value):
            one = ir.BinOp("-", ir.Const(2.0), ir.Const(1.0))
            body[k] = dataclasses.replace(s, value=ir.BinOp("+", ir.BinOp("*", s.value, one), ir.Const(0.0)))
        else:  # integer, boolean and scan results (a scan is its statement's whole right-hand side): a dead copy
            body.insert(k + 1, dataclasses.replace(s, target=dataclasses.replace(s.target, name=s.target.name + "_dead")))
    return dataclasses.replace(func, body=tuple(body))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_cleanup_passes_undo_pollution(path):
    module = gir.parse_file(path)
    polluted = ir.Module(tuple(_pollute(f) for f in module.funcs))
    verify_module(polluted)
    assert polluted != module
    out = PassManager("canonicalize,cse,dce").run(polluted)
    assert out == module, gir.print_module(out)
    assert_same_semantics(polluted.funcs[0], out.funcs[0], seed=3)


# ------------------------------------------------------------------ random expressions for canonicalize
LEAVES = [ir.Ref("x", (ir.Var("i"), ir.Var("j"))), ir.Ref("a", (ir.Var("j"),)),
          ir.Ref("k", (ir.Var("i"), ir.Var("j"))), ir.Var("j")]
constants = st.one_of(st.integers(-3, 3), st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.0, -0.25, 3.0])).map(ir.Const)


def _expressions():
    leaf = st.one_of(st.sampled_from(LEAVES), constants)

    def extend(children):
        return st.one_of(
            st.builds(ir.BinOp, st.sampled_from(["+", "-", "*", "/"]), children, children),
            st.builds(ir.UnOp, st.just("-"), children),
            st.builds(lambda f, x: ir.Call(f, (x,)), st.sampled_from(["neg", "abs", "tanh", "f32"]), children),
            st.builds(lambda f, x, y: ir.Call(f, (x, y)), st.sampled_from(["max", "min"]), children, children),
            st.builds(lambda op, x, y, t, f: ir.Call("select", (ir.BinOp(op, x, y), t, f)),
                      st.sampled_from(["<", "=="]), children, children, children, children),
        )
    return st.recursive(leaf, extend, max_leaves=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_expressions())
def test_canonicalize_keeps_random_expressions(value):
    func = ir.Func("f", (ir.Param("x", ir.TensorType(ir.DType.f32, ("M", "N"))),
                         ir.Param("a", ir.TensorType(ir.DType.f32, ("N",))),
                         ir.Param("k", ir.TensorType(ir.DType.i32, ("M", "N")))),
                   (ir.Param("y", ir.TensorType(ir.DType.f32, ("M", "N"))),),
                   (ir.Assign(ir.Ref("y", (ir.Var("i"), ir.Var("j"))), ir.Call("f32", (value,))),))
    module = ir.Module((func,))
    try:
        verify_module(module)
    except gir.GirError:
        return  # e.g. a select with mismatched branch kinds: not a valid program
    out = PassManager("canonicalize").run(module)
    assert_same_semantics(func, out.funcs[0], sizes={"M": 2, "N": 3})
    assert gir.parse_text(gir.print_module(out)) == out
