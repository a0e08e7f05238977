"""Golden checks of the built-in passes: what each rewrites, what it must leave alone, and that every
rewrite keeps the program's meaning (reference evaluator, float64, random inputs)."""
from __future__ import annotations

import pytest

import gir
from conftest import assert_same_semantics
from gir.verifier import verify_module
from gir.passes.base import PassContext
from gir.passes.builtin.canonicalize import Canonicalize
from gir.passes.builtin.cse import CommonSubexpressionElimination
from gir.passes.builtin.dce import DeadCodeElimination
from gir.passes.builtin.inline import InlineElementwise

HEADER = "func f(x: f32[M, N], a: f32[N], k: i32[M, N], m: bool[M, N]) -> ({results}) {{\n{body}\n}}\n"
SIZES = {"M": 3, "N": 5}


def _module(body: str, results: str = "y: f32[M, N]"):
    return gir.parse_text(HEADER.format(results=results, body=body), "t.gir")


def _apply(pass_, body: str, results: str = "y: f32[M, N]") -> list[str]:
    """Run one pass on a small program; return the rewritten body lines, after checking the result verifies
    and evaluates like the input."""
    module = _module(body, results)
    out = pass_.apply(PassContext(), module)
    verify_module(out)
    assert_same_semantics(module.funcs[0], out.funcs[0], sizes=SIZES)
    return [line.strip() for line in gir.print_module(out).splitlines()[1:-1]]


@pytest.mark.parametrize("value, expected", [
    ("x[i, j] * (2.0 * 3.0 - 1.0)", "x[i, j] * 5.0"),
    ("x[i, j] * 1.0 + 0.0", "x[i, j]"),
    ("1 * x[i, j] - 0", "x[i, j]"),
    ("0.0 + x[i, j] / 1.0", "x[i, j]"),
    ("-(-x[i, j])", "x[i, j]"),
    ("neg(neg(x[i, j]))", "x[i, j]"),
    ("x[i, j] * exp(0.0)", "x[i, j]"),
    ("x[i, j] + f32(k[i, j] * (2 + 3))", "x[i, j] + f32(k[i, j] * 5)"),
    ("x[i, j] * (2 * 0.25)", "x[i, j] * 0.5"),
    ("x[i, j] + 1 / 4", "x[i, j] + 0.25"),
    ("select(1.0 < 2.0, x[i, j], 0.0)", "x[i, j]"),
    ("select(not true, 2.0, x[i, j] - -(1.0))", "x[i, j] + 1.0"),
    ("select(true and false, 1.0, x[i, j]) + max(2.0, -3.0)", "x[i, j] + 2.0"),
    ("x[i, j] * sqrt(4.0) + min(1, 2)", "x[i, j] * 2.0 + 1"),
    ("sum(x[i, c] * 1.0) + a[j]", "sum(x[i, c]) + a[j]"),
])
def test_canonicalize_rewrites(value, expected):
    assert _apply(Canonicalize(), f"y[i, j] = {value}") == [f"y[i, j] = {expected}"]


@pytest.mark.parametrize("value", [
    "x[i, j] * f32(k[i, j] * 1.0)",        # k * 1.0 is a float: dropping 1.0 would make it an int
    "x[i, j] + 1.0 / 0.0",                 # not finite
    "x[i, j] + log(-1.0)",                 # nan
    "x[i, j] + exp(1000.0)",               # overflow
    "x[i, j] * 2.0 * 3.0",                 # (x * 2) * 3: no reassociation
    "x[i, j] * 0.0",                       # 0 * inf is nan: not an identity
    "0.0 - x[i, j]",
    "select(false, x[i, j], 1.0) + x[i, j]",  # dropping x's index uses could change ranges: kept
    "f32(k[i, j] * (2147483647 + 1))",     # would overflow i32
    "f32(k[i, j] // 2 % 3)",
])
def test_canonicalize_leaves_alone(value):
    assert _apply(Canonicalize(), f"y[i, j] = {value}") == [f"y[i, j] = {gir.print_module(_module(f'y[i, j] = {value}')).splitlines()[1].split(' = ', 1)[1]}"]


def test_dce_removes_dead_chains_only():
    body = """  u[i, j] = exp(x[i, j])
  v[i] = sum(u[i, j])
  w[i, j] = x[i, j] * 2.0
  y[i, j] = w[i, j] + a[j]
  z[i] = max(x[i, j])"""
    assert _apply(DeadCodeElimination(), body, "y: f32[M, N], z: f32[M]") == [
        "w[i, j] = x[i, j] * 2.0", "y[i, j] = w[i, j] + a[j]", "z[i] = max(x[i, j])"]


