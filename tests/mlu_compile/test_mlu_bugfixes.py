"""MLU-path bugs (`gir run --target mlu-sim`): integer-valued reductions in scalar kernels (a nested float
reduction got the statement's i32 accumulator), floored integer `//` / `%` in scalar kernels (C truncates), bool
results whose pipeline slots were 64 bytes apart (`__bang_float2uchar` 128-byte alignment), judged with gir.verdict
against the float64 evaluator over dtypes, axes and sizes 1, primes and non-multiples of 32."""
from __future__ import annotations

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.rounding import rounding_bound
from gir.verdict import compare
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func


def _check(text: str, sizes: dict, seed: int = 0):
    func = parse_text(text, "prog.gir").funcs[0]
    inputs = random_inputs(func, sizes, np.random.default_rng(seed))
    with np.errstate(all="ignore"):
        want = evaluate(func, inputs, compute_dtype=np.float64)
        bounds = rounding_bound(func, inputs)
        res = run_func(func, inputs, sizes)
    for r in func.results:
        v = compare(res.outputs[r.name], want[r.name], r.type.dtype, bounds.get(r.name))
        assert v.passed, f"{r.name}: {v.error:.2e} > {v.tolerance:.1e} {v.reason}\n{text}{sizes}"
    return res


SIZES = [{"M": 1, "N": 1}, {"M": 5, "N": 7}, {"M": 37, "N": 67}]


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("dtype,ydt,red,cmp", [
    ("f32", "i32", "max", "=="), ("f16", "i32", "min", "<="), ("bf16", "f32", "max", ">="),
    ("f32", "f32", "sum", ">")])
def test_integer_select_over_a_nested_reduction(sizes, dtype, ydt, red, cmp):
    """`y[i] = min(select(x[i, j] == max(x[i, k]), j, N))` (argmax written out): the nested float max took the
    i32 accumulator of the statement's target (truncated), so the compare never held. (hoist-reductions now
    computes the max into its own f32 intermediate first; the nested form is tested below.)"""
    text = (f"func f(x: {dtype}[M, N]) -> (y: {ydt}[M]) {{\n"
            f"  y[i] = min(select(x[i, j] {cmp} {red}(x[i, k]), j, N))\n}}\n")
    _check(text, sizes)


@pytest.mark.parametrize("sizes", [{"M": 1, "N": 1}, {"M": 5, "N": 7}, {"M": 9, "N": 33}])
@pytest.mark.parametrize("dtype,ydt", [("f32", "i32"), ("f16", "i32"), ("bf16", "f32")])
def test_integer_select_over_a_nested_reduction_that_stays_nested(sizes, dtype, ydt):
    """The nested reduction depends on every index it is evaluated at (i and j), so hoist-reductions leaves it
    nested: the scalar kernel still computes it in float inside the integer statement."""
    text = (f"func f(x: {dtype}[M, N]) -> (y: {ydt}[M]) {{\n"
            f"  y[i] = sum(select(x[i, j] * 0.5 > max(x[i, k] - x[i, j]), j + 1, 0))\n}}\n")
    _check(text, sizes)


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("value", [
    "max(select(x[i, j] > 0.25, i * N + j, 0 - 1))",       # integer max over two axes, negative identity
    "sum(select(x[i, j] != min(x[k, l]), N - 1 - j, 2))",  # integer sum, nested full reduction
    "min(i32(x[i, j] * 9.5))",                              # extreme of i32 casts
])
def test_integer_full_reductions(sizes, value):
    _check(f"func f(x: f32[M, N]) -> (y: i32[]) {{\n  y[] = {value}\n}}\n", sizes)


@pytest.mark.parametrize("sizes", SIZES)
def test_column_integer_select_reduction(sizes):
    _check("func f(x: f16[M, N]) -> (y: i32[N]) {\n  y[j] = max(select(x[i, j] == min(x[k, j]), i, 0 - 1))\n}\n",
           sizes)


@pytest.mark.parametrize("sizes", SIZES)
def test_float_reduction_into_an_integer_result(sizes):
    """A float sum stored to i32 is accumulated in f32 and truncated once (not accumulated in i32)."""
    _check("func f(x: f32[M, N]) -> (y: i32[M]) {\n  y[i] = i32(sum(x[i, j] * 3.0))\n}\n", sizes)


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("value", ["(i - 3 * j) // 4", "(i - 2 * j) % 3", "(i * 5 - N) // (0 - 3)",
                                   "(j * 7 - M) % (0 - 4)"])
def test_floored_integer_division_in_scalar_kernels(sizes, value):
    """`//` and `%` of negative integers floor (numpy, the evaluator); C's truncate."""
    _check(f"func f(x: f32[M, N]) -> (y: i32[M, N]) {{\n  y[i, j] = select(x[i, j] > 0.0, {value}, i - j)\n}}\n",
           sizes)


