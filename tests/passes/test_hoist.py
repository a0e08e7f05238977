"""hoist-reductions (passes/builtin/hoist.py): nested reductions that do not depend on every enclosing index are
computed once, into their own intermediate; values are unchanged (evaluator, sim, mlu-sim)."""
import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.base import PassContext
from gir.passes.builtin.hoist import HoistReductions
from gir.printer import format_func
from gir.verdict import compare

PROGRAMS = {
    # a full reduction inside a full reduction: (M N)^2 work before
    "full": ("func f(x: f32[M, N]) -> (r: i32[]) {\n"
             "  r[] = sum(select(x[i, j] != min(x[k, l]), N - 1 - j, 2))\n}\n"),
    # depends on the output index only (argmax written out)
    "row": ("func f(x: f32[M, N]) -> (y: i32[M]) {\n"
            "  y[i] = min(select(x[i, j] == max(x[i, k]), j, N))\n}\n"),
    # depends on an enclosing reduction's index (j) but not on the other (i)
    "enclosing": ("func f(x: f32[M, N]) -> (r: f32[]) {\n"
                  "  r[] = sum(x[i, j] * max(x[k, j]))\n}\n"),
    # three levels; the same text once nested (binds k only) and once at the top (binds k and j)
    "levels": ("func f(x: f32[M, N], w: f32[N]) -> (r: f32[M], s: f32[M]) {\n"
               "  r[i] = sum(x[i, j] - max(x[m, j]) * max(w[k] * sum(x[p, k]))) + max(x[m, j])\n"
               "  s[i] = mean(x[i, j] * min(x[k, j]))\n}\n"),
    # f64 statement: the hoisted float reduction accumulates in f64
    "f64": ("func f(x: f32[M, N]) -> (r: f64[]) {\n"
            "  r[] = sum(f64(x[i, j]) - sum(x[k, l]))\n}\n"),
}


def _hoist(text: str) -> ir.Module:
    return HoistReductions().apply(PassContext(), parse_text(text))


def _text(text: str) -> str:
    return format_func(_hoist(text).funcs[0])


def test_full_and_row_examples_print_as_documented():
    out = _text(PROGRAMS["full"])
    assert "r_min0[] = min(x[k, l])" in out and "!= r_min0[]" in out
    out = _text(PROGRAMS["row"])
    assert "y_max0[i] = max(x[i, k])" in out and "== y_max0[i]" in out


def test_index_of_an_enclosing_reduction_is_kept():
    out = _text(PROGRAMS["enclosing"])
    assert "r_max0[j] = max(x[k, j])" in out and "x[i, j] * r_max0[j]" in out
    out = _text(PROGRAMS["levels"])   # the nested max(x[m, j]) varies with j only; the top-level one with nothing
    assert "r_max0[j] = max(x[m, j])" in out and "r_max2[] = max(x[m, j])" in out and "+ r_max2[]" in out
    assert "r_max1[] = max(w[k] * sum(x[p, k]))" in out and "s_min0[j] = min(x[k, j])" in out


def test_broadcast_statistic_is_hoisted():
    # computed once per row instead of once per element (10x the compulsory traffic on sim, a scalar MLU kernel)
    out = _text("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = exp(x[i, j] - max(x[i, k]))\n}\n")
    assert "y_max0[i] = max(x[i, k])" in out and "exp(x[i, j] - y_max0[i])" in out


def test_whole_value_and_dependent_reductions_stay():
    text = "func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = max(x[i, k])\n}\n"
    assert _hoist(text) == parse_text(text)
    dep = "func f(x: f32[N, N]) -> (r: f32[]) {\n  r[] = sum(x[i, j] - max(x[i, k] * x[k, j]))\n}\n"  # needs i and j
    assert _hoist(dep) == parse_text(dep)


@pytest.mark.parametrize("text", [
    # j gets its range from x[i, j] outside the nested max only: alone, the hoisted statement would have none
    "func f(x: f32[M, N], z: f32[K]) -> (r: f32[M]) {\n  r[i] = sum(x[i, j] * max(select(k > j, z[k], 0.0)))\n}\n",
    # inside a select branch: the guard keeps z[j + 1] in bounds (and unevaluated where it would not be)
    "func f(x: f32[M, J], y: f32[J, K], z: f32[J]) -> (r: f32[M]) {\n"
    "  r[i] = sum(select(j < J - 1, x[i, j] * max(y[j, k] * z[j + 1]), 0.0))\n}\n"])
def test_left_nested_when_hoisting_would_change_its_meaning(text):
    assert _hoist(text) == parse_text(text)


@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_views_hoisted_and_run(target):
    """A function over a reshape view: the hoisted intermediate is a second statement over the view, which the
    MLU tile recipe merges (`[N, 4, C / 4, H * W]` -> `[8, 30]`); both statements run, called with the declared
    shape."""
    import gir
    text = ("func f(x: f32[N, C, H, W] as [N, 4, C / 4, H * W]) -> (y: f32[N, 4]) {\n"
            "  y[n, g] = sum(x[n, g, c, s] - max(x[n, g, c2, s2]))\n}\n")
    assert "y_max0[n, g] = max(x[n, g, c2, s2])" in _text(text)
    x = np.random.default_rng(6).standard_normal((2, 8, 3, 5)).astype(np.float32)
    got = gir.compile(text, target=target, sizes={"N": 2, "C": 8, "H": 3, "W": 5}, cache=False)(x=x)
    v = x.reshape(2, 4, 2, 15).astype(np.float64)
    want = (v - v.max(axis=(2, 3), keepdims=True)).sum(axis=(2, 3))
    assert compare(np.asarray(got), want, ir.DType.f32).passed


