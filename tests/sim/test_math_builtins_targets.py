"""The math builtins (sin cos log1p expm1 softplus silu gelu gelu_tanh floor ceil round clamp) on every runnable
target against the reference evaluator, per element type and at sizes 1, 7 and 33: the SIMT simulator, the
emitted CUDA on the CPU emulator, the simulated MLU (vector ops, and the scalar fallback kernels); the emitted
CUDA/HIP of samples/activations.gir compiles with nvcc/hipcc. Measured accuracy: docs/gir.md, "Math builtins"."""
from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

import gir
from gir.evaluate import evaluate
from gir.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
UNARY = ("sin", "cos", "log1p", "expm1", "softplus", "silu", "gelu", "gelu_tanh", "floor", "ceil", "round")
STEPS = ("floor", "ceil", "round", "clamp")   # exact on every target


def program(dtype: str) -> str:
    """One output per builtin; log1p reads p (> -1), clamp a per-column lower bound and a constant upper one."""
    outs = ", ".join(f"y_{fn}: {dtype}[M, N]" for fn in UNARY + ("clamp",))
    body = [f"  y_{fn}[i, j] = {fn}({'p' if fn == 'log1p' else 'x'}[i, j])" for fn in UNARY]
    body.append("  y_clamp[i, j] = clamp(x[i, j], lo[j], 1.5)")
    return (f"func mb(x: {dtype}[M, N], p: {dtype}[M, N], lo: {dtype}[N]) -> ({outs}) {{\n" + "\n".join(body)
            + "\n}\n")


def inputs(dtype: str, m: int, n: int) -> dict[str, np.ndarray]:
    from gir.ir import DType
    rng = np.random.default_rng(zlib.crc32(f"{dtype}:{m}:{n}".encode()))
    x = np.clip(rng.standard_normal((m, n)) * 3, -9, 9)   # expm1 stays finite in f16
    x[x == 0] = 0.5
    x.flat[::5] = np.round(x.flat[::5] * 2) / 2   # ties for round
    dt = DType(dtype).numpy
    return {"x": x.astype(dt), "p": rng.uniform(-0.9, 3.0, (m, n)).astype(dt),
            "lo": (rng.standard_normal(n) - 1).astype(dt)}


def check(outputs: dict, ref: dict, dtype: str, where: str) -> None:
    tol = 1e-5 if dtype == "f32" else 1e-2
    for name, want in ref.items():
        got, want = np.asarray(outputs[name]).astype(np.float64), np.asarray(want).astype(np.float64)
        assert got.shape == want.shape, f"{where} {name}"
        assert np.isfinite(got).all(), f"{where} {name}: non-finite values"
        if name[2:] in STEPS:
            assert np.array_equal(got, want), f"{where} {name}: {got} != {want}"
            continue
        err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
        assert err < tol, f"{where} {name}: relative error {err:.2e} >= {tol:.0e}"


def reference(dtype, inp):
    func = parse_text(program(dtype), "<mb>").funcs[0]
    return evaluate(func, {k: v.copy() for k, v in inp.items()}, compute_dtype=np.float64)


SIZES = [(1, 1), (7, 7), (33, 33)]
DTYPES = ["f32", "f16", "bf16"]


