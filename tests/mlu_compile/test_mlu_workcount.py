"""The arithmetic floor (passes/schedule_mlu/workcount.py) on hand-counted operator-layer functions."""
from __future__ import annotations

import glob

import pytest

from gir.passes.schedule_mlu.workcount import arithmetic_floor, count_work
from gir.parser import parse_file, parse_text
from gir.targets.mlu import MLU370

M, N = 48, 160   # fixed sizes: elements are counted exactly
MN, U = M * N, 128 / 4   # U: f32 elements per 128-byte unit


def work(body: str, params: str = "x: f32[M, N], z: f32[M, N], a: f32[N]", results: str = "y: f32[M, N]"):
    f = parse_text(f"func f({params}) -> ({results}) {{\n{body}\n}}\n").funcs[0]
    return count_work(f, {"M": M, "N": N})


def units(w) -> dict[str, float]:
    return {k: round(v, 6) for k, v in w.units().items()}


def test_elementwise_chain_by_hand():
    """u: x*a+bias (FMA), sigmoid, tanh, *, abs, - (the * and - are an FMS): 3 simple, 2 special;
    v: x*x+1 (FMA), sqrt, 0.5*s - clamp (FMS), max, min: 4 simple, 1 special;
    w: abs(x) (shared with u), +1, pow, neg, exp, 1+, log, -: 4 simple, 3 special; y: two adds."""
    f = parse_file("samples/elementwise_chain.gir").funcs[0]
    w = count_work(f, {"M": M, "N": N})
    assert w.counts() == {"simple": 13, "special": 6}
    assert units(w) == {"simple": 13 * MN / U, "special": 6 * MN / U}
    cycles = MN / U * (13 * MLU370.cycles_simple + 6 * MLU370.cycles_special)
    assert arithmetic_floor(f, {"M": M, "N": N}) == pytest.approx(cycles / (MLU370.total_cores * MLU370.clock_hz))


def test_common_subexpressions_count_once():
    assert work("y[i, j] = exp(x[i, j]) + exp(x[i, j])").counts() == {"special": 1, "simple": 1}
    two = work("t[i, j] = abs(x[i, j]) + 1.0\n y[i, j] = abs(x[i, j]) * t[i, j]")
    assert two.counts() == {"simple": 3}   # abs once across statements, +, *


def test_loop_invariant_work_counts_its_own_domain():
    w = work("y[i, j] = x[i, j] * exp(a[j] * 2.0)")
    assert units(w) == {"simple": (MN + N) / U, "special": N / U}


@pytest.mark.parametrize("expr, simple", [
    ("x[i, j] * a[j] + z[i, j]", 1),        # FMA
    ("z[i, j] + x[i, j] * a[j]", 1),        # FMA, either side of +
    ("x[i, j] * a[j] - z[i, j]", 1),        # FMS
    ("z[i, j] - x[i, j] * 2.0", 1),         # z + x*(-2)
    ("z[i, j] - x[i, j] * a[j]", 2),        # no form
    ("(x[i, j] + 1.0) * z[i, j]", 1),       # FAM
    ("(x[i, j] - z[i, j]) * a[j]", 1),      # FSM
    ("(1.0 - x[i, j]) * z[i, j]", 2),       # src0 would be the constant
    ("x[i, j] * a[j] + z[i, j] * x[i, j]", 2),   # two products, one add: one pair
    ("x[i, j] * z[i, j] * a[j] + 1.0", 2),  # (x*z)*a then +: one pair
    ("x[i, j] / 4.0 + z[i, j]", 1),         # x * 0.25 + z
])
def test_fusion_pairs(expr, simple):
    assert work(f"y[i, j] = {expr}").counts() == {"simple": simple}


def test_a_product_used_twice_is_not_paired():
    assert work("y[i, j] = (x[i, j] * z[i, j]) + exp(x[i, j] * z[i, j])").counts() == {"simple": 2, "special": 1}


def test_pairs_need_the_same_domain():
    assert work("y[i, j] = x[i, j] + a[j] * 3.0").counts() == {"simple": 2}   # the product is over N only


