"""bool / i32 tensors in the MLU row model (masked_softmax, relu_mask), the per-row gather of cross_entropy,
the op-by-op baseline built from the fused per-statement schedules, and the report's helpers."""
import re
import time

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.printer import print_module
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func


def _f(name):
    return parse_file(f"samples/{name}.gir").funcs[0]


def _check(f, sizes, seed, mode="fused", inputs=None):
    x = inputs or random_inputs(f, sizes, np.random.default_rng(seed))
    res = run_func(f, x, sizes, mode=mode)
    ref = evaluate(f, x, sizes)
    for k, want in ref.items():
        got = res.outputs[k]
        assert got.dtype == np.asarray(want).dtype, k
        if got.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            want = np.asarray(want, np.float64)
            scale = np.max(np.abs(want)) + 1e-30
            assert np.max(np.abs(got - want), initial=0.0) / scale < 1e-5, (k, sizes)
    return res


def _kernels(res):
    return [k.name for k in res.explicit.kernels]


SIZES = [(1, 1), (7, 7), (1, 1000), (7, 1025), (1025, 7), (33, 1000)]


@pytest.mark.parametrize("name", ["masked_softmax", "relu_mask"])
@pytest.mark.parametrize("m,n", SIZES)
def test_bool_samples_run_fused(name, m, n):
    f = _f(name)
    res = _check(f, {"M": m, "N": n}, seed=m * 7919 + n)
    assert _kernels(res) == [f"{name}_mlu"]          # one fused kernel, no scalar fallback
    assert "__bang_uchar2float" in res.source or "__bang_float2uchar" in res.source


def test_relu_mask_counts_and_mask_are_exact():
    f = _f("relu_mask")
    sizes = {"M": 9, "N": 1025}
    x = {"x": np.random.default_rng(3).uniform(-1, 1, (9, 1025)).astype(np.float32)}
    x["x"][0] = -1.0            # an all-inactive row
    x["x"][1] = 1.0             # an all-active row: count N
    res = _check(f, sizes, 0, inputs=x)
    assert res.outputs["cnt"][0] == 0 and res.outputs["cnt"][1] == 1025


def test_masked_softmax_fully_masked_row():
    f = _f("masked_softmax")
    sizes = {"M": 3, "N": 130}
    rng = np.random.default_rng(4)
    x = {"x": rng.normal(size=(3, 130)).astype(np.float32), "mask": rng.random((3, 130)) < 0.5}
    x["mask"][1] = False
    _check(f, sizes, 0, inputs=x)


@pytest.mark.parametrize("m,n", [(1, 1), (7, 1025), (1025, 7), (5, 1000)])
def test_cross_entropy_gathers(m, n):
    f = _f("cross_entropy")
    sizes = {"M": m, "N": n}
    rng = np.random.default_rng(m + n)
    x = random_inputs(f, sizes, rng)
    x["target"] = rng.integers(-1, n + 1, m).astype(np.int32)   # incl. out-of-range targets: xt = 0
    x["target"][0] = n - 1
    res = _check(f, sizes, 0, inputs=x)
    text = print_module(ir.Module((res.explicit,)))
    assert "gather_cols(" in text and " == " not in text        # no per-element index compare left
    assert parse_text(text).funcs[0] == res.explicit             # round-trips


def test_cross_entropy_timing_only_and_roofline():
    f = _f("cross_entropy")
    sizes = {"M": 4096, "N": 4096}
    from gir.codegen.mlu.report import compulsory_bytes
    t = run_func(f, None, sizes, values=False).stats["seconds"]
    assert t / (compulsory_bytes(f, sizes) / 307e9) < 1.15       # was 1.36 with compare + select + sum


@pytest.mark.parametrize("m,n", [(64, 1000), (96, 70), (32, 1), (1000, 777), (2039, 300), (2144, 100)])
def test_cross_entropy_hoists_row_vectors(m, n):
    """Blocked tiles, target loaded and loss_row stored once per busy core (hoist.py). Where M % 32 != 0 (masked
    moves, the last busy core's run cut short) the cost model ranks it against the cyclic kernel (extended.py:
    taken here; cross_entropy at 4099 x 1021 1.504x -> 1.265x the DMA roofline; short rows keep the cyclic
    one, M = 1000 N = 7 46.1x). M = 2144 = 32 x 67: 8-row tiles, not the 1-row divisor (2.32x -> 1.39x)."""
    f = _f("cross_entropy")
    sizes = {"M": m, "N": n}
    rng = np.random.default_rng(m * n)
    x = random_inputs(f, sizes, rng)
    x["target"] = rng.integers(-2, n + 2, m).astype(np.int32)
    res = _check(f, sizes, 0, inputs=x)
    text = print_module(ir.Module((res.explicit,)))
    assert "target_all" in text and "loss_row_all" in text
    assert parse_text(text).funcs[0] == res.explicit             # round-trips
    rows = int(re.search(r"load x_t\[0:(\d+),", text).group(1))
    assert rows > 1 or m * n < 32 * 64, rows                     # not the 1-row divisor of M / 32 = 67
    loop = text[text.index("for it_"):]
    assert "<- target[" not in loop.split("}")[0] and "loss_row[" not in loop.split("}")[0]


