"""Tensors of any rank, all of one shape, seen as [R, C] rows of their flat memory on the MLU
(passes/schedule_mlu/split_flat.py `any_rank`, chosen in schedule.py by the cost model or when no schedule takes
the tensors in their shape): a whole sum over rows too long for NRAM was refused, narrow rows ([N, 3]) ran 15x the
DMA roofline. Hand-written cases, the cases left alone, and seeded random programs of rank 2 and 3 (f32/f16/bf16,
sizes 1 / primes / tails) against the evaluator."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gir.parser import parse_text
from gir.passes.middle import run_default
from gir.passes.schedule_mlu.cost import estimate
from gir.passes.schedule_mlu.schedule import specialize
from gir.passes.schedule_mlu.split_flat import split_flat
from gir.shapes import func_info

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "differential"))
from diffrun import check_text  # noqa: E402

WSUM = "func f(x: f32[A, B]) -> (t: f32[]) {\n  t[] = sum(x[i, j])\n}\n"
EW = "func f(x: f32[A, B]) -> (y: f32[A, B]) {\n  y[i, j] = exp(x[i, j]) * 2.0\n}\n"


def _compiled(text: str, sizes: dict):
    low, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
    return low.funcs[0], ctx


def _flat(text: str, sizes: dict):
    f = specialize(parse_text(text).funcs[0], sizes)
    return split_flat(f, func_info(f).types, any_rank=True), f


def test_views_of_any_rank():
    g, f = _flat("func f(x: f32[A, B, C], z: f32[A, B, C]) -> (y: f32[A, B, C], s: f32[]) {\n"
                 "  y[i, j, k] = x[i, j, k] * z[i, j, k]\n  s[] = max(x[a, b, c])\n}\n", {"A": 2, "B": 3, "C": 4096})
    assert [p.type.shape for p in g.params + g.results] == [(6, 4096)] * 3 + [()]
    assert split_flat(f, func_info(f).types) is f   # (vectors only without any_rank)
    g, f = _flat(EW, {"A": 4096, "B": 4096})
    assert g is f   # already [R, C]


@pytest.mark.parametrize("text", [
    "func f(x: f32[A, A]) -> (y: f32[A, A]) {\n  y[i, j] = x[j, i]\n}\n",                       # a transpose
    "func f(x: f32[A, A], z: f32[A, A]) -> (y: f32[A, A]) {\n  y[i, j] = x[i, j] + z[j, i]\n}\n",
    "func f(x: f32[A, B]) -> (y: f32[A]) {\n  y[i] = sum(x[i, j])\n}\n",                       # two shapes
    "func f(x: f32[A, B]) -> (y: f32[A, B]) {\n  y[i, j] = x[i, j] * j\n}\n",                  # an index value
    "func f(x: f32[A, B]) -> (y: f32[A, B]) {\n  y[i, j] = x[i, 0] + x[i, j]\n}\n",            # a constant index
])
def test_left_alone(text):
    g, f = _flat(text, {"A": 64, "B": 64})
    assert g is f
    assert check_text(text, {"A": 64, "B": 64}, seed=3, targets=("mlu-sim",)) == {}


def test_whole_sum_of_rows_too_long_for_nram():
    """`t[] = sum(x[i, j])` over [3, 262144]: no row schedule holds a row; as [192, 4096] rows it runs."""
    out, _ = _compiled(WSUM, {"A": 3, "B": 262144})
    assert out.params[0].type.shape == (192, 4096) and out.params[0].view is not None
    assert check_text(WSUM, {"A": 3, "B": 262144}, seed=5, targets=("mlu-sim",)) == {}


def test_narrow_rows_seen_flat_when_faster():
    """[12288, 3] rows are 12 bytes: as [9, 4096] the cost model estimates the kernel several times faster."""
    sizes = {"A": 12288, "B": 3}
    out, ctx = _compiled(EW, sizes)
    assert out.params[0].type.shape == (9, 4096)
    assert any("flat memory" in r.message for r in ctx.remarks if r.kind == "analysis")
    from gir.passes.schedule_mlu import schedule_mlu
    natural = schedule_mlu(parse_text(EW).funcs[0], sizes, split=False)   # (no flat view inside a split's segment)
    assert estimate(natural).seconds > 2 * estimate(out).seconds
    assert check_text(EW, sizes, seed=6, targets=("mlu-sim",)) == {}


def _program(rng) -> tuple[str, dict]:
    dt = str(rng.choice(["f32", "f16", "bf16"]))
    rank = int(rng.integers(2, 4))
    names = ["A", "B", "C"][:rank]
    iv = ", ".join("ijk"[:rank])
    shape = ", ".join(names)
    red = str(rng.choice(["sum", "max", "min", "mean"]))
    unary = str(rng.choice(["exp({})", "abs({})", "({}) * 0.5", "sigmoid({})", "max({}, 0.0)", "tanh({})"]))
    e = unary.format(f"x[{iv}]")
    kind = int(rng.integers(3))
    if kind == 0:
        body = [f"  y[{iv}] = {e} + w[{iv}]"]
    elif kind == 1:
        body = [f"  s[] = {red}(x[{iv}] * w[{iv}])", f"  y[{iv}] = {e} - s[]"]
    else:
        body = [f"  t[{iv}] = {e} * w[{iv}]", f"  u[] = sum(t[{iv}])", f"  y[{iv}] = t[{iv}] / (abs(u[]) + 1.0)"]
    text = f"func r(x: {dt}[{shape}], w: {dt}[{shape}]) -> (y: {dt}[{shape}]) {{\n" + "\n".join(body) + "\n}\n"
    dims = [int(rng.choice([1, 3, 7, 31, 64, 97, 130, 1031, 4099])) for _ in names]
    if np.prod(dims) > 300_000:
        dims[0] = 1
    return text, dict(zip(names, dims))


def test_random_programs_of_one_shape():
    rng = np.random.default_rng(1130)
    for n in range(24):
        text, sizes = _program(rng)
        assert check_text(text, sizes, seed=n, targets=("mlu-sim",)) == {}, (text, sizes)


def test_argmax_rows_beyond_one_tile():
    """The extended recipe's index tiles were not in the placement's NRAM plan: an argmax over rows of 32,000
    floats compiled to a kernel that overflowed NRAM (the simulator caught it). The patched kernel is counted now,
    and rows that no tile holds with their index tiles run chunked."""
    from gir.passes.schedule_mlu.tiles_nram import kernel_nram
    text = "func f(x: f32[B, V]) -> (y: i32[B]) {\n  y[b] = argmax(x[b, v])\n}\n"
    out, _ = _compiled(text, {"B": 64, "V": 32000})
    assert all(kernel_nram(k) <= 768 * 1024 for k in out.kernels)
    assert check_text(text, {"B": 37, "V": 20000}, seed=7, targets=("mlu-sim",)) == {}


@pytest.mark.parametrize("b", [6, 20])   # 6 rows: split over the cores (splitrows.py); 20: chunked (longrows.py)
@pytest.mark.parametrize("op,dtype", [("argmax", "f32"), ("argmin", "f32"), ("argmax", "f16")])
def test_arg_reductions_over_rows_beyond_nram(op, dtype, b):
    """Rows too long for one tile with their index tiles run chunked (longrows.py; the column index built per
    chunk on chip, indexops.patch_long_columns): ties give the first index, a NaN its first position, and a
    row's extreme in its tail chunk or its first column is found, as numpy."""
    import gir
    text = f"func f(x: {dtype}[B, V]) -> (y: i32[B]) {{\n  y[b] = {op}(x[b, v])\n}}\n"
    v = 40009
    rng = np.random.default_rng(11)
    x = rng.standard_normal((b, v)).astype(np.float32)
    x[1, [7, 30000, 40008]] = 50.0 if op == "argmax" else -50.0     # ties: the first wins
    x[2, 40008] = 60.0 if op == "argmax" else -60.0                 # the last element
    x[3, 0] = 70.0 if op == "argmax" else -70.0                     # the first
    x[4, [12345, 20000]] = np.nan                                   # the first NaN
    x = x.astype(np.float16) if dtype == "f16" else x
    k = gir.compile(text, target="mlu-sim", sizes={"B": b, "V": v}, cache=False)
    want = (np.argmax if op == "argmax" else np.argmin)(x, axis=1)
    assert np.array_equal(np.asarray(k(x)), want)
