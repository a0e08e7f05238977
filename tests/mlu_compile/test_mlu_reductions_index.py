"""Fused MLU schedules for scalar (full) reductions, index values (iota compares) and rank-4 causal masks:
mse_loss, soft_cross_entropy, cross_entropy, onehot, scaled_causal_softmax (passes/schedule_mlu/extended.py)."""
import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.printer import print_module
from gir.passes.schedule_mlu import schedule_mlu
from gir.codegen.mlu.report import _compulsory
from gir.targets.mlu.run import run_func

SIZES = [1, 7, 1000, 1025]


def _f(name):
    return parse_file(f"samples/{name}.gir").funcs[0]


def _check(f, sizes, seed):
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    res = run_func(f, x, sizes)
    ref = evaluate(f, x, sizes)
    for k, want in ref.items():
        got = res.outputs[k].astype(np.float64)
        want = np.asarray(want, np.float64)
        assert got.shape == want.shape
        scale = np.max(np.abs(want)) + 1e-30 if want.size else 1.0
        assert np.max(np.abs(got - want), initial=0.0) / scale < 1e-5, (k, sizes)
    names = [k.name for k in res.explicit.kernels]
    assert not any(n.endswith("_k0") for n in names), names      # not the scalar fallback
    return res


CASES = [("mse_loss", {"M": m, "N": n}) for m, n in [(1, 1), (7, 1025), (1025, 7), (3, 1000)]] + \
        [("soft_cross_entropy", {"M": m, "N": n}) for m, n in [(1, 1000), (1025, 7), (7, 1)]] + \
        [("cross_entropy", {"M": m, "N": n}) for m, n in [(1, 1), (7, 1025), (1025, 7), (5, 1000)]] + \
        [("onehot", {"M": m, "C": c}) for m, c in [(1, 1), (1025, 7), (7, 1000), (3, 1025)]] + \
        [("scaled_causal_softmax", {"B": b, "H": h, "S": s}) for b, h, s in [(1, 1, 1), (2, 3, 7), (1, 2, 130)]]


@pytest.mark.parametrize("name,sizes", CASES)
def test_matches_reference(name, sizes):
    _check(_f(name), sizes, seed=sum(sizes.values()))


def test_cross_entropy_targets_hit_every_class_edge():
    f = _f("cross_entropy")
    sizes = {"M": 64, "N": 1000}
    x = random_inputs(f, sizes, np.random.default_rng(5))
    x["target"] = np.array([0, 999] * 32, np.int32)
    res = run_func(f, x, sizes)
    ref = evaluate(f, x, sizes)
    np.testing.assert_allclose(res.outputs["loss_row"], ref["loss_row"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["mse_loss", "cross_entropy", "scaled_causal_softmax"])
def test_explicit_gir_round_trips(name):
    f = _f(name)
    sizes = {"M": 9, "N": 70} if name != "scaled_causal_softmax" else {"B": 2, "H": 2, "S": 12}
    e = schedule_mlu(f, sizes)
    assert parse_text(print_module(ir.Module((e,)))).funcs[0] == e


@pytest.mark.parametrize("name,sizes,limit", [
    ("mse_loss", {"M": 1024, "N": 4096}, 1.15), ("onehot", {"M": 4096, "C": 4096}, 1.15),
    ("scaled_causal_softmax", {"B": 1, "H": 4, "S": 1024}, 1.15),
    ("cross_entropy", {"M": 4096, "N": 4096}, 1.45)])   # cross_entropy: compute-bound (exp + compare + select)
def test_near_roofline(name, sizes, limit):
    f = _f(name)
    fused = run_func(f, None, sizes, values=False).stats["seconds"]
    assert fused / (_compulsory(f, sizes) / 307e9) < limit