@pytest.mark.parametrize("m, n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_simulators(target, dtype, m, n):
    inp = inputs(dtype, m, n)
    kernel = gir.compile(program(dtype), target=target, sizes={"M": m, "N": n}, cache=False)
    outs = kernel(**{k: v.copy() for k, v in inp.items()})
    names = [p.name for p in kernel.func.results]
    check(dict(zip(names, outs)), reference(dtype, inp), dtype, f"{target} {dtype} {m}x{n}")


@pytest.mark.parametrize("m, n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_emulator(dtype, m, n):
    from gir.targets.cuda_emu import available, run_func
    if not available():
        pytest.skip("g++ with C++20 and _Float16 not found")
    from gir.passes.schedule import lower_module
    sizes = {"M": m, "N": n}
    inp = inputs(dtype, m, n)
    explicit = lower_module(parse_text(program(dtype), "<mb>"), "cuda", {"sizes": sizes}).funcs[0]
    res = run_func(explicit, {k: v.copy() for k, v in inp.items()}, sizes)
    assert not any(res.unwritten.values()), res.unwritten
    check(res.outputs, reference(dtype, inp), dtype, f"cuda_emu {dtype} {m}x{n}")


@pytest.mark.parametrize("mode", ["opbyop", "scalar"])
def test_mlu_other_schedules(mode):
    """Op-by-op kernels, and scalar kernels: the C scalar functions (sinf, rintf, ...) and, for the builtins the
    language has no scalar function for (softplus, silu, gelu, gelu_tanh), one vector op on a scratch unit."""
    from gir.targets.mlu.run import run_func
    inp = inputs("f32", 7, 7)
    func = parse_text(program("f32"), "<mb>").funcs[0]
    res = run_func(func, {k: v.copy() for k, v in inp.items()}, mode=mode)
    check(res.outputs, reference("f32", inp), "f32", f"mlu-sim {mode}")


def test_mlu_emits_one_vector_op_per_builtin():
    from gir.codegen.mlu import emit_func
    from gir.passes.schedule_mlu import schedule_mlu
    func = parse_text(program("f32"), "<mb>").funcs[0]
    text = "".join(k.source for k in emit_func(schedule_mlu(func, {"M": 64, "N": 128})))
    for fn in UNARY:
        assert f"__bang_active_{fn}(" in text, fn
    assert "__bang_cycle_maximum(" in text and "__bang_minimum_scalar(" in text   # clamp: max, then min


def test_mlu_clamp_into_its_own_upper_bound():
    """clamp(x, 0, h) into h: the max goes to a scratch tile, so h is read before it is overwritten."""
    from gir.codegen import ast as C
    from gir.codegen.mlu.vecops import CONST, FULL, Opd, VecEmitter
    from gir.codegen.mlu.printer import MluPrinter
    out: list = []
    emitter = VecEmitter(out, lambda like, k=0: Opd(like.kind, C.Id(f"scratch{k}"), like.length, like.rows,
                                                    like.pitch, like.cols, like.prow))
    h, x = (Opd(FULL, C.Id(name), 256, rows=2, pitch=128, cols=128, prow=2) for name in ("h", "x"))
    emitter.clamp(h, x, Opd(CONST, value=C.Num(0.0, "f")), h)
    assert MluPrinter().block(out, 0) == ["__bang_maximum_scalar(scratch2, x, 0.0f, 256);",
                                          "__bang_minimum(h, scratch2, h, 256);"]


def test_mlu_workcount_classes():
    from gir.passes.schedule_mlu.workcount import count_work
    func = parse_text("func f(x: f32[M, N]) -> (a: f32[M, N], b: f32[M, N], c: f32[M, N]) {\n"
                      "  a[i, j] = sin(x[i, j])\n  b[i, j] = floor(x[i, j])\n  c[i, j] = clamp(x[i, j], 0.0, 1.0)\n}\n",
                      "<w>").funcs[0]
    assert count_work(func, {"M": 4, "N": 32}).counts() == {"special": 1, "simple": 3}


def _sample_kernels(target):
    from gir.codegen import emit_module
    from gir.cli.common import load_verified
    from gir.passes.schedule import lower_module
    module = load_verified(ROOT / "samples" / "activations.gir")
    return emit_module(lower_module(module, target=target), target)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_sample_compiles_with_nvcc(tmp_path):
    import subprocess
    from gir.codegen import combined_source
    src = tmp_path / "activations.cu"
    src.write_text(combined_source(_sample_kernels("cuda")))
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for spelling in ("gir_gelu(", "gir_gelu_tanh(", "gir_silu(", "gir_softplus(", "gir_clamp(", "rintf("):
        assert spelling in src.read_text(), spelling


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed")
def test_sample_compiles_with_hipcc():
    from gir.codegen import combined_source
    from gir.targets.hip import compile_source
    kernels = _sample_kernels("hip")
    res = compile_source(combined_source(kernels))
    assert set(res.kernels) == {k.name for k in kernels}
