"""Reshapes written as index arithmetic on the MLU (passes/schedule_mlu/delinear.py): `x[i, k * L + l]` and `x[i,
m // L, m % L]` are read through reshape views instead of running as scalar kernels (1,226x and 1,833x the DMA
roofline at 8 x 64 x 4096). Values against the reference evaluator at sizes 1 / primes / tails, f32 and 16-bit;
no scalar kernel; references that split a tensor differently leave the function as it was."""
import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.targets.mlu.run import run_func
from gir.passes.builtin.delinear import delinearize

TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}

PROGRAMS = {
    # split an axis of x (the input seen through a view)
    "split_in": "func f(x: {t}[{A}, {K2}]) -> (y: {t}[{A}, {K}, {L}]) {{\n  y[i, k, l] = x[i, k * {L} + l] * 2.0\n}}\n",
    # merge two axes of x into y's last (the result seen through a view), with a broadcast operand
    "merge_out": ("func f(x: {t}[{A}, {K}, {L}], g: {t}[{A}]) -> (y: {t}[{A}, {K2}]) {{\n"
                  "  y[i, m] = x[i, m // {L}, m % {L}] * g[i] + 1.0\n}}\n"),
    # three radices, a statistic of the viewed rows
    "three": ("func f(x: {t}[{A}, {K3}], w: {t}[3]) -> (y: {t}[{A}, {K}, {L}, 3], s: {t}[{A}, {K}]) {{\n"
              "  y[i, k, l, c] = x[i, k * {L3} + l * 3 + c] * w[c]\n  s[i, k] = max(y[i, k, l, c])\n}}\n"),
}
SIZES = [dict(A=1, K=1, L=2), dict(A=3, K=5, L=7), dict(A=17, K=2, L=131), dict(A=4, K=67, L=33)]


def _text(name, t, sz):
    s = dict(sz, t=t, K2=sz["K"] * sz["L"], K3=sz["K"] * sz["L"] * 3, L3=sz["L"] * 3)
    return PROGRAMS[name].format(**s)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("t", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("k", range(len(SIZES)))
def test_reshapes_match_the_evaluator(name, t, k):
    text = _text(name, t, SIZES[k])
    f = parse_text(text).funcs[0]
    inputs = random_inputs(f, {}, np.random.default_rng(k))
    res = run_func(f, inputs, {})
    want = evaluate(f, inputs, {})
    for out in want:
        w = np.asarray(want[out], dtype=np.float64)
        g = np.asarray(res.outputs[out], dtype=np.float64)
        assert np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30) <= TOL[t], (text, out)
    if k:   # (one or two elements: a scalar kernel may be estimated faster, and is said)
        assert not [r for r in res.remarks if "scalar" in r.message], (text, [r.message for r in res.remarks])


def test_the_views_replace_the_arithmetic():
    f = parse_text(_text("merge_out", "f32", dict(A=4, K=6, L=8))).funcs[0]
    out = delinearize(f)
    text = str(out.results[0].view) + " " + str(out.body[0])
    assert out.results[0].type.shape == (4, 6, 8) and "//" not in text and "%" not in text


def test_references_that_disagree_leave_the_function_alone():
    f = parse_text("func f(x: f32[4, 48]) -> (y: f32[4, 6, 8], z: f32[4, 48]) {\n"
                   "  y[i, k, l] = x[i, k * 8 + l]\n  z[i, m] = x[i, m] + 1.0\n}\n").funcs[0]
    assert delinearize(f) is None
    inputs = random_inputs(f, {}, np.random.default_rng(0))
    res = run_func(f, inputs, {})
    want = evaluate(f, inputs, {})
    assert np.allclose(res.outputs["y"], want["y"]) and np.allclose(res.outputs["z"], want["z"])


def test_large_reshape_near_the_roofline():
    # 8 x 64 x 4096 f32 seen as 8 x 64 x 64 x 64: 1.037x the DMA roofline in the simulator's timing model when
    # written (a scalar kernel before, 1,225.6x); model time, not wall-clock
    from gir.targets.mlu import MLU370
    f = parse_text(_text("split_in", "f32", dict(A=512, K=64, L=64))).funcs[0]
    res = run_func(f, None, {}, values=False)
    roofline = 2 * 512 * 4096 * 4 / MLU370.gdram_bandwidth
    assert res.stats["seconds"] / roofline <= 1.15


INTERMEDIATES = """func f(x: f32[3, 4, 2, 2]) -> (x3: f32[3, 2, 8] as [3, 2, 2, 2, 2]) {
  xu[i, j, k, l] = exp(x[i, j, k, l])
  x3[i, j, k, l, m] = xu[i, j * 2 + k, l, m]
}
func g(n: f32[3, 4, 4], s: f32[4]) -> (y: f32[3, 4, 2, 2]) {
  t[i, j, k] = n[i, j, k] * s[j]
  y[i, j, k, l] = t[i, j, k * 2 + l] + 1.0
}
func h(x: f32[5, 12]) -> (y: f32[5, 12], z: f32[5, 3, 4]) {
  y[i, j] = x[i, j] * 2.0
  z[i, a, b] = y[i, a * 4 + b] - 1.0
}
"""


@pytest.mark.parametrize("k", range(3))
def test_intermediates_and_results_are_redefined_split(k):
    # (ONNX Reshape inside an imported function: the tensor read split is defined split, what it reads viewed)
    f = parse_text(INTERMEDIATES).funcs[k]
    out = delinearize(f)
    assert out is not None and not any(isinstance(i, ir.BinOp) for s in out.body for r in _refs(s) for i in r.index)
    inputs = random_inputs(f, {}, np.random.default_rng(k))
    res = run_func(f, inputs, {})
    want = evaluate(f, inputs, {})
    for name in want:
        assert np.allclose(np.asarray(res.outputs[name]), np.asarray(want[name]), rtol=1e-5, atol=1e-6)


