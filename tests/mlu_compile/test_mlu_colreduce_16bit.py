"""Column / middle-axis reductions in f16 and bf16 on the MLU (passes/schedule_mlu/colreduce.py converts 16-bit
tiles to f32 on chip), and the rank > 2 view in indexops.py refusing tensors not indexed (lead..., row, ...)
(it used to build an invalid flattened function: 'y' declared with A*C in the position of 'c')."""
import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.shapes import func_info
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.extended import schedule_extended
from gir.passes.schedule_mlu.rowmodel import NotRowModel
from gir.passes.schedule_mlu.schedule import specialize
from gir.targets.mlu.run import run_func

TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}


def _dim1(op, dt):
    return parse_text(f"func {op}_dim1(x: {dt}[A, B, C]) -> (y: {dt}[A, C]) {{\n  y[a, c] = {op}(x[a, b, c])\n}}\n"
                      ).funcs[0]


def _col(op, dt):
    return parse_text(f"func col_{op}(x: {dt}[M, N]) -> (y: {dt}[N]) {{\n  y[j] = {op}(x[i, j])\n}}\n").funcs[0]


def _check(f, sizes, dt, seed, mode="fused", scheduled=True):
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    res = run_func(f, x, sizes, mode=mode)
    ref = evaluate(f, x, sizes)
    got = np.asarray(res.outputs["y"], np.float64)
    want = np.asarray(ref["y"], np.float64)
    assert res.outputs["y"].dtype == x["x"].dtype
    assert got.shape == want.shape
    scale = np.max(np.abs(want)) + 1e-30
    assert np.max(np.abs(got - want)) / scale < TOL[dt], (f.name, dt, sizes)
    names = [k.name for k in res.explicit.kernels]
    if scheduled:
        assert not any(n.endswith("_k0") for n in names), names   # the column schedule, not the scalar fallback
    return res


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("sizes", [{"A": 3, "B": 5, "C": 7}, {"A": 1, "B": 1, "C": 1}, {"A": 2, "B": 130, "C": 65}])
def test_dim1_16bit_matches_reference(op, dt, sizes):
    # one column (C == 1) is not a column reduction: the scalar fallback, which must be right too
    _check(_dim1(op, dt), sizes, dt, seed=sum(sizes.values()) + len(op), scheduled=sizes["C"] > 1)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("sizes", [{"M": 7, "N": 5}, {"M": 1, "N": 1}, {"M": 300, "N": 3}])
def test_col_16bit_matches_reference(op, dt, sizes):
    _check(_col(op, dt), sizes, dt, seed=sum(sizes.values()) + len(op), scheduled=sizes["N"] > 1)


def test_col_sum_f16_uses_partials_kernel():
    """Many rows: the S axis is split over cores (f32 partials in GDRAM, a combine kernel converting to f16)."""
    res = _check(_col("sum", "f16"), {"M": 1000, "N": 70}, "f16", seed=3)
    assert any(k.name.endswith("_combine") for k in res.explicit.kernels)


@pytest.mark.parametrize("mode", ["opbyop", "scalar"])
def test_other_modes_16bit(mode):
    _check(_dim1("sum", "f16"), {"A": 3, "B": 5, "C": 7}, "f16", seed=11, mode=mode, scheduled=mode != "scalar")


def test_rank3_view_refuses_middle_axis_reduction():
    """B == C: the flattened view used to type-check and would have reduced over the wrong axis."""
    f = _dim1("sum", "f16")
    spec = specialize(f, {"A": 3, "B": 5, "C": 5})
    with pytest.raises(NotRowModel):
        schedule_extended(spec, func_info(spec))


def test_f16_timing_only_large():
    f = _dim1("sum", "f16")
    sizes = {"A": 128, "B": 4096, "C": 4095}
    r16 = run_func(f, None, sizes, values=False)
    assert 0 < r16.stats["seconds"] < 1.0
    explicit = schedule_mlu(f, sizes)
    assert not any(k.name.endswith("_k0") for k in explicit.kernels)
