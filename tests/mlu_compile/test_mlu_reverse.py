"""MLU axis reversals (passes/schedule_mlu/reverse.py: `__bang_mirror` row tiles) and the explicit `reverse()`."""
import re

import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.codegen.mlu.report import compulsory_bytes
from gir import ir
from gir.errors import GirError
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.printer import print_module
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func

SAMPLE = "samples/reverse_rows.gir"
VARIANTS = {   # the leading axis, both axes, 1-D, and 16-bit / int element types
    "rows": "func rev(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[M - 1 - i, j]\n}\n",
    "both": "func rev(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[M - 1 - i, N - 1 - j]\n}\n",
    "vec": "func rev(x: f32[N]) -> (y: f32[N]) {\n  y[j] = x[N - 1 - j]\n}\n",
    "f16": "func rev(x: f16[M, N]) -> (y: f16[M, N]) {\n  y[i, j] = x[i, N - 1 - j]\n}\n",
    "bf16_both": "func rev(x: bf16[M, N]) -> (y: bf16[M, N]) {\n  y[i, j] = x[M - 1 - i, N - 1 - j]\n}\n",
    "i32_rows": "func rev(x: i32[M, N]) -> (y: i32[M, N]) {\n  y[i, j] = x[M - 1 - i, j]\n}\n",
    "bool_both": "func rev(x: bool[M, N]) -> (y: bool[M, N]) {\n  y[i, j] = x[M - 1 - i, N - 1 - j]\n}\n",
    "i64": "func rev(x: i64[M, N]) -> (y: i64[M, N]) {\n  y[i, j] = x[i, N - 1 - j]\n}\n",
}


def _func(name):
    return parse_file(SAMPLE).funcs[0] if name == "sample" else parse_text(VARIANTS[name]).funcs[0]


def _sizes(f, m, n):
    return {k: v for k, v in (("M", m), ("N", n)) if k in f.size_symbols()}


def _compiled(f, sizes, **kw):
    """The explicit function (round-trips through print/parse, one fused kernel) and its MLU source."""
    e = schedule_mlu(f, sizes, **kw)
    text = print_module(ir.Module((e,)))
    assert print_module(parse_text(text)) == text
    assert [k.name for k in e.kernels] == [f"{f.name}_mlu"]          # not the scalar fallback (`_k0`)
    return text, "".join(k.source for k in emit_func(e))


