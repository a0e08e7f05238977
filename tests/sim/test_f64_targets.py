"""f64 on every path: the evaluator, the SIMT simulator, gir.compile, the emitted CUDA on the CPU emulator, nvcc and
hipcc on the emitted kernels; mlu-sim refuses it with a located error. Values computed from an f64 operand are
computed in f64 (registers, accumulators, literals, math functions); casts to and from every type. Judged with
gir.verdict (f64: 1e-12 norm-wise)."""
from __future__ import annotations

import shutil
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import gir
from gir.errors import GirError
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.verdict import compare

MIX = """
func mix(x: f64[M, N], h: f16[M, N], k: i32[M, N], g: f32[N]) -> (y: f64[M, N], s: f64[M], t: f32[M, N],
                                                                  u: bf16[M, N], c: i64[M, N], r: f64[N]) {
  y[i, j] = x[i, j] * 0.1 + f64(h[i, j]) + f64(k[i, j]) / 3 + sin(x[i, j]) + pow(abs(x[i, j]), 0.5) + g[j]
  s[i] = mean(x[i, j] * x[i, j]) + prod(select(x[i, j] > 0.0, 1.0000001, f64(0.9999999)))
  t[i, j] = f32(x[i, j]) + f32(f64(h[i, j]) * 1e-30 * 1e30)
  u[i, j] = bf16(x[i, j] * 3.0)
  c[i, j] = i64(x[i, j] * 1000.0) + i64(gelu(x[i, j]) * 100.0)
  r[j] = max(exp(x[i, j] * 0.5)) - min(log1p(abs(x[i, j])))
}
"""
SIZES = [{"M": 1, "N": 1}, {"M": 7, "N": 33}, {"M": 37, "N": 130}]


def case(sizes):
    func = parse_text(MIX, "<mix>").funcs[0]
    rng = np.random.default_rng(zlib.crc32(f"f64:{sorted(sizes.items())}".encode()))
    inp = random_inputs(func, sizes, rng)
    return func, inp, evaluate(func, {k: v.copy() for k, v in inp.items()})


def judge(outputs: dict, ref: dict, func, where: str) -> None:
    for p in func.results:
        got = np.asarray(outputs[p.name])
        assert got.dtype == p.type.dtype.numpy, f"{where} {p.name}: {got.dtype}"
        v = compare(got, ref[p.name], p.type.dtype)
        assert v.passed, f"{where} {p.name}: {v.reason}"


def test_evaluator_computes_in_f64():
    """y has an f64 intermediate: 1 + 1e-12 survives (it would round away in f32)."""
    func = parse_text("func f(x: f64[N]) -> (y: f64[N]) {\n  t[i] = x[i] + 1e-12\n  y[i] = t[i] - x[i]\n}\n",
                      "<f>").funcs[0]
    y = evaluate(func, {"x": np.ones(3)})["y"]
    assert y.dtype == np.float64 and np.allclose(y, 1e-12, rtol=1e-3)
    from gir.shapes import func_info
    assert func_info(func).types["t"].dtype.value == "f64"


def test_literals_of_f64_range_in_f64_statements():
    """A literal beyond f32 is fine where the arithmetic is f64 (evaluator, sim, the CUDA emulator: the lowered
    kernels pass the kernel verifier); in f32 arithmetic it stays a located error."""
    from gir.shapes import func_info
    text = "func f(x: f64[N], z: f32[N]) -> (y: f64[N]) {\n  y[i] = x[i] * 1e300 + f64(z[i]) * 1e-300\n}\n"
    func = parse_text(text, "<lit>").funcs[0]
    sizes = {"N": 37}
    inp = random_inputs(func, sizes, np.random.default_rng(5))
    ref = evaluate(func, {k: v.copy() for k, v in inp.items()})
    assert np.isfinite(ref["y"]).all() and np.abs(ref["y"]).max() > 1e299
    judge({"y": gir.compile(text, target="sim", sizes=sizes, cache=False)(**inp)}, ref, func, "sim")
    from gir.targets.cuda_emu import available, run_func
    if available():
        from gir.passes.schedule import lower_func
        res = run_func(lower_func(func, "cuda", {"sizes": sizes}), {k: v.copy() for k, v in inp.items()}, sizes)
        judge(res.outputs, ref, func, "cuda_emu")
    with pytest.raises(GirError) as e:
        func_info(parse_text("func f(z: f32[N]) -> (y: f64[N]) {\n  y[i] = z[i] * 1e300\n}\n", "<lit32>").funcs[0])
    assert "<lit32>:2:17" in str(e.value) and "overflows f32" in str(e.value)


