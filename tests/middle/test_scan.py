"""Scans (gir/scan.py): language, evaluator against numpy, the middle's `scan` recipe on the SIMT simulator (and its
CUDA/HIP compiled by nvcc/hipcc when installed), the MLU's located refusal."""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

import gir
from gir import ir
from gir.evaluate import evaluate
from gir.parser import parse_text
from gir.printer import print_module
from gir.verdict import TOLERANCE

OPS = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum, "cummin": np.minimum}
IDENT = {"cumsum": 0.0, "cumprod": 1.0, "cummax": -np.inf, "cummin": np.inf}


def numpy_scan(op, x, axis, exclusive, reverse):
    """Written from ONNX CumSum's definition, independently of gir.scan."""
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    if reverse:
        x = x[..., ::-1]
    y = OPS[op].accumulate(x, axis=-1)
    if exclusive:
        y = np.concatenate([np.full(x.shape[:-1] + (1,), IDENT[op]), y[..., :-1]], axis=-1)
    if reverse:
        y = y[..., ::-1]
    return np.moveaxis(y, -1, axis)


def program(op, dtype, rank, axis, exclusive, reverse):
    names = "abcd"[:rank]
    dims = ", ".join(f"S{k}" for k in range(rank))
    idx = ", ".join(names)
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    arg = f"x[{idx}]" if op != "cumprod" else f"1.0 + 0.05 * x[{idx}]"
    return (f"func f(x: {dtype}[{dims}]) -> (y: {dtype}[{dims}]) {{\n"
            f"  y[{idx}] = {op}({arg}, {names[axis]}{flags})\n}}\n")


def cases(n, seed):
    rng = np.random.default_rng(seed)
    extents = [1, 2, 7, 31, 33, 97, 130, 1031]
    out = []
    for _ in range(n):
        rank = int(rng.integers(1, 4))
        shape = [int(rng.choice(extents)) for _ in range(rank)]
        while np.prod(shape) > 40000:
            shape[int(np.argmax(shape))] //= 4
        out.append((str(rng.choice(list(OPS))), str(rng.choice(["f32", "f16", "bf16"])), shape,
                    int(rng.integers(0, rank)), bool(rng.integers(0, 2)), bool(rng.integers(0, 2))))
    return out


def inputs_for(dtype, shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape)
    return x.astype(ir.DType(dtype).numpy)


def first(outs):
    return outs[0] if isinstance(outs, (tuple, list)) else outs


