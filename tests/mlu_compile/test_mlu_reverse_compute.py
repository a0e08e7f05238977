"""Element-wise compute on column reversals (passes/schedule_mlu/reverse_compute.py): one fused row-model kernel,
reversed operands mirrored on chip (`reverse()` / `__bang_mirror`)."""
import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.codegen.mlu.report import compulsory_bytes
from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.printer import print_module
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func

EXPRS = {
    "scale": ("x: f32[M, N]", "f32", "x[i, N - 1 - j] * 2.0"),
    "exp_bias": ("x: f32[M, N], b: f32[N]", "f32", "exp(x[i, N - 1 - j]) + b[j]"),
    "self_diff": ("x: f32[M, N]", "f32", "x[i, N - 1 - j] - x[i, j]"),
    "rev_bias": ("x: f32[M, N], b: f32[N], s: f32[M]", "f32", "x[i, N - 1 - j] * b[N - 1 - j] + s[i]"),
    "two": ("x: f32[M, N], z: f32[M, N]", "f32", "max(x[i, N - 1 - j], z[i, j]) / (1.0 + abs(z[i, N - 1 - j]))"),
    "f16": ("x: f16[M, N], b: bf16[N]", "f16", "x[i, N - 1 - j] * b[N - 1 - j] - x[i, j] + b[j]"),
    "bf16_exp": ("x: bf16[M, N]", "bf16", "exp(x[i, N - 1 - j] * 0.5)"),
}


def _func(name):
    params, out, expr = EXPRS[name]
    return parse_text(f"func rc({params}) -> (y: {out}[M, N]) {{\n  y[i, j] = {expr}\n}}\n").funcs[0]


def _fused(f, sizes, **kw):
    e = schedule_mlu(f, sizes, **kw)
    text = print_module(ir.Module((e,)))
    assert print_module(parse_text(text)) == text
    return e, text, "".join(k.source for k in emit_func(e))


def _check(f, sizes, seed, rtol):
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    out = run_func(f, x, sizes).outputs
    for k, want in evaluate(f, x, sizes).items():
        np.testing.assert_allclose(np.asarray(out[k]).astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=rtol)


@pytest.mark.parametrize("name,m,n", [("scale", 33, 37), ("scale", 1, 1025), ("exp_bias", 70, 128),
                                      ("exp_bias", 5, 1), ("self_diff", 33, 37), ("self_diff", 40, 128),
                                      ("rev_bias", 9, 1025), ("rev_bias", 1, 37), ("two", 65, 200),
                                      ("f16", 33, 37), ("f16", 3, 1025), ("bf16_exp", 40, 64)])
def test_reverse_compute_values(name, m, n):
    f = _func(name)
    e, text, src = _fused(f, {"M": m, "N": n})
    assert [k.name for k in e.kernels] == ["rc_mlu"]               # one fused kernel, not scalar `_k0` kernels
    assert "[r_" not in src                                          # no scalar element loop
    if n > 1:
        assert "reverse(" in text and "__bang_mirror(" in src
    _check(f, {"M": m, "N": n}, seed=m * 31 + n, rtol=1e-2 if name in ("f16", "bf16_exp") else 1e-5)


def test_read_both_ways_aligned_loads_once():
    """With N a multiple of 64 the mirror reads x's own tile: x is read from GDRAM once."""
    f = _func("self_diff")
    sizes = {"M": 256, "N": 512}
    _, text, _ = _fused(f, sizes)
    assert text.count("<- x[") == 1
    r = run_func(f, None, sizes, values=False)
    assert r.stats["gdram_read_bytes"] == 256 * 512 * 4


def test_reversed_column_vector_mirrored_once_per_core():
    f = _func("rev_bias")
    e, text, src = _fused(f, {"M": 300, "N": 100})
    loop = text.index("for it_")
    assert "reverse(b__rev_st" in text[:loop] and "reverse(b__rev_st" not in text[loop:]


def test_multi_statement_functions():
    """A function of reversal and row-model statements is one fused kernel; with a statement outside the row model
    (a transpose) each statement is scheduled alone and the reversal statement still gets the fused kernel."""
    fused = parse_text("func f(x: f32[M, N]) -> (y: f32[M, N], s: f32[M]) {\n  y[i, j] = x[i, N - 1 - j] * 2.0\n"
                       "  s[i] = sum(x[i, j] * x[i, N - 1 - j])\n}\n").funcs[0]
    split = parse_text("func g(x: f32[M, N], b: f32[N]) -> (y: f32[M, N], z: f32[N, M]) {\n"
                       "  y[i, j] = x[i, N - 1 - j] * 2.0 + b[N - 1 - j]\n  z[j, i] = x[i, j]\n}\n").funcs[0]
    sizes = {"M": 40, "N": 100}
    assert [k.name for k in schedule_mlu(fused, sizes).kernels] == ["f_mlu"]
    assert [k.name for k in schedule_mlu(split, sizes).kernels] == ["g_s0_mlu", "g_s1_mlu"]
    assert [k.name for k in schedule_mlu(fused, sizes, mode="opbyop").kernels] == ["f_s0_mlu", "f_s1_mlu"]
    _check(fused, sizes, seed=3, rtol=1e-5)
    _check(split, sizes, seed=4, rtol=1e-5)


@pytest.mark.parametrize("src", [
    "func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[M - 1 - i, j] * 2.0\n}\n",    # leading axis
    "func f(x: bool[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = f32(x[i, N - 1 - j])\n}\n",    # bool: 64-byte pitch
])
def test_unsupported_reversals_still_run(src):
    """Outside the schedule the function falls back (slow but correct)."""
    f = parse_text(src).funcs[0]
    sizes = {"M": 5, "N": 7}
    assert [k.name for k in schedule_mlu(f, sizes).kernels] != ["f_mlu"]
    _check(f, sizes, seed=5, rtol=0)


def test_reverse_compute_near_roofline():
    """Timing-only: a cheap expression at 2048 x 2048 within 1.15x of the DMA roofline, compulsory traffic."""
    f = _func("scale")
    sizes = {"M": 2048, "N": 2048}
    r = run_func(f, None, sizes, values=False)
    assert r.stats["gdram_traffic_bytes"] == compulsory_bytes(f, sizes)
    assert r.stats["seconds"] / (compulsory_bytes(f, sizes) / MLU370.gdram_bandwidth) < 1.15
