"""Quasi-affine indices (`//`, `%` by constants, min/max) and guarded accesses (issue 13 item 1): the exact
bounds check (passes/analysis/index_bounds.py), size requirements checked when sizes are bound, the evaluator."""
import numpy as np
import pytest

from gir.errors import GirError
from gir.evaluate import evaluate
from gir.parser import parse_text
from gir.verifier import verify_module

ROPE = open(__file__.rsplit("/tests/", 1)[0] + "/samples/rope_flat.gir").read()


def _func(text):
    module = parse_text(text, "t.gir")
    verify_module(module)
    return module.funcs[0]


def _rope_ref(x, cs, sn):
    c, s = np.repeat(cs, 2, axis=1), np.repeat(sn, 2, axis=1)
    partner = np.stack([-x[:, 1::2], x[:, 0::2]], axis=2).reshape(x.shape)
    return x * c + partner * s


@pytest.mark.parametrize("S,K", [(1, 1), (3, 7), (5, 33)])
def test_rope_flat_matches_numpy(S, K):
    rng = np.random.default_rng(13 + S * K)
    x, cs, sn = (rng.standard_normal(s) for s in ((S, 2 * K), (S, K), (S, K)))
    y = evaluate(_func(ROPE), {"x": x, "cs": cs, "sn": sn})["y"]
    ref = _rope_ref(x, cs, sn)
    assert np.linalg.norm(y - ref) <= 1e-6 * np.linalg.norm(ref)


@pytest.mark.parametrize("sizes,what,col", [((3, 7, 4), "past the extent D", 63), ((3, 8, 3), "past the extent K", 48)])
def test_size_requirement_is_located(sizes, what, col):
    """`x[s, d + 1]` under `d % 2 == 0` needs D even; `cs[s, d // 2]` needs D <= 2K: checked at binding."""
    S, D, K = sizes
    f = _func(ROPE)
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal((S, D)), "cs": rng.standard_normal((S, K)), "sn": rng.standard_normal((S, K))}
    with pytest.raises(GirError) as e:
        evaluate(f, inputs)
    text = e.value.format() if hasattr(e.value, "format") else str(e.value)
    assert f"at these sizes (S={S}, D={D}, K={K}): it can go {what}" in text
    assert f":3:{col}:" in text


def test_guarded_shift_is_accepted_and_evaluated():
    """Before issue 13 the guard was ignored and `x[i + 1]` was refused."""
    f = _func("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = select(i + 1 < N, x[i + 1], 0.0)\n}\n")
    for n in (1, 2, 31):
        x = np.random.default_rng(n).standard_normal(n) + 3.0
        y = evaluate(f, {"x": x})["y"]
        assert np.array_equal(y, np.append(x[1:], 0.0).astype(np.float32))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32"])
def test_modulo_and_floor_division_by_constants(dtype):
    text = (f"func f(w: {dtype}[N], t: {dtype}[4]) -> (y: {dtype}[N], z: {dtype}[N]) {{\n"
            "  y[i] = w[i] + t[(i + 3) % 4]\n"
            "  z[i] = w[2 * (i // 2)] - w[min(i + 1, N - 1)]\n}\n")
    f = _func(text)
    for n in (1, 7, 33):
        rng = np.random.default_rng(n)
        w, t = rng.integers(1, 9, n).astype(np.float64), rng.integers(1, 9, 4).astype(np.float64)
        out = evaluate(f, {"w": w, "t": t})
        i = np.arange(n)
        assert np.array_equal(np.asarray(out["y"], np.float64), w + t[(i + 3) % 4])
        assert np.array_equal(np.asarray(out["z"], np.float64), w[2 * (i // 2)] - w[np.minimum(i + 1, n - 1)])


def test_data_dependent_guard_is_ignored():
    """A guard that reads a tensor is not affine: the access is checked as if unguarded (an error here)."""
    with pytest.raises(GirError, match="out of bounds"):
        _func("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = select(x[i] > 0.0, x[i // 2 + N], 0.0)\n}\n")


def test_non_affine_guard_is_ignored():
    """A guard isl cannot read (`i * N`: a product of an index and a size) is ignored like a data-dependent one;
    it raised an isl syntax error traceback from `gir check` before."""
    f = _func("func f(a: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = select(i * N + j < 5, a[i, j], 0.0)\n}\n")
    out = evaluate(f, {"a": np.ones((2, 3), np.float32)}, {"M": 2, "N": 3})
    assert np.array_equal(np.asarray(out["y"]), [[1, 1, 1], [1, 1, 0]])
    with pytest.raises(GirError, match="out of bounds"):
        _func("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = select(i * N < 3, x[i + N], 0.0)\n}\n")


def test_slice_extent_memo_keeps_constant_types_apart():
    """slice_extent is memoized; Const(0) == Const(0.0) == Const(False) (and hash alike), but only integers are
    index constants: whichever comes first, a float or bool bound has no constant length and an int one has. In
    one process, a kernel slicing `v[0.0:4.0]` made a later, valid `v[0:4]` fail verification."""
    from gir import ir
    from gir.affine import slice_extent
    want = {"float": None, "int": 4, "bool": None}
    bounds = {"float": (0.0, 4.0), "int": (0, 4), "bool": (False, 4)}   # (equal tuples: keyed by name)
    for first in want:
        for kind in [first] + [k for k in want if k != first]:
            a, b = bounds[kind]
            assert slice_extent(ir.Const(a), ir.Const(b)) == want[kind], (first, kind)
    n = ir.Var("N")
    assert slice_extent(ir.BinOp("+", n, ir.Const(1.0)), ir.BinOp("+", n, ir.Const(5))) is None
    assert slice_extent(ir.BinOp("+", n, ir.Const(1)), ir.BinOp("+", n, ir.Const(5))) == 4
