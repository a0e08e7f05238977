"""Few long rows on the MLU (passes/schedule_mlu/splitrows.py, the `split-rows` recipe): each row cut into parts
over the cores, the parts kept in NRAM while the cores combine their partial statistics through GDRAM across
`sync @all`. Hand-written cases (the recipe chosen where the row recipes leave cores idle; left to the others where
it does not apply), the decoding-step shapes that motivated it, and seeded random row programs with few rows
(f32/f16/bf16, row / column / scalar operands, sizes 1 / primes / tails) against the evaluator."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gir.parser import parse_file, parse_text
from gir.passes.middle import run_default
from gir.passes.schedule_mlu.rowmodel import NotRowModel, analyze_rows
from gir.passes.schedule_mlu.schedule import specialize
from gir.passes.schedule_mlu.splitrows import split_rows_items

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "differential"))
from diffrun import check_text  # noqa: E402

SOFTMAX = (REPO / "samples" / "softmax.gir").read_text()


def _recipe(text: str, sizes: dict) -> str:
    _, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
    lines = [r.message for r in ctx.remarks if r.kind == "analysis" and "MLU recipe" in r.message]
    return lines[0].split("MLU recipe '")[1].split("'")[0] if lines else ""


@pytest.mark.parametrize("m,n", [(1, 128256), (8, 128256), (3, 20011), (16, 65536)])
def test_few_long_rows_are_split(m, n):
    assert _recipe(SOFTMAX, {"M": m, "N": n}) == "split-rows"


@pytest.mark.parametrize("m,n", [(4096, 4096), (64, 32000), (1, 40)])
def test_rows_enough_or_too_short(m, n):
    assert _recipe(SOFTMAX, {"M": m, "N": n}) != "split-rows"


def test_refused_shapes():
    f = specialize(parse_text(SOFTMAX).funcs[0], {"M": 17, "N": 4096})
    with pytest.raises(NotRowModel, match="enough"):
        split_rows_items(analyze_rows(f, {}), "k")
    f = specialize(parse_text(SOFTMAX).funcs[0], {"M": 4, "N": 64})
    with pytest.raises(NotRowModel, match="one part"):
        split_rows_items(analyze_rows(f, {}), "k")


def test_kernel_shape():
    """Two passes (max, then the sum): two barriers, one partial buffer per statistic, the input loaded once."""
    f = specialize(parse_text(SOFTMAX).funcs[0], {"M": 2, "N": 10000})
    items = split_rows_items(analyze_rows(f, {}), "softmax_mlu")
    from gir.printer import format_func
    import dataclasses
    text = format_func(dataclasses.replace(f, body=tuple(items)))
    assert text.count("sync @all") == 2 and text.count("@gdram") == 2
    assert text.count("load x_t") == 1 and text.count("load x_l") == 1   # (a last part of its own width)


@pytest.mark.parametrize("sample,sizes", [
    ("softmax", {"M": 3, "N": 20011}), ("layernorm", {"M": 5, "N": 9001}), ("rmsnorm", {"M": 2, "N": 30011}),
    ("log_softmax", {"M": 7, "N": 4099}), ("row_sum", {"M": 1, "N": 65537}), ("softmax_f16", {"M": 4, "N": 8191}),
    ("rmsnorm_bf16", {"M": 3, "N": 6007}), ("argreduce", {"M": 2, "N": 12289}), ("l2_normalize", {"M": 9, "N": 3001}),
])
def test_samples_with_few_long_rows(sample, sizes):
    text = (REPO / "samples" / f"{sample}.gir").read_text()
    f = parse_file(str(REPO / "samples" / f"{sample}.gir")).funcs[0]
    sizes = {k: v for k, v in sizes.items() if k in f.size_symbols()}
    assert check_text(text, sizes, seed=3, targets=("mlu-sim",)) == {}


def _row_program(rng) -> str:
    dt = str(rng.choice(["f32", "f16", "bf16"]))
    red = str(rng.choice(["sum", "max", "min", "mean"]))
    unary = str(rng.choice(["exp({})", "abs({})", "({}) * 0.5", "sigmoid({})", "max({}, 0.0)", "tanh({})"]))
    e = unary.format("x[i, j]")
    kind = int(rng.integers(4))
    if kind == 0:   # a statistic and its broadcast, a column operand
        body = [f"  s[i] = {red}({e} * w[j])", "  y[i, j] = x[i, j] * w[j] - s[i] * c[]"]
    elif kind == 1:   # two dependent statistics (a normalisation)
        body = ["  mu[i] = mean(x[i, j])", "  d[i, j] = x[i, j] - mu[i]", "  v[i] = mean(d[i, j] * d[i, j])",
                f"  y[i, j] = d[i, j] / sqrt(v[i] + 1e-05) * w[j] + {e} * 0.0"]
    elif kind == 2:   # a softmax with a row operand
        body = ["  m[i] = max(x[i, j] + r[i])", "  t[i, j] = exp(x[i, j] + r[i] - m[i])", "  s[i] = sum(t[i, j])",
                "  y[i, j] = t[i, j] / s[i]"]
    else:   # an arg-reduction of an expression, as a float
        body = [f"  a[i] = argmax({e} - w[j])", "  y[i, j] = x[i, j] + f32(a[i]) * 0.001"]
    return (f"func f(x: {dt}[M, N], w: {dt}[N], r: f32[M], c: f32[]) -> (y: {dt}[M, N]) {{\n"
            + "\n".join(body) + "\n}\n")


def test_random_row_programs_with_few_rows():
    rng = np.random.default_rng(1131)
    for k in range(24):
        text = _row_program(rng)
        sizes = {"M": int(rng.choice([1, 2, 3, 5, 8, 11, 16])), "N": int(rng.choice([97, 1031, 4099, 12289, 20000]))}
        assert check_text(text, sizes, seed=k, targets=("mlu-sim",)) == {}, (text, sizes)


WHOLE_SOFTMAX = ("func f(x: f32[A, B]) -> (y: f32[A, B]) {\n  m[] = max(x[i, j])\n  e[i, j] = exp(x[i, j] - m[])\n"
                 "  s[] = sum(e[i, j])\n  y[i, j] = e[i, j] / s[]\n}\n")


def test_whole_tensor_statistics_as_one_row():
    """A softmax over a whole tensor (split_flat.py `one_row`: [A, B] as [1, A * B], the scalars as the row's
    statistics) is one split-rows kernel; with in-place vectors one [W] vector per part holds x, e and y, so 4M
    floats fit (it ran as five kernels, 2.7x the roofline)."""
    assert _recipe(WHOLE_SOFTMAX, {"A": 4, "B": 1 << 20}) == "split-rows"
    out, _ = run_default(parse_text(WHOLE_SOFTMAX), "mlu-sim", {"sizes": {"A": 4, "B": 1 << 20}})
    f = out.funcs[0]
    assert len(f.kernels) == 1 and f.params[0].type.shape == (1, 1 << 22)
    for sizes in ({"A": 4, "B": 4099}, {"A": 1, "B": 70001}, {"A": 33, "B": 1000}):
        assert check_text(WHOLE_SOFTMAX, sizes, seed=4, targets=("mlu-sim",)) == {}


def _whole_program(rng) -> tuple[str, dict]:
    dt = str(rng.choice(["f32", "f16", "bf16"]))
    rank = int(rng.integers(1, 4))
    names = ["A", "B", "C"][:rank]
    iv = ", ".join("ijk"[:rank])
    red = str(rng.choice(["sum", "max", "min", "mean"]))
    e = str(rng.choice(["exp({})", "abs({})", "({}) * 0.5", "tanh({})"])).format(f"x[{iv}]")
    if rng.integers(2):
        body = [f"  s[] = {red}({e} * w[{iv}])", f"  y[{iv}] = x[{iv}] * w[{iv}] - s[] * c[]"]
    else:
        body = [f"  mu[] = mean(x[{iv}])", f"  d[{iv}] = x[{iv}] - mu[]", f"  v[] = mean(d[{iv}] * d[{iv}])",
                f"  y[{iv}] = d[{iv}] / sqrt(v[] + 1e-05) + {e} * w[{iv}]"]
    shape = ", ".join(names)
    text = (f"func g(x: {dt}[{shape}], w: {dt}[{shape}], c: f32[]) -> (y: {dt}[{shape}]) {{\n"
            + "\n".join(body) + "\n}\n")
    dims = [int(rng.choice([1, 3, 7, 64, 97, 1031, 4099])) for _ in names]
    while np.prod(dims) > 200_000:
        dims[int(np.argmax(dims))] = 7
    return text, dict(zip(names, dims))


def test_random_whole_tensor_programs():
    rng = np.random.default_rng(1132)
    for k in range(20):
        text, sizes = _whole_program(rng)
        assert check_text(text, sizes, seed=k, targets=("mlu-sim",)) == {}, (text, sizes)


@pytest.mark.parametrize("sample,m,n", [("softmax", 1, 63489), ("softmax", 2, 15361), ("layernorm", 3, 5761),
                                        ("argreduce", 5, 65), ("softmax", 1, 2049)])
def test_last_part_never_one_column(sample, m, n):
    """Widths whose last part would be one column (a scalar tile: 'unsupported scalar compute Reduce', a review's
    finding) take fewer parts instead."""
    text = (REPO / "samples" / f"{sample}.gir").read_text()
    assert check_text(text, {"M": m, "N": n}, seed=5, targets=("mlu-sim",)) == {}


def test_16_bit_last_part_through_masks_when_its_own_vectors_do_not_fit():
    """f16 softmax 4 x 200000: vectors of the last part's own width do not fit NRAM beside the others; the last
    part then reduces through masks (it fell to the row recipe, 22.5x the roofline)."""
    text = (REPO / "samples" / "softmax_f16.gir").read_text()
    assert _recipe(text, {"M": 4, "N": 200000}) == "split-rows"
    assert check_text(text, {"M": 2, "N": 70001}, seed=6, targets=("mlu-sim",)) == {}


def test_user_tensor_named_like_a_row_model_temporary():
    """rowmodel.py named its temporaries v1, v2, ... over a user's `v1`: split-rows computes a pass's full values
    before its reductions, so the statistic read the user's v1 (rel. error 1.0, a review's finding)."""
    text = ("func f(x: f32[M, N], r: f32[M]) -> (y: f32[M, N]) {\n  s[i] = sum(x[i, j] - r[i])\n"
            "  v1[i, j] = x[i, j] * 2.0\n  y[i, j] = v1[i, j] + s[i]\n}\n")
    for sizes in ({"M": 2, "N": 20011}, {"M": 64, "N": 1000}):
        assert check_text(text, sizes, seed=7, targets=("mlu-sim",)) == {}


@pytest.mark.parametrize("text,sizes", [
    ("func f(x: f32[A, B]) -> (t: f32[]) {\n  t[] = sum(x[i, j])\n}\n", {"A": 1, "B": 100003}),
    ("func f(x: f32[A, B]) -> (t: f32[]) {\n  t[] = sum(x[i, j])\n}\n", {"A": 3, "B": 262147}),
    ("func f(x: f16[A, B, C], z: f16[A, B, C]) -> (t: f32[]) {\n  t[] = mean(f32(x[i, j, k]) - f32(z[i, j, k]))\n}\n",
     {"A": 3, "B": 5, "C": 70001}),
    ((REPO / "samples" / "mse_loss.gir").read_text(), {"M": 3, "N": 100003}),
])
def test_whole_reductions_over_lengths_without_a_divisor(text, sizes):
    """A whole reduction whose element count has no divisor in [32, 4096] was one row no tile holds: refused
    ('no tile fits NRAM') or, as a vector, a scalar kernel (the f16 mean: 77,057x the roofline, a review's
    finding). As one row cut over the cores, its result viewed `as [1]`, it is one split-rows kernel."""
    assert _recipe(text, sizes) == "split-rows"
    assert check_text(text, sizes, seed=8, targets=("mlu-sim",)) == {}


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("n", [64, 1000, 65537, 100003])
def test_whole_vector_arg_reductions_as_one_row(fn, n):
    """`k[] = argmax(v[i])` over a whole vector: its lowering (passes/builtin/argreduce.py) uses the index as a
    value, which kept the vector out of the one-row view, so it ran as scalar kernels (154,000x the DMA roofline
    at 100003); seen as one row, the index is the column's and split-rows takes it (7.6x). First index on ties,
    the first NaN, and 0 for a vector of one value, as numpy."""
    import gir
    text = f"func f(v: f32[N]) -> (k: i32[]) {{\n  k[] = {fn}(v[i])\n}}\n"
    assert _recipe(text, {"N": n}) == ("split-rows" if n > 50000 else "extended")   # (short: one core's row)
    k = gir.compile(text, target="mlu-sim", sizes={"N": n}, cache=False)
    v = np.random.default_rng(n).integers(-3, 4, n).astype(np.float32)   # ties everywhere
    assert int(k(v)) == int(getattr(np, fn)(v))
    v[n // 3] = v[2 * n // 3] = np.nan
    assert int(k(v)) == n // 3
    for fill in (-np.inf, np.inf, 2.5):
        assert int(k(np.full(n, fill, np.float32))) == 0


@pytest.mark.parametrize("text", ["func f(x: f32[N]) -> (n: i32[]) {\n  n[] = sum(i32(x[i]))\n}\n",
                                  "func f(x: f32[N]) -> (n: i32[]) {\n  n[] = max(i32(x[i]) + 1)\n}\n"])
def test_integer_statistics_beyond_2_24_stay_exact(text):
    """An integer statistic of converted floats is unbounded: computed in f32 as one row, 999 x 20000 + 1 rounded
    to 19980000 (a review's finding); it keeps the exact scalar kernel (remarked). `i32(mean(x))`, a conversion of
    the f32 value itself, is exact and stays one row (test_mlu_exact_division.py)."""
    import gir
    x = np.full(1000, 20000.0, np.float32)
    x[3], x[5] = 1.0, 16777218.0
    k = gir.compile(text, target="mlu-sim", sizes={"N": 1000}, cache=False)
    want = x.astype(np.int64).sum() if "sum" in text else x.astype(np.int64).max() + 1
    assert int(k(x)) == want


def test_row_sums_of_converted_floats_stay_exact():
    """The extended recipe summed `i32(x)` in f32 over 40 x 25 values of 20000 (19980001 rounded to 19980000, a
    review's finding): a sum of integers f32 may round keeps the exact scalar kernel; counts of a bool mask
    (samples/relu_mask.gir) stay vectorised."""
    import gir
    text = "func f(x: f32[A, B]) -> (n: i32[]) {\n  n[] = sum(i32(x[a, b]))\n}\n"
    x = np.full((40, 25), 20000.0, np.float32)
    x[0, 3] = 1.0
    assert int(gir.compile(text, target="mlu-sim", sizes={"A": 40, "B": 25}, cache=False)(x)) == 19980001
    assert _recipe((REPO / "samples" / "relu_mask.gir").read_text(), {"M": 64, "N": 1000}) != ""
