"""Long rows on the MLU (rows that do not fit NRAM are chunked: passes/schedule_mlu/longrows.py) and MLU
scheduling errors as GirError. A small `nram` budget forces chunking at small sizes."""
import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.errors import GirError
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func


def _func(name, dt="f32"):
    src = open(f"samples/{name}.gir").read()
    return parse_text(src.replace("f32[", dt + "[") if dt != "f32" else src).funcs[0]


def _check(name, dt, m, n, nram, seed=0):
    f = _func(name, dt)
    m = m if m * 2 > 32 else m + 32   # (16 rows or fewer are cut over the cores instead: splitrows.py)
    sizes = {"M": m, "N": n}
    e = schedule_mlu(f, sizes, nram=nram)
    src = "".join(k.source for k in emit_func(e))
    assert "for (int ch1_" in src                      # chunked: the first pass is a loop over chunks
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    res = run_func(e, x, sizes)
    ref = evaluate(f, x, sizes)
    tol = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}[dt]
    for k, want in ref.items():
        want = np.asarray(want, np.float64)
        got = res.outputs[k].astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
    return res


@pytest.mark.parametrize("name,dt,m,n,nram", [   # (budgets just below what one row's single-pass kernel needs)
    ("softmax", "f32", 1, 1025, 30000), ("softmax", "f32", 7, 1000, 28000), ("softmax", "f16", 4, 1025, 28000),
    ("log_softmax", "f32", 33, 1025, 30000), ("log_softmax", "bf16", 5, 700, 26000),
    ("layernorm", "f32", 7, 1025, 30000), ("layernorm", "bf16", 3, 1000, 30000),
    ("rmsnorm", "f32", 1, 1025, 30000), ("rmsnorm", "f16", 6, 1025, 30000), ("row_sum", "f32", 5, 1025, 24000),
])
def test_long_rows_match_evaluator(name, dt, m, n, nram):
    _check(name, dt, m, n, nram, seed=m + n)


def test_online_softmax_reads_x_twice():
    # pass 1 (online max + rescaled sum) and pass 2 read x once each; y is written once: 1.5x compulsory
    f = _func("softmax")
    e = schedule_mlu(f, {"M": 64, "N": 4096}, nram=60000)
    res = run_func(e, None, {"M": 64, "N": 4096}, values=False)
    assert res.stats["gdram_read_bytes"] == pytest.approx(2 * 64 * 4096 * 4, rel=0.01)
    assert res.stats["gdram_write_bytes"] == pytest.approx(64 * 4096 * 4, rel=0.01)


def test_bench_shape_softmax_timing_only():
    # 4096 x 32768 rows fit NRAM single-pass since in-place tiles (test_mlu_single_pass_long.py); 65536 do not
    res = run_func(_func("softmax"), None, {"M": 1024, "N": 65536}, values=False)
    compulsory = 2 * 1024 * 65536 * 4
    assert res.stats["gdram_traffic_bytes"] == pytest.approx(1.5 * compulsory, rel=0.01)
    assert res.stats["seconds"] < 1.3 * 1.5 * compulsory / 307e9


def test_errors_are_gir_errors():
    with pytest.raises(GirError, match="no chunk fits NRAM"):
        schedule_mlu(_func("softmax"), {"M": 4, "N": 300000}, nram=10000)
    with pytest.raises(GirError, match="needs values for sizes"):
        schedule_mlu(_func("softmax"), {"M": 4})


def test_chunked_rows_of_infinities():
    """The chunked reductions started from -3e38 / 3e38: a row of -inf only had max -3e38 and argmax N (out of
    range, a review's finding); they start from -inf / +inf now, except the running max of an online softmax,
    which stays finite so that a chunk of -inf only (a masked prefix) rescales by exp(-3e38 - m) = 0, not NaN."""
    text = ("func f(x: f32[M, N]) -> (k: i32[M], j: i32[M], mx: f32[M], mn: f32[M]) {\n  k[r] = argmax(x[r, i])\n"
            "  j[r] = argmin(x[r, i])\n  mx[r] = max(x[r, i])\n  mn[r] = min(x[r, i])\n}\n")
    f, sizes = parse_text(text).funcs[0], {"M": 37, "N": 1025}
    x = np.random.default_rng(3).standard_normal((37, 1025)).astype(np.float32)
    x[1], x[5], x[9, :700] = -np.inf, np.inf, -np.inf
    e = schedule_mlu(f, sizes, nram=40000)
    assert "for (int ch1_" in "".join(k.source for k in emit_func(e))
    out = run_func(e, {"x": x}, sizes).outputs
    for name, want in (("k", x.argmax(1)), ("j", x.argmin(1)), ("mx", x.max(1)), ("mn", x.min(1))):
        assert np.array_equal(np.asarray(out[name]), want), name
    f = _func("softmax")
    x[2, :1000] = -np.inf
    out = run_func(schedule_mlu(f, sizes, nram=30000), {"x": x}, sizes).outputs["y"]
    with np.errstate(all="ignore"):
        ref = evaluate(f, {"x": x}, sizes)["y"]
    assert np.array_equal(np.isnan(out), np.isnan(ref)) and np.isnan(out[1]).all()
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(out[ok], ref[ok], rtol=1e-5, atol=1e-6)