def test_negation_folding():
    assert work("y[i, j] = x[i, j] + (-z[i, j])").counts() == {"simple": 1}
    assert work("y[i, j] = x[i, j] - (-z[i, j])").counts() == {"simple": 1}
    assert work("y[i, j] = -x[i, j] * 2.0").counts() == {"simple": 1}
    assert work("y[i, j] = exp(-x[i, j])").counts() == {"simple": 1, "special": 1}


def test_softmax_by_hand():
    f = parse_file("samples/softmax.gir").funcs[0]
    w = count_work(f, {"M": M, "N": N})
    # max and sum read M*N; x - mx and e * (1/s) over M*N; exp over M*N; one reciprocal per row
    assert units(w) == {"reduce": 2 * MN / U, "simple": 2 * MN / U, "special": MN / U, "div": M / U}


def test_mean_adds_one_scale_per_output():
    w = work("y[i] = mean(x[i, j])", results="y: f32[M]")
    assert units(w) == {"reduce": MN / U, "simple": M / U}


def test_half_counts_half_the_units():
    w = work("y[i, j] = exp(x[i, j])", params="x: f16[M, N]", results="y: f16[M, N]")
    assert units(w) == {"special": MN / (128 / 2)}


def test_gather_and_one_hot_are_free():
    w = work("y[i] = sum(select(j == t[i], x[i, j], 0.0))", params="x: f32[M, N], t: i32[M]", results="y: f32[M]")
    assert w.counts() == {}
    w = work("y[i, j] = select(t[i] == j, a[j], 0.0)", params="t: i32[M], a: f32[N]")
    assert w.counts() == {}
    w = work("y[i, j] = select(t[i] == j, a[j], 1.0)", params="t: i32[M], a: f32[N]")
    assert w.counts() == {"simple": 2}    # not a one-hot: compare and select over M*N


def test_bool_input_is_converted_once():
    w = work("y[i, j] = select(m[i, j], x[i, j], 0.5) + select(m[i, j], z[i, j], 0.0)",
             params="x: f32[M, N], z: f32[M, N], m: bool[M, N]")
    assert units(w) == {"convert": MN / U, "simple": 3 * MN / U}


def test_casts():
    w = work("y[i, j] = f32(h[i, j]) * 2.0", params="h: f16[M, N]")
    assert units(w) == {"convert": MN / U, "simple": MN / U}
    assert work("y[i, j] = f32(x[i, j]) * 2.0").counts() == {"simple": 1}   # a cast to its own type is free


def test_pure_data_movement_is_free():
    assert work("y[i, j] = x[i, j]").counts() == {}
    f = parse_file("samples/transpose2d.gir").funcs[0]
    assert count_work(f, {"M": M, "N": N}).seconds() == 0.0


def test_report_floor_columns():
    from gir.codegen.mlu.report import floor_columns
    assert floor_columns(3e-6, 2e-6, 1e-6) == "1.0 | 1.500"     # IO-bound: the roofline is the floor
    assert floor_columns(3e-6, 1e-6, 2e-6) == "2.0 | 1.500"     # compute-bound: the arithmetic floor is


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(glob.glob("samples/*.gir")))
def test_no_kernel_beats_its_floor(path):
    """The floor is a lower bound under the simulator's own cost model: every sample's fused kernel (timing-only,
    report sizes) takes at least max(roofline, arithmetic floor)."""
    from gir.codegen.mlu.report import LARGE, SIZES, _sizes, compulsory_bytes, schedule_kind
    from gir.targets.mlu.run import run_func
    f = parse_file(path).funcs[0]
    if any(p.type.dtype.value == "f64" for p in f.params + f.results):
        pytest.skip("f64 is refused on the MLU, located (gir/limits.py refuse_f64)")
    sizes = _sizes(f, SIZES, LARGE)
    if schedule_kind(f, sizes) == "scalar fallback":
        pytest.skip("scalar fallback kernels take minutes to simulate at report sizes")
    t = run_func(f, None, sizes, values=False).stats["seconds"]
    assert t >= max(compulsory_bytes(f, sizes) / MLU370.gdram_bandwidth, arithmetic_floor(f, sizes))
