"""Scans over rows too few to fill the GPU (passes/middle/search/scan.py `scan-chained`): a row is cut into
segments of whole chunks, one block each, chained across blocks by `chain` (a decoupled look-back on the GPU;
docs/explicit-layer.md). Values against numpy for every op and form, element types, sizes 1 / primes / chunk
boundaries, on the SIMT simulator and on the CUDA emulator running the emitted CUDA; traffic counted by the
simulator; the simulator's and the checks' view of a broken chain; the CUDA/HIP text compiles
(tests/gpu_codegen/kernels/chain_prefix.gir)."""
import numpy as np
import pytest

from gir import ir
from gir.errors import GirError
from gir.parser import parse_text
from gir.passes.middle import lower_module
from gir.rounding import rounding_bound
from gir.targets.sim.run import run_func
from gir.verifier import verify_module

from tests.mlu_compile.test_mlu_scan import FORMS, _inputs, _reference, compare, row_scan_source


def _program(op, dtype, shape, exclusive, reverse, weighted=False):
    src, sizes = row_scan_source(op, dtype, shape, exclusive, reverse, weighted)
    return parse_text(src), sizes


def _execute(f, inputs: dict, sizes: dict, target: str):
    """Run the scheduled function on the SIMT simulator or, through its emitted CUDA, on the CUDA emulator."""
    if target == "sim":
        return run_func(f, inputs, sizes)
    from gir.targets.cuda_emu.run import available, run_func as emu
    if not available():
        pytest.skip("no g++ with C++20 and _Float16 for the CUDA emulator")
    return emu(f, inputs, sizes=sizes)


def _expected(op, dtype, x, w, exclusive, reverse, weighted):
    e = x.astype(np.int32 if dtype == "i32" else np.float64)
    if weighted:
        e = e * w.astype(e.dtype)
    if op == "cumprod" and dtype != "i32":
        e = 1.0 + e * 0.001
    return _reference(op, e, x.ndim - 1, exclusive, reverse, dtype)


def _run(op, dtype, shape, exclusive=0, reverse=0, weighted=False, seed=0, target="sim"):
    module, sizes = _program(op, dtype, shape, exclusive, reverse, weighted)
    rng = np.random.default_rng(seed)
    x, w = _inputs(dtype, shape, rng, op), _inputs(dtype, shape[-1:], rng, op)
    if dtype == "i32" and op == "cumprod":
        x = np.where(np.abs(x) > 1, 1, x).astype(np.int32)
    low = lower_module(module, "cuda", {"sizes": sizes})
    f = low.funcs[0]
    res = _execute(f, {"x": x, "w": w}, sizes, target)
    want = _expected(op, dtype, x, w, exclusive, reverse, weighted)
    bound = rounding_bound(module.funcs[0], {"x": x, "w": w}, sizes)["y"]
    v = compare(res.outputs["y"], want, ir.DType(dtype), bound)
    assert v.passed, (op, dtype, shape, exclusive, reverse, v.reason)
    return f, res


def _chained(f) -> bool:
    from gir.walk import walk_stmts
    return any(isinstance(s, ir.Chain) for k in f.kernels for s in walk_stmts(k.body))


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
def test_every_op_and_form_1d(op, exclusive, reverse):
    f, _ = _run(op, "f32", (9001,), exclusive, reverse)
    assert _chained(f)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "i32"])
@pytest.mark.parametrize("op", ["cumsum", "cummax"])
def test_element_types(dtype, op):
    f, _ = _run(op, dtype, (2, 8009), 1, 0, weighted=True)
    assert _chained(f)


@pytest.mark.parametrize("shape,chained", [((1025,), False), ((2048,), False), ((4099,), True), ((3, 1031), False),
                                           ((1, 70001), True), ((2, 3, 4099), True), ((3, 2, 1), False)])
def test_sizes_at_chunk_boundaries(shape, chained):
    """Rows of two chunks or fewer stay on one block: the estimate counts the second launch (the zeroing
    kernel) against the few idle SMs (on the H200 model, 6 rows of 3 chunks too: 3001 positions)."""
    f, _ = _run("cumsum", "f32", shape, 0, 1, weighted=True)
    assert _chained(f) == chained


@pytest.mark.parametrize("shape", [(1,), (1024,), (7, 1)])
def test_one_chunk_rows_keep_one_block(shape):
    f, _ = _run("cumsum", "f32", shape)
    assert not _chained(f)


@pytest.mark.parametrize("op,exclusive,reverse", [("cumsum", 0, 0), ("cummin", 1, 1), ("cumprod", 0, 1)])
def test_cuda_emulator_runs_the_emitted_look_back(op, exclusive, reverse):
    f, _ = _run(op, "f32", (2, 6007), exclusive, reverse, weighted=True, target="cuda_emu")
    assert _chained(f)


