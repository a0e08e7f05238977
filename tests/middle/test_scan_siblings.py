"""Sibling scans (fuse groups scans with the same output extents and scan-axis position that share an input;
passes/middle/search/scan.py): one kernel reading the shared operand once, forward and reverse statements
together (the reverse pass reads a stash in shared memory), and the rows of a block reading a broadcast operand
once. Values against numpy (test_scan's independent reference) on the SIMT simulator, kernel counts, traffic."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.parser import parse_text
from gir.passes.analysis.traffic import compulsory_bytes
from gir.passes.schedule import lower_func
from gir.targets.sim import run_func
from gir.views import to_view

from tests.middle.test_scan import judge, numpy_scan

OPS = ("cumsum", "cumprod", "cummax", "cummin")
EXTENTS = (1, 2, 7, 31, 33, 97, 130, 1031)


def sibling_program(rng):
    """2-4 scans of x (times a weight along the scan axis in some) along one axis, random flags and ops; every
    statement names its variables differently."""
    rank = int(rng.integers(1, 4))
    axis = int(rng.integers(0, rank))
    dtype = str(rng.choice(["f32", "f16", "bf16"]))
    shape = [int(rng.choice(EXTENTS)) for _ in range(rank)]
    while np.prod(shape) > 30000:
        shape[int(np.argmax(shape))] //= 3
    dims = [f"S{k}" for k in range(rank)]
    stmts, outs, want = [], [], []
    for n in range(int(rng.integers(2, 5))):
        names = [f"v{n}{k}" for k in range(rank)]
        idx = ", ".join(names)
        op = str(rng.choice(OPS))
        exclusive, reverse = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        weighted = bool(rng.integers(0, 2))
        arg = f"x[{idx}]" + (f" * w[{names[axis]}]" if weighted else "")
        if op == "cumprod":
            arg = f"1.0 + 0.05 * {arg}"
        flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
        stmts.append(f"  y{n}[{idx}] = {op}({arg}, {names[axis]}{flags})")
        outs.append(f"y{n}: f32[{', '.join(dims)}]")
        want.append((op, weighted, exclusive, reverse))
    text = (f"func f(x: {dtype}[{', '.join(dims)}], w: {dtype}[{dims[axis]}]) -> ({', '.join(outs)}) {{\n"
            + "\n".join(stmts) + "\n}\n")
    return text, dtype, shape, axis, want


def run_sim(text, sizes, inputs):
    func = parse_text(text, "<siblings>").funcs[0]
    low = lower_func(func, "sim", {"sizes": sizes})
    res = run_func(low, to_view(func, inputs, sizes), sizes, check_races=True)
    return func, low, res


def reference(x, w, axis, op, weighted, exclusive, reverse):
    shape = [1] * x.ndim
    shape[axis] = -1
    v = x.astype(np.float64) * (w.astype(np.float64).reshape(shape) if weighted else 1.0)
    if op == "cumprod":
        v = 1.0 + 0.05 * v
    return numpy_scan(op, v, axis, exclusive, reverse)


@pytest.mark.parametrize("seed", range(16))
def test_random_siblings_match_numpy(seed):
    rng = np.random.default_rng(1000 + seed)
    text, dtype, shape, axis, want = sibling_program(rng)
    np_dtype = ir.DType(dtype).numpy
    x = rng.standard_normal(shape).astype(np_dtype)
    w = rng.standard_normal(shape[axis]).astype(np_dtype)
    sizes = {f"S{k}": n for k, n in enumerate(shape)}
    func, low, res = run_sim(text, sizes, {"x": x, "w": w})
    for n, (op, weighted, exclusive, reverse) in enumerate(want):
        judge(res.outputs[f"y{n}"], reference(x, w, axis, op, weighted, exclusive, reverse), "f32",
              f"{text} y{n} at {shape}")
    directions = len({r for *_, r in want})
    innermost = axis == len(shape) - 1
    assert len(low.kernels) == (1 if innermost else directions), text


@pytest.mark.parametrize("n", [5, 1031, 13001])   # 13001: past the stash, the reverse pass reads again
def test_forward_and_reverse_rows_one_kernel(n):
    text = ("func f(x: f32[M, N], w: f32[N]) -> (c: f32[M, N], p: f32[M, N]) {\n"
            "  c[i, j] = cumsum(x[i, j] * w[j], j)\n  p[i, j] = cumprod(1.0 + 0.01 * x[i, j], j, reverse=1)\n}\n")
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal((3, n)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    func, low, res = run_sim(text, {"M": 3, "N": n}, {"x": x, "w": w})
    assert len(low.kernels) == 1
    judge(res.outputs["c"], reference(x, w, 1, "cumsum", True, False, False), "f32", "c")
    judge(res.outputs["p"], numpy_scan("cumprod", 1.0 + 0.01 * x.astype(np.float64), 1, False, True), "f32", "p")
    if n == 1031:   # x is read once for both scans (w once per row: 3 rows run on 3 blocks)
        assert res.stats.global_read_bytes <= 1.10 * (x.nbytes + 3 * w.nbytes)   # rows start unaligned


def test_broadcast_operand_read_once_per_block():
    """4096 rows: 8 rows per block, w[j] read from global memory by the first row only."""
    text = "func f(x: f32[M, N], w: f32[N]) -> (c: f32[M, N]) {\n  c[i, j] = cumsum(x[i, j] * w[j], j)\n}\n"
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((4096, 256)).astype(np.float32), rng.standard_normal(256).astype(np.float32)
    func, low, res = run_sim(text, {"M": 4096, "N": 256}, {"x": x, "w": w})
    judge(res.outputs["c"], reference(x, w, 1, "cumsum", True, False, False), "f32", "c")
    read, written = compulsory_bytes(func, {"M": 4096, "N": 256})
    ratio = res.stats.global_bytes / (read + written)
    assert ratio <= 1.15, ratio    # one block per row: 1.5x (w read with every row)


def test_integer_siblings_exact():
    text = ("func f(x: i32[N], y: i32[N]) -> (c: i32[N], p: i32[N]) {\n  c[j] = cumsum(x[j] + y[j], j)\n"
            "  p[k] = cummax(x[k], k, reverse=1, exclusive=1)\n}\n")
    rng = np.random.default_rng(5)
    x, y = rng.integers(-50, 50, 2049).astype(np.int32), rng.integers(-50, 50, 2049).astype(np.int32)
    func, low, res = run_sim(text, {"N": 2049}, {"x": x, "y": y})
    assert len(low.kernels) == 1
    assert np.array_equal(res.outputs["c"], np.cumsum(x + y).astype(np.int32))
    want = np.flip(np.maximum.accumulate(np.flip(x)))
    want = np.concatenate([want[1:], [np.iinfo(np.int32).min]]).astype(np.int32)
    assert np.array_equal(res.outputs["p"], want)


def test_many_wide_siblings_split_into_groups_that_fit_shared_memory():
    """Five f64 siblings of rows >= 1,024 need 50 KB of chunk buffers in one kernel (over the 48 KB a block gets):
    fuse groups at most MAX_SIBLING_SCANS of them."""
    from gir.passes.middle.fuse import MAX_SIBLING_SCANS
    ops = ["cumsum(x[i, j], j)", "cummax(x[i, j], j)", "cummin(x[i, j], j)", "cumprod(1.0 + 0.01 * x[i, j], j)",
           "cumsum(x[i, j], j, exclusive=1)"]
    outs = ", ".join(f"y{k}: f64[M, N]" for k in range(len(ops)))
    text = f"func f(x: f64[M, N]) -> ({outs}) {{\n" + "".join(f"  y{k}[i, j] = {op}\n" for k, op in
                                                               enumerate(ops)) + "}\n"
    x = np.random.default_rng(9).standard_normal((4, 1024))
    func, low, res = run_sim(text, {"M": 4, "N": 1024}, {"x": x})
    assert len(low.kernels) == -(-len(ops) // MAX_SIBLING_SCANS)
    judge(res.outputs["y0"], np.cumsum(x, axis=1), "f64", "y0")


def test_reverse_only_operands_are_read_by_the_forward_pass_only_where_stashed():
    """r's second operand y is read by the forward pass only at the stashed positions; past them by the reverse
    pass only: the kernel reads x once and y once (20,000-element rows, longer than the stash)."""
    text = ("func f(x: f32[M, N], y: f32[M, N]) -> (c: f32[M, N], r: f32[M, N]) {\n  c[i, j] = cumsum(x[i, j], j)\n"
            "  r[a, b] = cumsum(x[a, b] * y[a, b], b, reverse=1)\n}\n")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((4, 20000)).astype(np.float32), rng.standard_normal((4, 20000)).astype(np.float32)
    func, low, res = run_sim(text, {"M": 4, "N": 20000}, {"x": x, "y": y})
    judge(res.outputs["r"], numpy_scan("cumsum", x.astype(np.float64) * y, 1, False, True), "f32", "r")
    # x past the stash is read again by the reverse pass (x * y): at most 2 x + 1 y
    assert res.stats.global_read_bytes <= 1.05 * (x.nbytes + y.nbytes + (x.nbytes - 4 * 4 * 9472))


def test_scans_along_other_axes_of_a_shared_input_are_said():
    # a row scan and a column scan of x cannot share a kernel (no team holds a row and a column): x is read twice,
    # and a missed remark says so (samples/cumsum.gir: 1.324x the compulsory bytes on sim at 2048 x 2048)
    from gir.passes.middle import run_default
    text = ("func f(x: f32[M, N]) -> (c: f32[M, N], r: f32[M, N], d: f32[M, N]) {\n"
            "  c[i, j] = cumsum(x[i, j], j)\n  r[i, j] = cummax(x[i, j], i, reverse=1)\n"
            "  d[i, j] = cumsum(exp(x[i, j]), j)\n}\n")
    _, ctx = run_default(parse_text(text), "sim", {"sizes": {"M": 64, "N": 64}})
    said = [r.message for r in ctx.remarks if r.kind == "missed" and "other axes" in r.message]
    assert len(said) == 1 and "'r' is not fused with 'c'" in said[0] and "'x'" in said[0], said
