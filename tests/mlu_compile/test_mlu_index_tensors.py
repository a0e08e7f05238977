"""Index variables used as values, read from index tensors on the MLU (passes/schedule_mlu/iotas.py): the tile
recipes refused them, so these programs ran as scalar kernels (~1,000x the DMA roofline or more)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import gir
from gir import ir
from gir.parser import parse_text
from gir.passes.middle import run_default
from gir.passes.schedule_mlu.iotas import iota_kernel
from gir.targets.mlu.run import run_func

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))
from diffrun import check_text  # noqa: E402

LEADING = "func f(x: f32[A, B, C]) -> (y: f32[A, B, C]) {\n  y[a, b, c] = x[a, b, c] - f32(a * a - A) * 0.5 + f32(c)\n}\n"
COLUMN_ARG = "func f(x: f32[A, B]) -> (y: i32[B], z: i32[B]) {\n  y[b] = argmax(x[a, b])\n  z[b] = argmin(x[a, b])\n}\n"
MIDDLE_ARG = "func f(x: f32[A, B, C]) -> (y: i32[A, C]) {\n  y[a, c] = argmin(x[a, b, c])\n}\n"
VECTOR = "func f(x: f32[A]) -> (y: f32[A]) {\n  y[a] = x[a] + f32(a)\n}\n"


def _remarks(text: str, sizes: dict):
    _, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
    return ctx.remarks


@pytest.mark.parametrize("text,sizes", [(LEADING, {"A": 85, "B": 11, "C": 257}), (LEADING, {"A": 3, "B": 1, "C": 97}),
                                        (COLUMN_ARG, {"A": 1000, "B": 409}), (COLUMN_ARG, {"A": 37, "B": 67}),
                                        (MIDDLE_ARG, {"A": 6, "B": 100, "C": 515}), (VECTOR, {"A": 100003}),
                                        (VECTOR, {"A": 1000})])
def test_index_values_from_index_tensors(text, sizes):
    remarks = _remarks(text, sizes)
    assert not [r for r in remarks if "scalar MLU kernel" in r.message]
    assert any("index values read from index tensors" in r.message for r in remarks)
    assert check_text(text, sizes, seed=2, targets=("mlu-sim",)) == {}


@pytest.mark.parametrize("a,b", [(1, 33), (257, 64), (1000, 7)])
def test_arg_reductions_over_columns_with_ties_and_nan(a, b):
    k = gir.compile(COLUMN_ARG, target="mlu-sim", sizes={"A": a, "B": b}, cache=False)
    x = np.random.default_rng(a).integers(-2, 3, (a, b)).astype(np.float32)   # ties everywhere
    x[a // 2, 0] = np.nan
    x[:, b - 1] = -np.inf
    y, z = k(x)
    assert np.array_equal(np.asarray(y), x.argmax(0)) and np.array_equal(np.asarray(z), x.argmin(0))


def test_index_arithmetic_that_may_reach_2_24_stays_exact():
    """`a * B + b` reaches 2^24 at 4096 x 4097: f32 tiles would round it, so the index tensors are not used (the
    scalar kernel's exact int, remarked), as the row model decides for its own index values."""
    text = "func f(x: f32[A, B]) -> (y: i32[A, B]) {\n  y[a, b] = select(x[a, b] > 0.0, a * B + b, 0 - 1)\n}\n"
    remarks = _remarks(text, {"A": 4096, "B": 4097})
    assert not any("index values read from index tensors" in r.message for r in remarks)
    assert check_text(text, {"A": 64, "B": 100}, seed=1, targets=("mlu-sim",)) == {}


@pytest.mark.parametrize("shape", [(5,), (4096,), (4097,), (100003,), (1, 9000), (3, 70), (40, 4096)])
def test_iota_kernel_fills_every_shape(shape):
    t = ir.Param("t", ir.TensorType(ir.DType.i32, shape))
    f = ir.Func("f", (), (t,), (iota_kernel("f_fill", "t", shape),))
    out = run_func(f, {}, {}).outputs["t"]
    assert np.array_equal(np.asarray(out).reshape(-1), np.arange(int(np.prod(shape))))