def _refs(s):
    from gir.walk import walk
    return [s.target] + [x for x in walk(s.value) if isinstance(x, ir.Ref)]


def test_the_pass_lets_fuse_group_an_intermediate_read_through_a_reshape():
    # ONNX's scale-then-reshape: on sim the intermediate went through global memory (2.009x the compulsory bytes at
    # 768 x 4096); the delinearize pass redefines it split, fuse groups it with its reader (1.007x when written)
    from gir.passes.analysis.traffic import compulsory_bytes
    from gir.passes.schedule import lower_module
    from gir.targets.bench.runners import analysed_bytes
    from gir.targets.sim import run_func as run_sim
    text = ("func f(x: f32[96, 160], w: f32[160]) -> (y: f32[32, 3, 160]) {\n"
            "  b[m, k] = x[m, k] * w[k]\n  y[i, j, k] = b[i * 3 + j, k]\n}\n")
    module = parse_text(text)
    f = module.funcs[0]
    inputs = random_inputs(f, {}, np.random.default_rng(3))
    low = lower_module(module, "sim", {"sizes": {}}).funcs[0]
    assert sum(1 for _ in low.kernels) == 1
    got = run_sim(low, inputs, {}).outputs
    assert np.allclose(got["y"], evaluate(f, inputs, {})["y"], rtol=1e-6)
    read, written = compulsory_bytes(f, {})
    assert analysed_bytes(low, {}) / (read + written) <= 1.05


def test_the_pass_leaves_parameters_read_at_computed_indices_alone():
    from gir.passes.builtin.delinear import computed_reads
    f = parse_text(_text("merge_out", "f32", dict(A=4, K=6, L=8))).funcs[0]
    assert computed_reads(f) == 0   # (nothing for fuse to gain: the pass keeps the function; the MLU weighs it)


def test_a_reshape_that_also_transposes_takes_both_rewrites():
    # attention's head split with a weight: delinearized, the read of x is transposed; the permuted-operand rewrite
    # applies to the delinearized program (a scalar kernel before: 200 ms estimated at 8 x 512 x 1024)
    text = ("func f(x: f32[2, 37, 96], w: f32[96]) -> (y: f32[2, 3, 37, 32]) {\n"
            "  y[b, h, s, d] = x[b, s, h * 32 + d] * w[h * 32 + d]\n}\n")
    f = parse_text(text).funcs[0]
    inputs = random_inputs(f, {}, np.random.default_rng(5))
    res = run_func(f, inputs, {})
    assert np.allclose(res.outputs["y"], evaluate(f, inputs, {})["y"], rtol=1e-6)
    assert not [r for r in res.remarks if "scalar" in r.message], [r.message for r in res.remarks]
    assert [r for r in res.remarks if "another axis order" in r.message or "axis order of its" in r.message]


REVIEWED = {   # a review's findings: each ran on every target before delinearize and must still
    # an axis left whole keeps its size name in the view (a traceback when the view held the name as a constant)
    "symbolic": ("func f(x: f32[M, 12]) -> (y: f32[M, 3, 4]) {\n  b[m, k] = x[m, k] * 2.0\n"
                 "  y[i, j, k] = b[i, j * 4 + k]\n}\n", {"M": 5}, True),
    # a scan along a variable the rewrite would split is left alone (an AttributeError in the scan check)
    "scan": ("func f(x: f32[12]) -> (y: f32[3, 4]) {\n  t[m] = cumsum(x[m], m)\n  y[i, j] = t[i * 4 + j] * 2.0\n}\n",
             {}, False),
    # a chain of intermediates each read whole by the next: redefinitions spread one at a time
    "chain": ("func f(x: f32[24]) -> (y: f32[2, 3, 4]) {\n  a[m] = exp(x[m])\n  b[m] = a[m] * a[m]\n"
              "  c[m] = b[m] + a[m]\n  y[i, j, k] = c[i * 12 + j * 4 + k]\n}\n", {}, True),
    # a result read split by another statement and x read whole by the result's definition
    "result": ("func f(x: f32[5, 12]) -> (y: f32[5, 12], z: f32[5, 2, 6]) {\n  y[i, m] = x[i, m] * 2.0\n"
               "  z[i, a, b] = y[i, a * 6 + b] + x[i, a * 6 + b]\n}\n", {}, True),
    # a constant index next to a split one: nothing to settle the conflict, the function stays
    "constant": ("func f(x: f32[5, 12]) -> (z: f32[5, 2, 6]) {\n  z[i, a, b] = x[i, a * 6 + b] + x[i, 0]\n}\n",
                 {}, False),
}


@pytest.mark.parametrize("name", sorted(REVIEWED))
@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_reviewed_programs_run_on_every_target(name, target):
    import gir
    text, sizes, rewrites = REVIEWED[name]
    f = parse_text(text).funcs[0]
    assert (delinearize(f) is not None) == rewrites
    inputs = random_inputs(f, sizes, np.random.default_rng(1))
    k = gir.compile(text, target=target, cache=False, sizes=sizes or None)
    got = k(**inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = evaluate(f, inputs, sizes)
    for p, g in zip(f.results, got):
        assert np.allclose(np.asarray(g), np.asarray(want[p.name]), rtol=1e-5, atol=1e-6), (name, p.name)