@pytest.mark.parametrize("text,sizes", [
    ("func f(x: f32[M, N]) -> (p: bool[M]) {\n  p[i] = sum(x[i, j]) > 0.0\n}\n", {"M": 4096, "N": 64}),
    ("func f(x: f32[M, N]) -> (p: bool[M]) {\n  p[i] = sum(x[i, j]) > 0.0\n}\n", {"M": 1001, "N": 37}),
    ("func f(x: f16[M, N]) -> (p: bool[M]) {\n  p[i] = max(x[i, j]) < 0.5\n}\n", {"M": 997, "N": 131}),
    ("func f(x: f32[M, N], w: f32[N]) -> (p: bool[M, N]) {\n  p[i, j] = x[i, j] > w[j]\n}\n", {"M": 1001, "N": 33}),
    ("func f(x: f32[M, N], m: bool[M, N]) -> (p: bool[M, N]) {\n  p[i, j] = m[i, j] and x[i, j] > 0.0\n}\n",
     {"M": 517, "N": 67}),
    ("func f(x: f32[M, N]) -> (p: bool[N]) {\n  p[j] = sum(x[i, j]) > 0.0\n}\n", {"M": 67, "N": 1001}),
])
def test_bool_results_of_pipelined_kernels(text, sizes):
    """Bool results of kernels with several tiles per core: a bool [R, 1] slot is 64 one-byte elements, so the
    second pipeline slot started 64 bytes in and `__bang_float2uchar` refused it (sum > 0 at 4096 x 4096)."""
    _check(text, sizes)


def test_bool_row_result_at_full_size_timing():
    """The reported program at 4096 x 4096 runs (timing-only: no values) and stays near the DMA roofline."""
    func = parse_text("func f(x: f32[M, N]) -> (p: bool[M]) {\n  p[i] = sum(x[i, j]) > 0.0\n}\n", "p.gir").funcs[0]
    res = run_func(func, None, {"M": 4096, "N": 4096}, values=False)
    assert len(res.stats["kernels"]) == 1
    roofline = (4096 * 4096 * 4 + 4096) / MLU370.gdram_bandwidth
    assert res.stats["seconds"] < 1.15 * roofline   # 1.060x measured


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("sizes", [{"A": 1, "B": 5, "C": 3}, {"A": 2, "B": 37, "C": 7}])
def test_scalar_kernels_round_float_ops_to_f32(dtype, sizes):
    """argmin over a middle axis recomputes `E == min(E)` in a scalar kernel against the vector kernel's f32 min:
    the simulated scalar C computed E in double (and `3.3f` as the double 3.3), so the compare missed."""
    _check(f"func f(x: {dtype}[A, B, C]) -> (y: i32[A, C]) {{\n"
           f"  y[a, c] = argmin(x[a, b, c] * (x[a, b, c] - 3.3))\n}}\n", sizes)


@pytest.mark.parametrize("op", ["min", "max", "sum"])
@pytest.mark.parametrize("n", [1, 37, 5000])
def test_integer_full_reductions_are_exact(op, n):
    """`r[] = min(w[p])` over i32: the combine kernel reduced the partials in f32 (values beyond 2^24 rounded) and
    padded its int tile with INFINITY (a simulator error); it now reduces i32 partials as integers (sums wrap as
    numpy's int32)."""
    text = f"func f(w: i32[N]) -> (r: i32[]) {{\n  r[] = {op}(w[p])\n}}\n"
    func = parse_text(text, "prog.gir").funcs[0]
    w = np.random.default_rng(n).integers(-2_000_000_000, 2_000_000_000, size=n).astype(np.int32) | 1
    got = run_func(func, {"w": w}, {"N": n}).outputs["r"]
    want = {"min": w.min(), "max": w.max(), "sum": w.sum(dtype=np.int32)}[op]
    assert int(got) == int(want), (op, n, int(got), int(want))


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", [1, 63, 64, 4099, 65536])
@pytest.mark.parametrize("stmt", ["t[] = sum(x[i]) + s[]", "t[] = max(x[i]) * s[]", "t[] = mean(x[i]) - s[]"])
def test_whole_reductions_with_a_scalar_input(stmt, n, dtype):
    """The combine kernel of a whole-vector reduction computed the statement's value reading `s[]` straight from
    GDRAM ("compute reads @global tensor 's' directly": refused at most sizes, a review's finding); it loads the
    scalars into NRAM first."""
    _check(f"func f(x: {dtype}[N], s: {dtype}[]) -> (t: {dtype}[]) {{\n  {stmt}\n}}\n", {"N": n}, seed=n)