def test_traffic_of_a_long_1d_scan():
    """A 1-D scan of 2^20 elements: 256 segments, each element read and written once (status words aside)."""
    f, res = _run("cumsum", "f32", (1 << 20,))
    assert len([k for k in f.kernels]) == 2
    assert res.stats.total.global_bytes <= 1.01 * 2 * 4 * (1 << 20)


@pytest.mark.parametrize("dtype", ["f64", "i64"])
@pytest.mark.parametrize("target", ["sim", "cuda_emu"])
def test_64_bit_running_values(dtype, target):
    """A 64-bit running value takes three status words (flag, aggregate, prefix) per participant."""
    for op, shape, run in (("cumsum", (20011,), _run), ("cummax", (3001, 7), _run_columns)):
        module, sizes = (_program if run is _run else _column_program)(op, dtype, shape, 1, 1)
        rng = np.random.default_rng(3)
        x = (rng.integers(-1000, 1000, shape) if dtype == "i64" else rng.standard_normal(shape)).astype(dtype.replace(
            "f", "float").replace("i", "int"))
        w = np.ones(shape[0] if run is _run_columns else shape[-1], x.dtype)
        f = lower_module(module, "cuda", {"sizes": sizes}).funcs[0]
        assert _chained(f)
        res = _execute(f, {"x": x, "w": w}, sizes, target)
        axis = len(shape) - (2 if run is _run_columns else 1)
        want = _reference(op, x.astype(np.int64 if dtype == "i64" else np.float64), axis, 1, 1, "i32" if dtype == "i64"
                          else "f32")
        if dtype == "i64" and op == "cummax":   # the exclusive identity of an i64 cummax is INT64_MIN
            want = np.where(want == np.iinfo(np.int32).min, np.iinfo(np.int64).min, want)
        assert compare(res.outputs["y"], want, ir.DType(dtype)).passed, (dtype, op, target)


def test_mixed_directions_stay_on_one_block():
    src = ("func f(x: f32[N]) -> (a: f32[N], b: f32[N]) {\n  a[i] = cumsum(x[i], i)\n"
           "  b[i] = cumsum(x[i], i, reverse=1)\n}\n")
    low = lower_module(parse_text(src), "sim", {"sizes": {"N": 5000}})
    assert not _chained(low.funcs[0])


CHAIN = """func f(x: f32[B]) -> (y: f32[B]) {
  alloc cs: i64[B] @global
  kernel k {
    parallel g in 0..B @block {
      alloc sh: f32[1] @shared
      parallel t in 0..32 @thread {
        alloc a: f32[1] @reg
        alloc p: f32[1] @reg
        copy a[0:1] <- sh[0:1]
        %s
        if t == 0 {
          store y[g:g + 1] <- p[0:1]
        }
      }
    }
  }
}
"""


def test_simulator_chain_values_and_order():
    m = parse_text(CHAIN % "a[0:1] = 1.0\n        chain sum p[0:1] <- a[0:1] over g via cs[g]")
    verify_module(m)
    res = run_func(m.funcs[0], {"x": np.zeros(300, np.float32)}, {"B": 300})
    assert np.array_equal(res.outputs["y"], np.arange(300, dtype=np.float32))


def test_simulator_refuses_a_chain_skipped_by_a_block():
    body = "a[0:1] = 1.0\n        if g != 3 {\n          chain sum p[0:1] <- a[0:1] over g via cs[g]\n        }"
    m = parse_text(CHAIN % body)
    with pytest.raises(GirError, match="block 4 of a chain reaches it before block 3"):
        run_func(m.funcs[0], {"x": np.zeros(8, np.float32)}, {"B": 8})


def test_simulator_refuses_a_chain_operand_that_differs_in_a_block():
    m = parse_text(CHAIN % "a[0:1] = f32(t)\n        chain sum p[0:1] <- a[0:1] over g via cs[g]")
    with pytest.raises(GirError, match="differs between the threads of a block"):
        run_func(m.funcs[0], {"x": np.zeros(8, np.float32)}, {"B": 8})


def test_check_refuses_a_chain_under_a_thread_condition():
    from gir.passes.analysis.checks import check_kernel
    m = parse_text(CHAIN % "a[0:1] = 1.0\n        if t < 5 {\n          chain sum p[0:1] <- a[0:1] over g via cs[g]\n"
                           "        }")
    f = m.funcs[0]
    errors = [d.message for d in check_kernel(f, f.kernels[0], "cuda") if d.severity == "error"]
    assert any("chain under a condition that differs between threads of one block" in e for e in errors), errors