@pytest.mark.parametrize("name,sizes", [("relu_mask", {"M": 7, "N": 1025}), ("cross_entropy", {"M": 33, "N": 70}),
                                        ("layernorm", {"M": 5, "N": 130}), ("mse_loss", {"M": 7, "N": 65}),
                                        ("col_sum", {"M": 9, "N": 70})])
def test_opbyop_uses_vector_schedules(name, sizes):
    f = _f(name)
    res = _check(f, sizes, seed=11, mode="opbyop")
    names = _kernels(res)
    vec = [n for n in names if not re.search(r"_k\d+$", n)]
    n_stmts = len(f.body)
    assert len(vec) >= n_stmts - 1, names                        # at most one row-only statement is scalar
    fused = run_func(f, None, sizes, values=False).stats["seconds"]
    base = run_func(f, None, sizes, mode="opbyop", values=False).stats["seconds"]
    assert base >= fused * 0.999


def test_opbyop_single_statement_equals_fused():
    f = _f("row_sum")
    sizes = {"M": 100, "N": 300}
    a = schedule_mlu(f, sizes, mode="opbyop")
    assert not any(re.search(r"_k\d+$", k.name) for k in a.kernels)
    fused = run_func(f, None, sizes, values=False).stats["seconds"]
    base = run_func(f, None, sizes, mode="opbyop", values=False).stats["seconds"]
    assert base == pytest.approx(fused, rel=1e-9)


def test_report_helpers(monkeypatch):
    from gir.codegen.mlu import report
    f = _f("relu_mask")
    sizes = {"M": 10, "N": 20}
    assert report.compulsory_bytes(f, sizes) == 10 * 20 * 4 + 10 * 20 * 4 + 10 * 20 * 1 + 10 * 4
    assert report.schedule_kind(f, sizes) == "fused"
    # a transposed read next to a plain one: a permutation of its own, then the sum (passes/schedule_mlu/permuted.py)
    odd = parse_text("func g(x: f32[N, N]) -> (y: f32[N, N]) {\n  y[i, j] = x[j, i] + x[i, j]\n}\n").funcs[0]
    assert report.schedule_kind(odd, {"N": 20}) == "per-statement"
    # an integer result of a column reduction of floats: no vector schedule (remarked)
    odd = parse_text("func g(x: f32[A, B, C]) -> (y: i32[B, C]) {\n  y[b, c] = min(i32(x[a, b, c] * 4.0))\n}\n")
    assert report.schedule_kind(odd.funcs[0], {"A": 20, "B": 20, "C": 20}) == "scalar fallback"
    monkeypatch.setattr(report, "CAP_S", 0.2)
    with pytest.raises(report.Capped):  # the cap interrupts the call (no wall-clock assertion here)
        report.capped(lambda: time.sleep(5))
    assert report.capped(lambda a: a + 1, 1) == 2


def test_offset_regions_only_in_row_copies():
    import dataclasses
    from gir.codegen.mlu import emit_func
    from gir.errors import GirError
    f = _f("cross_entropy")
    e = schedule_mlu(f, {"M": 64, "N": 70})

    def bump(stmts):
        out = []
        for s in stmts:
            if isinstance(s, ir.Assign) and isinstance(s.value, ir.Ref) and s.value.name == "target_all":
                s = dataclasses.replace(s, value=ir.BinOp("+", s.value, ir.Const(1)))
            elif hasattr(s, "body") and isinstance(s.body, tuple):
                s = dataclasses.replace(s, body=tuple(bump(s.body)))
            out.append(s)
        return out
    emit_func(e)                                                    # as scheduled: fine
    bad = dataclasses.replace(e, body=tuple(bump(e.body)))
    assert bad != e
    with pytest.raises(GirError, match="at an offset"):
        emit_func(bad)


@pytest.mark.parametrize("bad,needle", [
    ("gather_cols(x_t[0:2, 0:70], target_t[0:2, 0:1], x_t[0:2, 0:70])", "takes 2 arguments"),
    ("gather_cols(x_t[0:2, 0:70], b1[0:2, 0:1] + x_t[0:2, 0:70])", "needs a [R, C] tile and [R, 1] indices"),
])
def test_gather_cols_is_checked(bad, needle):
    from gir.errors import GirError
    from gir.verifier import verify_module
    e = schedule_mlu(_f("cross_entropy"), {"M": 64, "N": 70})
    text = print_module(ir.Module((e,)))
    good = "gather_cols(x_t[0:2, 0:70], target_t[0:2, 0:1])"
    assert good in text
    with pytest.raises(GirError, match=re.escape(needle)):
        verify_module(parse_text(text.replace(good, bad)))
