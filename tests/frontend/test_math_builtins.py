"""The math builtins sin cos log1p expm1 softplus silu gelu gelu_tanh floor ceil round clamp in the language:
the reference evaluator against textbook numpy formulas in float64, their edge semantics, kinds, the rounding
bound and constant folding. The targets are checked against the evaluator in tests/sim/test_math_builtins_targets.py."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gir import ir
from gir.errors import GirError
from gir.evaluate import evaluate
from gir.parser import parse_text
from gir.rounding import rounding_bound
from gir.verifier import verify_module

_erf = np.vectorize(math.erf, otypes=[np.float64])
C = math.sqrt(2 / math.pi)

TEXTBOOK = {   # the definitions of docs/gir.md, written plainly (not the evaluator's stable forms)
    "sin": np.sin, "cos": np.cos, "log1p": np.log1p, "expm1": np.expm1,
    "softplus": lambda x: np.logaddexp(0.0, x),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(C * (x + 0.044715 * x ** 3))),
    "floor": np.floor, "ceil": np.ceil, "round": np.round,
}
NEW = tuple(TEXTBOOK) + ("clamp",)


def func(text: str) -> ir.Func:
    module = parse_text(text, "<test>")
    verify_module(module)
    return module.funcs[0]


def run1(fn: str, x: np.ndarray, dtype: str = "f64", compute=np.float64) -> np.ndarray:
    """`y[i] = fn(x[i])` on the evaluator, result declared f32 (rounded once) unless dtype says otherwise."""
    decl = "f32" if dtype == "f64" else dtype
    f = func(f"func f(x: f32[N]) -> (y: {decl}[N]) {{\n  y[i] = {fn}(x[i])\n}}\n")
    return evaluate(f, {"x": x.astype(np.float32)}, compute_dtype=compute)["y"]


def grid() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(-8, 8, 1601), rng.standard_normal(500) * 3, np.arange(-5.5, 6, 1.0),
                        [1e-30, -1e-30, 1e-6, -1e-6, 30.0, -30.0, 19.5, 20.5]])
    return x.astype(np.float32)


def test_names_and_arities():
    from gir.shapes import KNOWN_FUNCS
    assert set(NEW) <= set(KNOWN_FUNCS)
    assert all(KNOWN_FUNCS[f] == 1 for f in TEXTBOOK) and KNOWN_FUNCS["clamp"] == 3
    assert set(TEXTBOOK) <= set(ir.UNARY_FUNCS)


@pytest.mark.parametrize("fn", sorted(TEXTBOOK))
def test_evaluator_matches_numpy(fn):
    x = grid()
    if fn == "log1p":
        x = x[x > -1]
    got = run1(fn, x).astype(np.float64)
    with np.errstate(all="ignore"):
        want = TEXTBOOK[fn](x.astype(np.float64)).astype(np.float32).astype(np.float64)
    if fn in ("floor", "ceil", "round"):
        assert np.array_equal(got, want)
        return
    # one rounding to f32 each side: within an ulp of f32, relative; absolute 1e-15 |x| where the textbook forms
    # of the GELUs cancel in float64 (1 + erf, 1 + tanh for x << 0)
    assert np.all(np.abs(got - want) <= 1.2e-7 * np.abs(want) + 1e-15 * np.abs(x)), fn
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-7


@pytest.mark.parametrize("fn", ["sin", "cos", "expm1", "softplus", "silu", "gelu", "gelu_tanh"])
def test_evaluator_f32_compute(fn):
    """compute_dtype=f32 (how the simulators compute) stays within 1e-6 of f64, norm-wise."""
    x = grid()
    a, b = run1(fn, x, compute=np.float32), run1(fn, x)
    assert np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b) < 1e-6


def test_edge_values():
    nan, inf = float("nan"), float("inf")
    r = run1("round", np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, nan]))
    np.testing.assert_array_equal(r, [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 3.0, nan])   # half to even
    assert np.signbit(r[3])
    np.testing.assert_array_equal(run1("floor", np.array([-0.5, 2.0, -inf, nan])), [-1.0, 2.0, -inf, nan])
    np.testing.assert_array_equal(run1("ceil", np.array([-0.5, 2.1, inf])), [-0.0, 3.0, inf])
    sp = run1("softplus", np.array([30.0, 20.5, -inf, inf, -80.0, 0.0]))
    np.testing.assert_allclose(sp, [30.0, 20.5, 0.0, inf, math.exp(-80), math.log(2)], rtol=1e-7)
    np.testing.assert_array_equal(run1("log1p", np.array([-1.0, -2.0])), [-inf, nan])
    np.testing.assert_array_equal(run1("expm1", np.array([-inf, 100.0])), [-1.0, inf])
    for fn in ("silu", "gelu", "gelu_tanh"):   # large arguments: the identity, or 0 (no 0 * inf)
        np.testing.assert_array_equal(run1(fn, np.array([1e30, -1e30, 0.0, inf])), np.float32([1e30, -0.0, 0.0, inf]))
        assert np.isnan(run1(fn, np.array([nan, -inf]))).all()   # -inf * 0
    # the GELUs far out on the negative side are tiny but not 0, and not wrong by cancellation
    g = run1("gelu", np.array([-10.0]))[0]
    assert g == pytest.approx(-10.0 * 0.5 * math.erfc(10.0 / math.sqrt(2)), rel=1e-6) and g < 0


def test_clamp():
    f = func("func f(x: f32[N], lo: f32[N], hi: f32[N]) -> (y: f32[N]) {\n  y[i] = clamp(x[i], lo[i], hi[i])\n}\n")
    nan = float("nan")
    x = np.array([-2.0, 0.5, 3.0, nan, 0.5, 0.5, 5.0], np.float32)
    lo = np.array([-1.0, 0.0, 0.0, 0.0, nan, 2.0, 0.0], np.float32)
    hi = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, nan], np.float32)
    y = evaluate(f, {"x": x, "lo": lo, "hi": hi})["y"]
    np.testing.assert_array_equal(y, np.clip(x, lo, hi))   # lo > hi gives hi; a NaN anywhere gives NaN
    np.testing.assert_array_equal(y, [-1.0, 0.5, 1.0, nan, nan, 1.0, nan])


def test_clamp_keeps_integers():
    f = func("func f(k: i32[N]) -> (y: i32[N], z: f32[N]) {\n  y[i] = clamp(k[i], 2, 5)\n"
             "  z[i] = clamp(k[i], 2, 5.5)\n}\n")
    out = evaluate(f, {"k": np.arange(8, dtype=np.int32)})
    assert out["y"].dtype == np.int32
    np.testing.assert_array_equal(out["y"], [2, 2, 2, 3, 4, 5, 5, 5])
    np.testing.assert_array_equal(out["z"], [2, 2, 2, 3, 4, 5, 5.5, 5.5])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("fn", sorted(TEXTBOOK))
def test_16bit_results_round_once(fn, dtype):
    x = grid()
    x = x[(x > -1) & (x < 10)] if fn in ("log1p", "expm1") else x   # in the domain, no f16 overflow
    got = run1(fn, x, dtype).astype(np.float64)
    want = run1(fn, x).astype(np.float64)
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2


@pytest.mark.parametrize("text, message", [
    ("y[i] = clamp(x[i], 0.0)", "clamp() takes 3 argument(s), got 2"),
    ("y[i] = floor(m[i])", "floor() does not take boolean operands"),
    ("y[i] = clamp(x[i], m[i], 1.0)", "clamp() does not take boolean operands"),
    ("y[i] = gelu_tanh(x[i], 0.5)", "gelu_tanh() takes 1 argument(s), got 2"),
])
def test_kind_errors_are_located(text, message):
    src = f"func f(x: f32[N], m: bool[N]) -> (y: f32[N]) {{\n  {text}\n}}\n"
    with pytest.raises(GirError) as info:
        func(src)
    diags = info.value.diagnostics
    assert any(message in d.message and d.loc is not None and d.loc.line == 2 for d in diags), diags


def test_rounding_bound():
    """floor/ceil/round are exact (bound 0, like comparisons); clamp passes its operands' bound on; a smooth
    builtin adds its derivative times the operand's bound and one rounding."""
    f = func("func f(x: f32[N]) -> (a: f32[N], b: f32[N], c: f32[N]) {\n  a[i] = floor(x[i] * 3.0)\n"
             "  b[i] = clamp(x[i] * 3.0, -1.0, 1.0)\n  c[i] = sin(x[i] * 3.0)\n}\n")
    x = np.array([0.1, 0.2, 2.0], np.float32)
    h = rounding_bound(f, {"x": x})
    assert np.all(h["a"] == 0)
    np.testing.assert_allclose(h["b"], np.abs(x.astype(np.float64) * 3))
    t = x.astype(np.float64) * 3
    np.testing.assert_allclose(h["c"], np.abs(np.cos(t)) * np.abs(t) + np.abs(np.sin(t)))


def test_canonicalize_folds_constants():
    from gir.passes.builtin.canonicalize import _fold
    cases = {"round": (2.5, 2.0), "floor": (-0.5, -1.0), "softplus": (30.0, 30.0), "log1p": (-1.0, None),
             "gelu": (1.0, 0.5 * (1 + math.erf(1 / math.sqrt(2)))), "sin": (float("inf"), None)}
    for fn, (arg, want) in cases.items():
        got = _fold(ir.Call(fn, (ir.Const(arg),)))
        assert (got is None) if want is None else got.value == pytest.approx(want), fn