def test_fresh_names_avoid_index_variables():
    text = "func f(x: f32[M, N]) -> (r: f32[M, N]) {\n  r[i, r_max0] = sum(x[i, j] * max(x[k, j]))\n}\n"
    out = _text(text)
    assert "r_max1[j] = max(x[k, j])" in out


def test_f64_arithmetic_with_an_f32_result_keeps_f64_accumulation():
    text = "func f(x: f64[M, N], z: f32[N]) -> (r: f32[M]) {\n  r[i] = f32(sum(x[i, j] - sum(z[k])))\n}\n"
    assert "= sum(f64(z[k]))" in _text(text)


def test_fresh_names_do_not_clash():
    text = ("func f(x: f32[M, N]) -> (r: f32[], r_min0: f32[]) {\n  r_min0[] = sum(x[i, j])\n"
            "  r[] = sum(x[i, j] - min(x[k, l]))\n}\n")
    out = _text(text)
    assert "r_min1[] = min(x[k, l])" in out


def test_f64_statements_keep_f64_accumulation():
    out = _text(PROGRAMS["f64"])
    assert "= sum(f64(x[k, l]))" in out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("sizes", [{"M": 1, "N": 1}, {"M": 5, "N": 7}, {"M": 13, "N": 33}])
def test_values_unchanged_by_the_evaluator(name, sizes):
    before = parse_text(PROGRAMS[name]).funcs[0]
    after = _hoist(PROGRAMS[name]).funcs[0]
    assert after != before
    inputs = random_inputs(before, sizes, np.random.default_rng(3))
    want, got = evaluate(before, inputs, sizes), evaluate(after, inputs, sizes)
    for p in before.results:
        v = compare(got[p.name], want[p.name], p.type.dtype)
        assert v.passed, (name, p.name, v.reason)


@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
@pytest.mark.parametrize("name", ["full", "row", "enclosing"])
def test_targets_compute_the_hoisted_program(target, name):
    """The compile pipeline starts with hoist-reductions: nested programs run in linear work on every target."""
    import gir
    f = parse_text(PROGRAMS[name]).funcs[0]
    sizes = {"M": 37, "N": 67}
    inputs = random_inputs(f, sizes, np.random.default_rng(4))
    want = evaluate(f, inputs, sizes)
    k = gir.compile(PROGRAMS[name], target=target, sizes=sizes, cache=False)
    got = k(**inputs)
    got = got if isinstance(got, tuple) else (got,)
    for p, g in zip(f.results, got):
        v = compare(np.asarray(g), want[p.name], p.type.dtype)
        assert v.passed, (name, target, p.name, v.reason)


INLINE = {   # statistics written inside the element-wise statement that broadcasts them
    "softmax": "func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  e[i, j] = exp(x[i, j] - max(x[i, k]))\n"
               "  y[i, j] = e[i, j] / sum(e[i, k])\n}\n",
    "col_center": "func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] - mean(x[k, j])\n}\n",
    "mid_axis": "func f(x: f32[A, M, N]) -> (y: f32[A, M, N]) {\n  y[a, i, j] = x[a, i, j] / sum(exp(x[a, k, j]))\n}\n",
}


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_statistics_move_compulsory_bytes_on_sim(name):
    # before: recomputed per element, 10x the compulsory bytes (sim) and scalar MLU kernels
    from gir.passes.analysis.traffic import compulsory_bytes
    from gir.passes.schedule import lower_func
    from gir.targets.sim import run_func
    f = parse_text(INLINE[name]).funcs[0]   # (whole 32-byte sectors per row: a 257-column row moves 1.24x alone)
    sizes = {s: v for s, v in {"A": 3, "M": 130, "N": 512}.items() if s in f.size_symbols()}
    inputs = random_inputs(f, sizes, np.random.default_rng(5))
    res = run_func(lower_func(f, "sim", {"sizes": sizes}), inputs, sizes, check_races=False)
    read, written = compulsory_bytes(f, sizes)
    assert res.stats.global_bytes <= 1.1 * (read + written)
    want = evaluate(f, inputs, sizes)
    assert compare(np.asarray(res.outputs["y"]), want["y"], ir.DType.f32).passed


@pytest.mark.parametrize("name", sorted(INLINE))
def test_inline_statistics_are_vector_kernels_on_the_mlu(name):
    from gir.targets.mlu.run import run_func
    f = parse_text(INLINE[name]).funcs[0]
    sizes = {s: v for s, v in {"A": 3, "M": 130, "N": 257}.items() if s in f.size_symbols()}
    inputs = random_inputs(f, sizes, np.random.default_rng(5))
    res = run_func(f, inputs, sizes)
    assert not [r for r in res.remarks if "scalar" in r.message]
    assert compare(np.asarray(res.outputs["y"]), evaluate(f, inputs, sizes)["y"], ir.DType.f32).passed