def test_cse_merges_up_to_index_renaming():
    body = """  p[i, j] = exp(x[i, j] - a[j])
  q[r, s] = exp(x[r, s] - a[s])
  s1[i] = sum(x[i, j])
  s2[u] = sum(x[u, v])
  t[j] = sum(x[i, j])
  y[i, j] = p[i, j] + q[i, j] + s1[i] + s2[i] + t[j]"""
    assert _apply(CommonSubexpressionElimination(), body) == [
        "p[i, j] = exp(x[i, j] - a[j])", "s1[i] = sum(x[i, j])", "t[j] = sum(x[i, j])",
        "y[i, j] = p[i, j] + p[i, j] + s1[i] + s1[i] + t[j]"]


def test_cse_keeps_results_and_transposes():
    body = """  p[i, j] = x[i, j] * 2.0
  y[i, j] = x[i, j] * 2.0
  q[j, i] = x[i, j] * 2.0
  z[i, j] = p[i, j] + q[j, i]"""
    lines = _apply(CommonSubexpressionElimination(), body, "y: f32[M, N], z: f32[M, N]")
    assert lines == body.replace("  ", "").splitlines()


def test_inline_single_use():
    body = """  t[i, j] = x[i, j] * a[j]
  u[p, q] = t[p, q] + 1.0
  y[i, j] = u[i, j] * 2.0"""
    assert _apply(InlineElementwise(), body) == ["y[i, j] = (x[i, j] * a[j] + 1.0) * 2.0"]


def test_inline_into_reductions_transposes_and_broadcasts():
    body = """  e[i, j] = exp(x[i, j])
  s[i] = sum(e[i, j])
  b[j] = a[j] * a[j]
  tr[j, i] = x[i, j] - 1.0
  y[i, j] = x[i, j] / s[i] + b[j] + tr[j, i]"""
    assert _apply(InlineElementwise(), body) == [
        "s[i] = sum(exp(x[i, j]))", "y[i, j] = x[i, j] / s[i] + a[j] * a[j] + (x[i, j] - 1.0)"]


def test_inline_respects_max_uses_and_limits():
    body = """  e[i, j] = exp(x[i, j])
  r[i] = max(x[i, j])
  w[i, j] = x[i, j] + 1.0
  s[i] = sum(e[i, j])
  y[i, j] = e[i, j] / s[i] + r[i] + w[i, N - 1 - j]"""
    kept = ["e[i, j] = exp(x[i, j])", "r[i] = max(x[i, j])", "w[i, j] = x[i, j] + 1.0"]
    rest = ["s[i] = sum(e[i, j])", "y[i, j] = e[i, j] / s[i] + r[i] + w[i, N - 1 - j]"]
    assert _apply(InlineElementwise(), body) == kept + rest  # two uses, a reduction, an offset index
    assert _apply(InlineElementwise(max_uses=2), body) == kept[1:] + [
        "s[i] = sum(exp(x[i, j]))", "y[i, j] = exp(x[i, j]) / s[i] + r[i] + w[i, N - 1 - j]"]


def test_inline_never_inlines_results_or_diagonals():
    body = """  sq[i, j] = x[i, j] * x[i, j]
  y[i, j] = sq[i, j] + 1.0
  z[i] = sq[i, i]"""
    module = gir.parse_text("func g(x: f32[M, M]) -> (y: f32[M, M], z: f32[M]) {\n" + body + "\n}\n")
    out = InlineElementwise(max_uses=5).apply(PassContext(), module)
    assert out == module


@pytest.mark.parametrize("pass_", [Canonicalize(), DeadCodeElimination(), CommonSubexpressionElimination(),
                                   InlineElementwise(), InlineElementwise(max_uses=3)], ids=str)
def test_unchanged_functions_keep_identity(pass_):
    module = gir.parse_text("func g(x: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i]\n}\n")
    assert pass_.apply(PassContext(), module) == module


def test_canonicalize_keeps_an_offset_index_that_does_not_bind_a_range():
    """`x[i + 0]` reads a prefix of a longer x; `x[i]` would make i range over all of x (found by the ONNX
    importer on Slice)."""
    module = gir.parse_text("func f(x: f32[20]) -> (y: f32[3]) {\n  y[i] = x[i + 0] * 1.0\n}\n", "t.gir")
    out = Canonicalize().apply(PassContext(), module)
    verify_module(out)
    assert gir.print_module(out) == "func f(x: f32[20]) -> (y: f32[3]) {\n  y[i] = x[i + 0]\n}\n"