def _check_values(f, sizes, seed, **kw):
    from gir.passes.schedule_mlu import schedule_mlu as sched
    from gir.targets.mlu import parse_program, simulate
    e = sched(f, sizes, **kw)
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    if kw:   # schedule options (a small NRAM budget): run the emitted kernel directly
        src = emit_func(e)[0]
        dt = {"f32": np.float32}[f.params[0].type.dtype.value]
        shape = tuple(sizes[d] for d in f.params[0].type.shape)
        y = np.full(shape, np.nan, dt)
        out = simulate(parse_program(src.source), src.name, {"x": x["x"].astype(dt), "y": y},
                       src.metadata["task_dim"]).outputs
    else:
        out = run_func(f, x, sizes).outputs
    for k, want in evaluate(f, x, sizes).items():
        np.testing.assert_array_equal(np.asarray(out[k]).astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("m,n", [(1, 1), (5, 1), (33, 37), (70, 1025), (1, 4096), (40, 64), (3, 200)])
def test_reverse_rows_values(m, n):
    f = _func("sample")
    sizes = {"M": m, "N": n}
    text, src = _compiled(f, sizes)
    assert "reverse(" in text
    assert "__bang_mirror(" in src and "for (int r_" not in src and "[r_" not in src   # no scalar loop
    _check_values(f, sizes, seed=m * 7 + n)


@pytest.mark.parametrize("name,m,n", [("rows", 99, 99), ("rows", 1, 5), ("rows", 100, 1000), ("both", 33, 37),
                                      ("both", 65, 1), ("vec", 1, 1000), ("vec", 1, 1), ("f16", 9, 100),
                                      ("bf16_both", 34, 70), ("i32_rows", 40, 3), ("bool_both", 70, 300),
                                      ("i64", 33, 37)])
def test_reverse_variants_values(name, m, n):
    f = _func(name)
    sizes = _sizes(f, m, n)
    text, src = _compiled(f, sizes)
    assert "__bang_" not in src.replace("__bang_mirror(", "") and "[r_" not in src      # mirrors only, no scalar loop
    x = random_inputs(f, sizes, np.random.default_rng(m + n))
    res = run_func(f, x, sizes)
    for k, want in evaluate(f, x, sizes).items():
        np.testing.assert_array_equal(res.outputs[k].astype(np.float64), want.astype(np.float64))


def test_reversed_leading_axis_uses_no_extra_copies():
    """Row order is flipped on chip (a flat mirror plus a row mirror), so traffic stays compulsory."""
    f = _func("rows")
    sizes = {"M": 512, "N": 1000}
    text, src = _compiled(f, sizes)
    assert "reverse(" in text and ", 0)" in text and src.count("__bang_mirror(") == 2
    r = run_func(f, None, sizes, values=False)
    assert r.stats["gdram_read_bytes"] == r.stats["gdram_write_bytes"] == 512 * 1000 * 4


@pytest.mark.parametrize("name,m,n", [("sample", 40, 1025), ("sample", 3, 1025), ("both", 5, 1000),
                                      ("vec", 1, 3000), ("rows", 40, 5000), ("sample", 33, 5000)])
def test_long_rows_are_chunked(name, m, n):
    """With a 16 KiB NRAM budget a row no longer fits one tile: column chunks, input [s, s+L) -> output
    [N-s-L, N-s); both the many-rows (rows cyclic) and few-rows (chunks cyclic) layouts; N = 5000 gives 4 full
    chunks per row, so the pipelined chunk loop reaches its steady state (load t+1 and store t-1 in one step)."""
    f = _func(name)
    sizes = _sizes(f, m, n)
    text, src = _compiled(f, sizes, nram=16 * 1024)
    if name == "rows":   # one-row tiles of a leading-axis reversal: GDRAM->GDRAM copies, nothing on chip
        assert "GDRAM2GDRAM" in src and "__nram__" not in src
    else:
        tile = int(re.search(r"__nram__ \w+ xa\[(\d+)\]", src).group(1)) // 2   # double-buffered load tile
        assert "__bang_mirror(" in src and tile < n and tile * 4 * 4 <= 16 * 1024  # one chunk per tile, in budget
    _check_values(f, sizes, seed=m + n, nram=16 * 1024)


def test_reverse_rows_near_roofline():
    """Timing-only at a moderate size: within 1.15x of the DMA roofline, compulsory traffic only."""
    f = _func("sample")
    sizes = {"M": 2048, "N": 2048}
    r = run_func(f, None, sizes, values=False)
    roof = compulsory_bytes(f, sizes) / MLU370.gdram_bandwidth
    assert r.stats["seconds"] / roof < 1.15
    assert r.stats["gdram_traffic_bytes"] == compulsory_bytes(f, sizes)


def test_opbyop_uses_the_reversal_schedule():
    f = _func("sample")
    e = schedule_mlu(f, {"M": 64, "N": 100}, mode="opbyop")
    assert [k.name for k in e.kernels] == ["reverse_rows_mlu"]


KERNEL = """
func rv(x: f32[8, 64]) -> (y: f32[8, 64]) {
  kernel k with task_dim=1 {
    parallel t in 0..1 @core {
      alloc a: f32[8, 64] @nram
      alloc b: f32[8, 64] @nram
      load a[0:8, 0:64] <- x[0:8, 0:64]
      b[0:8, 0:64] = reverse(a[0:8, 0:64])
      store y[0:8, 0:64] <- b[0:8, 0:64]
    }
  }
}
"""


@pytest.mark.parametrize("call,flip", [("reverse(a[0:8, 0:64])", lambda x: x[:, ::-1]),
                                       ("reverse(a[0:8, 0:64], 1)", lambda x: x[:, ::-1]),
                                       ("reverse(a[0:8, 0:64], 0)", lambda x: x[::-1])])
def test_reverse_builtin_runs_on_both_simulators(call, flip):
    mod = parse_text(KERNEL.replace("reverse(a[0:8, 0:64])", call))
    x = np.random.default_rng(5).standard_normal((8, 64)).astype(np.float32)
    from gir.targets.sim import run_func as sim_run   # the SIMT reference simulator runs MLU-family GIR too
    out = sim_run(mod.funcs[0], {"x": x})
    got = out.outputs["y"] if hasattr(out, "outputs") else out["y"]
    np.testing.assert_array_equal(got, flip(x))
    np.testing.assert_array_equal(run_func(mod.funcs[0], {"x": x}).outputs["y"], flip(x))


@pytest.mark.parametrize("bad,msg", [
    ("b[0:8, 0:64] = reverse(a[0, 0:64])", "reverse() needs a 2-D tile"),
    ("b[0:8, 0:64] = reverse(a[0:8, 0:64], 0, 1)", "takes 1 or 2 arguments"),
    ("b[0:8, 0:64] = reverse(a[0:8, 0:64], 2)", "axis of 0 or 1"),
    ("b[0:8, 0:64] = reverse(a[0:8, 0:64], t)", "axis of 0 or 1"),
    ("b[0:8, 0:64] = reverse(a[0:8, 0:32])", "does not broadcast"),
])
def test_reverse_builtin_errors(bad, msg):
    from gir.verifier import verify_module
    text = KERNEL.replace("b[0:8, 0:64] = reverse(a[0:8, 0:64])", bad)
    with pytest.raises(GirError, match=msg.replace("(", r"\(").replace(")", r"\)")) as info:
        verify_module(parse_text(text))
    assert info.value.loc is not None and info.value.loc.line == 8


def test_emitter_rejects_reverse_of_padded_rows():
    """Axis 1 mirrors whole pitches: a region narrower than its buffer's pitch would shift, so it is refused."""
    text = KERNEL.replace("reverse(a[0:8, 0:64])", "reverse(a[0:8, 0:64])").replace(
        "f32[8, 64] @nram\n      alloc b: f32[8, 64]", "f32[8, 40] @nram\n      alloc b: f32[8, 40]")
    text = text.replace("a[0:8, 0:64]", "a[0:8, 0:40]").replace("b[0:8, 0:64]", "b[0:8, 0:40]")
    text = text.replace("f32[8, 64]) -> (y: f32[8, 64])", "f32[8, 40]) -> (y: f32[8, 40])")
    text = text.replace("x[0:8, 0:64]", "x[0:8, 0:40]").replace("y[0:8, 0:64]", "y[0:8, 0:40]")
    mod = parse_text(text)
    with pytest.raises(GirError, match="reverses"):
        emit_func(mod.funcs[0])