@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_sim(sizes):
    func, inp, ref = case(sizes)
    kernel = gir.compile(MIX, target="sim", sizes=sizes, cache=False)
    outs = kernel(**{k: v.copy() for k, v in inp.items()})
    judge(dict(zip([p.name for p in func.results], outs)), ref, func, f"sim {sizes}")


@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_cuda_emulator(sizes):
    from gir.targets.cuda_emu import available, run_func
    if not available():
        pytest.skip("g++ with C++20 and _Float16 not found")
    from gir.passes.schedule import lower_module
    func, inp, ref = case(sizes)
    explicit = lower_module(parse_text(MIX, "<mix>"), "cuda", {"sizes": sizes}).funcs[0]
    res = run_func(explicit, {k: v.copy() for k, v in inp.items()}, sizes)
    judge(res.outputs, ref, func, f"cuda_emu {sizes}")


def _kernels(target):
    from gir.codegen import emit_module
    from gir.passes.schedule import lower_module
    return emit_module(lower_module(parse_text(MIX, "<mix>"), target, {"sizes": SIZES[-1]}), target)


def test_emitted_cuda_is_double():
    src = "".join(k.source for k in _kernels("cuda"))
    assert "const double* __restrict__ x" in src and "double* __restrict__ y" in src
    assert "sin(" in src and "sinf(" not in src   # the f64 math library, not the f32 one
    assert "0.1f" not in src                       # literals in f64 arithmetic keep their f64 value


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_nvcc_compiles_f64_kernels():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu_codegen"))
    from codegen_nvcc import ptxas_stats
    kernels = _kernels("cuda")
    stats = ptxas_stats(kernels)   # also lists the f64 library's own functions (__internal_accurate_pow, ...)
    assert {k.name for k in kernels} <= set(stats)
    assert all(stats[k.name]["spill_stores"] == 0 and stats[k.name]["spill_loads"] == 0 for k in kernels), stats


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed")
def test_hipcc_compiles_f64_kernels():
    from gir.codegen import combined_source
    from gir.targets.hip import compile_source
    kernels = _kernels("hip")
    res = compile_source(combined_source(kernels))
    assert {k.name for k in kernels} <= set(res.kernels)


@pytest.mark.parametrize("src, col", [(MIX, 10), ("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = f32(f64(x[i]))\n}\n",
                                                  14)])
def test_mlu_refuses_f64_located(src, col):
    with pytest.raises(GirError) as e:
        gir.compile(src, target="mlu-sim", sizes={"M": 4, "N": 8} if "M" in src else {"N": 8}, cache=False)
    d = e.value.diagnostics[0]
    assert "f64" in d.message and "mlu-sim" in d.message and d.loc is not None and d.loc.col == col, d


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_f64_bytes_ratio_not_above_f32(name):
    """The search counts 8-byte elements: the f64 variant of a sample moves no more bytes per compulsory byte on
    sim than the f32 one."""
    from gir.passes.schedule import lower_func
    from gir.targets.sim import run_func
    from gir.passes.analysis.traffic import compulsory_bytes
    text = (Path(__file__).resolve().parents[2] / "samples" / f"{name}.gir").read_text()
    ratios = []
    for t in (text, text.replace("f32", "f64")):
        func = parse_text(t, f"<{name}>").funcs[0]
        sizes = {s: 257 if s == "M" else 1000 for s in func.size_symbols()}
        low = lower_func(func, "sim", {"sizes": sizes})
        st = run_func(low, random_inputs(func, sizes, np.random.default_rng(0)), sizes, check_races=False).stats
        ratios.append(st.global_bytes / sum(compulsory_bytes(func, sizes)))
    assert ratios[1] <= ratios[0] + 1e-9, ratios