@pytest.mark.parametrize("n", [1, 3000, 9001, 50000])
def test_kernels_hold_for_other_sizes(n):
    """The chained kernel is written for any size (segments of a fixed length, their count and the status words
    from the sizes): scheduled for 20,000 elements, run at others."""
    module, _ = _program("cummax", "f32", (20000,), 1, 1)
    f = lower_module(module, "cuda", {"sizes": {"D0": 20000}}).funcs[0]
    assert _chained(f)
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    res = run_func(f, {"x": x, "w": x}, {"D0": n})
    want = _reference("cummax", x.astype(np.float64), 0, 1, 1, "f32")
    assert compare(res.outputs["y"], want, ir.DType.f32).passed


# ----------------------------------------------------------------- columns: a chain per thread
def _column_program(op, dtype, shape, exclusive, reverse):
    """`y = op(x (* w along the scan axis), axis)` along the axis before the last (columns are the last)."""
    names = "abc"[:len(shape)]
    dims = ", ".join(f"D{k}" for k in range(len(shape)))
    idx, axis = ", ".join(names), names[-2]
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    operand = f"x[{idx}] * w[{axis}]"
    if op == "cumprod" and dtype != "i32":
        operand = f"1.0 + {operand} * 0.001"
    src = (f"func f(x: {dtype}[{dims}], w: {dtype}[D{len(shape) - 2}]) -> (y: {dtype}[{dims}]) {{\n"
           f"  y[{idx}] = {op}({operand}, {axis}{flags})\n}}\n")
    return parse_text(src), {f"D{k}": n for k, n in enumerate(shape)}


def _run_columns(op, dtype, shape, exclusive=0, reverse=0, seed=0, target="sim", schedule_sizes=None):
    module, sizes = _column_program(op, dtype, shape, exclusive, reverse)
    rng = np.random.default_rng(seed)
    x, w = _inputs(dtype, shape, rng, op), _inputs(dtype, shape[-2:-1], rng, op)
    if dtype == "i32" and op == "cumprod":
        x, w = (np.where(np.abs(a) > 1, 1, a).astype(np.int32) for a in (x, w))
    f = lower_module(module, "cuda", {"sizes": schedule_sizes or sizes}).funcs[0]
    res = _execute(f, {"x": x, "w": w}, sizes, target)
    wide = np.int32 if dtype == "i32" else np.float64
    e = x.astype(wide) * np.expand_dims(w.astype(wide), -1)
    if op == "cumprod" and dtype != "i32":
        e = 1.0 + e * 0.001
    want = _reference(op, e, len(shape) - 2, exclusive, reverse, dtype)
    bound = rounding_bound(module.funcs[0], {"x": x, "w": w}, sizes)["y"]
    v = compare(res.outputs["y"], want, ir.DType(dtype), bound)
    assert v.passed, (op, dtype, shape, exclusive, reverse, v.reason)
    return f, res


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
def test_columns_every_op_and_form(op, exclusive, reverse):
    f, _ = _run_columns(op, "f32", (3001, 7), exclusive, reverse)
    assert _chained(f)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "i32"])
def test_columns_element_types(dtype):
    f, _ = _run_columns("cumsum", dtype, (2, 1031, 33), 1, 1)
    assert _chained(f)


@pytest.mark.parametrize("shape", [(129, 1), (4099, 3), (600, 300), (2, 97, 65)])
def test_columns_sizes(shape):
    _run_columns("cummax", "f32", shape, 0, 1)


@pytest.mark.parametrize("n", [1, 100, 777])
def test_columns_kernels_hold_for_other_sizes(n):
    f, _ = _run_columns("cumsum", "f32", (n, 5), 1, 0, schedule_sizes={"D0": 20000, "D1": 5})
    assert _chained(f)


def test_columns_cuda_emulator_runs_the_emitted_look_back():
    f, _ = _run_columns("cumsum", "f32", (1500, 37), 0, 1, target="cuda_emu")
    assert _chained(f)


def test_columns_traffic_and_parallelism():
    """64 columns of 65,536 rows: 512 segments of 128 rows (was one thread per column walking every row); each
    element read and written once (the weight broadcast over the columns: one sector per warp and row, as the
    unchained kernel reads it), plus three 8-byte status words per column and segment."""
    module, sizes = _column_program("cumsum", "f32", (65536, 64), 0, 0)
    f = lower_module(module, "cuda", {"sizes": sizes}).funcs[0]
    x = np.random.default_rng(0).standard_normal((65536, 64)).astype(np.float32)
    res = run_func(f, {"x": x, "w": np.ones(65536, np.float32)}, sizes, check_races=False)
    data = 2 * 4 * 65536 * 64 + 32 * 2 * 65536
    assert data <= res.stats.total.global_bytes <= 1.03 * data
    assert res.stats.total.blocks >= 512