def judge(got, want, dtype, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    inf = ~np.isfinite(want)
    assert np.array_equal(got[inf], want[inf]), f"{what}: identities differ"
    g, w = got[~inf], want[~inf]
    scale = max(np.linalg.norm(w), 1e-30)
    tol = TOLERANCE[ir.DType(dtype)]
    assert np.linalg.norm(g - w) / scale <= tol, f"{what}: {np.linalg.norm(g - w) / scale:.3g} > {tol}"


@pytest.mark.parametrize("case", cases(24, seed=13))
def test_evaluator_matches_numpy(case):
    op, dtype, shape, axis, exclusive, reverse = case
    f = parse_text(program(op, dtype, len(shape), axis, exclusive, reverse), "<scan>").funcs[0]
    x = inputs_for(dtype, shape, 5)
    xin = x.astype(np.float64) if op != "cumprod" else 1.0 + 0.05 * x.astype(np.float64)
    want = numpy_scan(op, xin, axis, exclusive, reverse)
    judge(evaluate(f, {"x": x})["y"], want.astype(x.dtype), dtype, str(case))


@pytest.mark.parametrize("case", cases(10, seed=29))
def test_sim_matches_numpy(case):
    op, dtype, shape, axis, exclusive, reverse = case
    text = program(op, dtype, len(shape), axis, exclusive, reverse)
    sizes = {f"S{k}": n for k, n in enumerate(shape)}
    k = gir.compile(text, target="sim", sizes=sizes, cache=False)
    x = inputs_for(dtype, shape, 7)
    y = first(k(x=x.copy()))
    xin = x.astype(np.float64) if op != "cumprod" else 1.0 + 0.05 * x.astype(np.float64)
    judge(y, numpy_scan(op, xin, axis, exclusive, reverse), dtype, str(case))


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_integer_scans_on_sim(dtype):
    text = (f"func f(x: {dtype}[M, N]) -> (s: {dtype}[M, N], m: {dtype}[M, N]) {{\n"
            "  s[i, j] = cumsum(x[i, j], j, exclusive=1)\n  m[i, j] = cummin(x[i, j], i, reverse=1)\n}\n")
    x = np.random.default_rng(3).integers(-50, 50, (37, 67)).astype(dtype.replace("i", "int"))
    s, m = gir.compile(text, target="sim", sizes={"M": 37, "N": 67}, cache=False)(x=x.copy())
    assert np.array_equal(s, numpy_scan("cumsum", x, 1, True, False).astype(x.dtype))
    assert np.array_equal(m, np.flip(np.minimum.accumulate(np.flip(x, 0), 0), 0))


def test_fused_producer_and_consumer():
    """An element-wise producer written as an intermediate is inlined into the scan's operand; the consumer
    reads the scan's result."""
    text = ("func f(x: f32[M, N], w: f32[N]) -> (y: f32[M, N]) {\n  t[i, j] = exp(x[i, j]) * w[j]\n"
            "  c[i, j] = cumsum(t[i, j], j, reverse=1)\n  y[i, j] = c[i, j] / (1.0 + c[i, j] * c[i, j])\n}\n")
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((5, 1031)).astype(np.float32), rng.standard_normal(1031).astype(np.float32)
    y = first(gir.compile(text, target="sim", sizes={"M": 5, "N": 1031}, cache=False)(x=x.copy(), w=w.copy()))
    c = numpy_scan("cumsum", np.exp(x.astype(np.float64)) * w, 1, False, True)
    judge(y, c / (1 + c * c), "f32", "fused")


def test_round_trip_and_keywords():
    text = ("func f(x: f32[M, N]) -> (y: f32[M, N], z: f32[M, N]) {\n  y[i, j] = cummax(x[i, j], i, exclusive=1, "
            "reverse=1)\n  z[i, j] = cumsum(x[i, j], j)\n}\n")
    m = parse_text(text, "<t>")
    assert print_module(m) == text
    assert parse_text(print_module(m), "<t>") == m


# Misuses (axis not on the left, not the whole right-hand side, reductions inside, bad flags, bool operands):
# tests/frontend/errors/scan_*.gir, with expected-error annotations.


def test_one_row_is_chained_across_blocks(tmp_path):
    """A 1-D scan is cut into segments chained across blocks (tests/schedule/test_scan_chained.py); siblings in
    both directions, which do not chain in one order, stay on one block and are remarked."""
    one = "func f(x: f64[N]) -> (y: f64[N]) {\n  y[i] = cumsum(x[i], i)\n}\n"
    both = ("func f(x: f32[N]) -> (y: f32[N], z: f32[N]) {\n  y[i] = cumsum(x[i], i)\n"
            "  z[i] = cummax(x[i], i, reverse=1)\n}\n")
    for k, (src, said) in enumerate(((one, "chained (of 2 candidates"), (both, "single-block scan"))):
        p = tmp_path / f"s{k}.gir"
        p.write_text(src)
        proc = subprocess.run([sys.executable, "-m", "gir", "run", str(p), "--target", "sim", "--sizes", "N=5000",
                               "-R"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert said in proc.stderr and "pass" in proc.stdout, proc.stderr


@pytest.mark.parametrize("compiler, target", [("nvcc", "cuda"), ("hipcc", "hip")])
def test_codegen_compiles(tmp_path, compiler, target):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    p = tmp_path / "s.gir"
    p.write_text("func f(x: f16[A, B, C]) -> (y: f16[A, B, C], z: f32[A, B, C]) {\n"
                 "  y[a, b, c] = cumsum(x[a, b, c], b, exclusive=1)\n  z[a, b, c] = cummax(x[a, b, c], c, reverse=1)\n}\n")
    src = tmp_path / ("k.cu" if target == "cuda" else "k.hip")
    proc = subprocess.run([sys.executable, "-m", "gir", "compile", str(p), "--target", target, "--emit", "source",
                           "--sizes", "A=3,B=100,C=1000", "-o", str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if target == "hip":   # the project's hipcc driver (its flags follow the installed platform)
        from gir.targets.hip import compile_source
        assert compile_source(src.read_text()).kernels
        return
    cmd = ["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"), str(src)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]


def test_exclusive_integer_scan_of_a_computed_operand_starts_from_the_result_types_extreme():
    """`x[j] - 3` is computed wider than i32 by numpy; the scan runs in the result's type, so an exclusive cummax
    starts from INT32_MIN (it was INT64_MIN, stored as 0)."""
    f = parse_text("func f(x: i32[N]) -> (y: i32[N]) {\n  y[j] = cummax(x[j] - 3, j, exclusive=1)\n}\n").funcs[0]
    x = np.array([5, -7, 2], dtype=np.int32)
    assert list(evaluate(f, {"x": x})["y"]) == [np.iinfo(np.int32).min, 2, 2]


def test_the_fused_idfg_of_scans_prints(tmp_path):
    """`gir opt --passes naive-lower,fuse` prints each group of scans as the scan recipe maps it (it raised an
    AttributeError traceback)."""
    proc = subprocess.run([sys.executable, "-m", "gir", "opt", "samples/cumsum.gir", "--passes", "naive-lower,fuse"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "kernel cumsum_0" in proc.stdout and "@shared" in proc.stdout
