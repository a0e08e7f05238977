"""Long scans over few rows on the MLU (passes/schedule_mlu/scan_long.py): a 1-D scan, or a scan along the last
axis of a tensor with fewer lane blocks than cores, cut into ranges over the cores (range totals, then the scan
carrying them) with 64 sub-segments per chunk. Values against numpy for every op and form, element types, sizes
with partial chunks; simulated time against the DMA roofline (the simulator's model time, not wall clock); the
reshaping moves the kernels use."""
import numpy as np
import pytest

from gir import ir
from gir.codegen.mlu.emit import emit_func
from gir.errors import GirError
from gir.parser import parse_text
from gir.rounding import rounding_bound
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu.run import run_func
from gir.targets.mlu import MLU370
from gir.verifier import verify_module

from tests.mlu_compile.test_mlu_scan import FORMS, _inputs, _reference, compare, row_scan_source


def _long(op, dtype, shape, exclusive, reverse, weighted=False, seed=0):
    src, sizes = row_scan_source(op, dtype, shape, exclusive, reverse, weighted)
    f = parse_text(src).funcs[0]
    rng = np.random.default_rng(seed)
    x, w = _inputs(dtype, shape, rng, op), _inputs(dtype, shape[-1:], rng, op)
    if dtype == "i32" and op == "cumprod":
        x = np.where(np.abs(x) > 1, 1, x).astype(np.int32)   # products of -1, 0, 1 stay in range
    res = run_func(f, {"x": x, "w": w}, sizes)
    e = x.astype(np.int32 if dtype == "i32" else np.float64)
    if weighted:
        e = e * w.astype(e.dtype)
    if op == "cumprod" and dtype != "i32":
        e = 1.0 + e * 0.001
    want = _reference(op, e, len(shape) - 1, exclusive, reverse, dtype)
    bound = rounding_bound(f, {"x": x, "w": w}, sizes)["y"]   # a product of 70,000 terms is ill-conditioned
    v = compare(res.outputs["y"], want, ir.DType(dtype), bound)
    assert v.passed, (op, dtype, shape, exclusive, reverse, v.reason)
    return res


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
def test_every_op_and_form_across_ranges(op, exclusive, reverse):
    """70,001 positions: 18 ranges of 4,096 (range totals, `sync @all`, the scan; the chunks kept in NRAM), the
    last one ending in a partial chunk."""
    res = _long(op, "f32", (70001,), exclusive, reverse, seed=1)
    assert len(res.stats["kernels"]) == 1 and "__sync_all()" in res.source


@pytest.mark.parametrize("dtype,op,shape,exclusive,reverse,weighted", [
    ("f16", "cumsum", (20011,), 0, 1, False),
    ("bf16", "cummax", (3, 9001), 1, 0, False),
    ("i32", "cumsum", (4099,), 1, 1, False),
    ("i32", "cummin", (2, 30011), 0, 1, True),
    ("f32", "cumsum", (3, 50000), 0, 0, True),
    ("f32", "cumprod", (2, 3, 30011), 0, 1, True),
    ("f32", "cumsum", (40, 7000), 1, 1, True),       # 40 rows: one range each, no totals kernel
    ("f32", "cummax", (4096,), 0, 0, False),          # exactly one chunk
])
def test_types_rows_and_partial_chunks(dtype, op, shape, exclusive, reverse, weighted):
    _long(op, dtype, shape, exclusive, reverse, weighted, seed=2)


@pytest.mark.parametrize("sizes,kernels,goal", [({"N": 1 << 20}, 1, 1.5), ({"M": 64, "N": 16384}, 1, 1.4)])
def test_long_scans_near_the_dma_roofline(sizes, kernels, goal):
    """A 1-D scan of 1M elements ran on one core, one vector op per element (~1,000x the roofline at 4M)."""
    src = ("func f(x: f32[N]) -> (y: f32[N]) { y[i] = cumsum(x[i], i) }" if len(sizes) == 1 else
           "func f(x: f32[M, N]) -> (y: f32[M, N]) { y[i, j] = cumsum(x[i, j], j, reverse=1) }")
    f = parse_text(src).funcs[0]
    ex = schedule_mlu(f, sizes)
    assert len([k for k in ex.body if isinstance(k, ir.Kernel)]) == kernels
    res = run_func(f, None, sizes, values=False)
    assert len(res.stats["kernels"]) == kernels
    elements = int(np.prod(list(sizes.values())))
    roofline = 2 * 4 * elements / MLU370.gdram_bandwidth       # x read once, y written once
    assert res.stats["seconds"] <= goal * roofline, res.stats["seconds"] / roofline


def test_ranges_are_remarked():
    f = parse_text("func f(x: f32[N]) -> (y: f32[N]) {\n  y[j] = cumsum(x[j], j)\n}\n").funcs[0]
    remarks = []
    schedule_mlu(f, {"N": 100000}, remarks=remarks)
    assert any("cut into 25 ranges" in r.message and "barrier" in r.message and r.loc is not None
               for r in remarks), [r.message for r in remarks]


# ---------------------------------------------------------------- reshaping moves (docs/explicit-layer.md)
RESHAPE = """func f(x: f32[300]) -> (y: f32[300]) {{
  kernel k with task_dim=1, layout=dense {{
    parallel t in 0..1 @core {{
      alloc a: f32[4, 64] @nram
      load {load}
      store y[0:256] <- a[0:4, 0:64]
    }}
  }}
}}
"""


def test_reshaping_load_and_store_run():
    f = parse_text(RESHAPE.format(load="a[0:4, 0:64] <- x[0:256]")).funcs[0]
    x = np.arange(300, dtype=np.float32)
    got = run_func(f, {"x": x}, {}).outputs["y"]
    assert np.array_equal(got[:256], x[:256])


@pytest.mark.parametrize("load,message", [
    ("a[0:4, 0:64] <- x[0:255]", "region shapes differ"),                  # not the same number of elements
    ("a[0:4, 0:64] <- x[0:256] with mask", "region shapes differ"),        # a masked move does not reshape
])
def test_reshaping_moves_are_checked(load, message):
    m = parse_text(RESHAPE.format(load=load), "<t>")
    with pytest.raises(GirError) as e:
        verify_module(m)
    assert message in str(e.value) and "<t>:5:" in str(e.value)


def test_a_contiguous_run_spreads_into_tile_rows():
    # rows of 32 in a tile 64 wide: the run is spread row by row (one strided __memcpy), and packed back by the
    # store (docs/explicit-layer.md; short-row transposes use it)
    src = RESHAPE.format(load="a[0:4, 0:32] <- x[0:128]").replace("store y[0:256] <- a[0:4, 0:64]",
                                                                  "store y[0:128] <- a[0:4, 0:32]")
    f = parse_text(src).funcs[0]
    x = np.arange(300, dtype=np.float32)
    assert np.array_equal(run_func(f, {"x": x}, {}).outputs["y"][:128], x[:128])


def test_reshaping_move_needs_one_contiguous_side():
    src = RESHAPE.format(load="a[0:4, 0:32] <- x[0:256:2]")   # tile rows against every other element
    f = parse_text(src).funcs[0]
    with pytest.raises(GirError, match="contiguous regions of the same size"):
        emit_func(f)


# ---------------------------------------------------------------- `sync @all` (docs/explicit-layer.md)
PHASES = """func f(x: f32[32]) -> (y: f32[32]) {{
  alloc t: f32[32] @gdram
  kernel k with task_dim=32 {{
    parallel c in 0..32 @core {{
      alloc a: f32[2] @nram
      load a[0:1] <- x[c:c + 1]
      store t[c:c + 1] <- a[0:1]
      {sync}
      load a[0:1] <- t[31 - c:32 - c]
      store y[c:c + 1] <- a[0:1]
    }}
  }}
}}
"""


def test_sync_all_orders_the_tasks_for_the_race_check_and_the_simulator():
    from gir.passes.analysis.checks import check_module
    ok = parse_text(PHASES.format(sync="sync @all"), "<t>")
    check_module(ok, "mlu")
    x = np.arange(32, dtype=np.float32)
    res = run_func(ok.funcs[0], {"x": x}, {})
    assert np.array_equal(res.outputs["y"], x[::-1]) and "__sync_all()" in res.source
    with pytest.raises(GirError, match="race on 't'"):
        check_module(parse_text(PHASES.format(sync=""), "<t>"), "mlu")


@pytest.mark.parametrize("text,message", [
    ("func f(x: f32[4]) -> (y: f32[4]) {\n  kernel k with task_dim=4 {\n    parallel c in 0..4 @all {\n"
     "      sync @core\n    }\n  }\n}\n", "not a parallel level"),
    ("func f(x: f32[4]) -> (y: f32[4]) {\n  kernel k with task_dim=4 {\n    parallel c in 0..2 @cluster {\n"
     "      sync @all\n    }\n  }\n}\n", "sync @all outside a @core scope"),
])
def test_sync_all_misuse_is_located(text, message):
    with pytest.raises(GirError) as e:
        verify_module(parse_text(text, "<t>"))
    assert message in str(e.value) and "<t>:" in str(e.value)


@pytest.mark.parametrize("op", ["cumsum", "cummax", "cummin", "cumprod"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
@pytest.mark.parametrize("sram", [0, 32 * 1024])
def test_16bit_operands_kept_and_read_again(op, exclusive, reverse, sram, monkeypatch):
    """A 16-bit operand read as it is goes through the transposes and NRAM in 16 bits (widened after the
    transpose); with a smaller NRAM budget some chunks of each range are kept and the others read again, both
    paths in one kernel, plus the partial chunk at the end (cumprod's operand is computed: the f32 path); with
    some SRAM, one chunk of each range is kept there too (phase 1 copies it after its load, phase 2 reads it
    from SRAM): the three paths in one kernel."""
    from gir.passes.schedule_mlu import scan_long
    monkeypatch.setattr(scan_long, "SRAM_BUDGET", sram)
    if op != "cumprod":   # (cumprod's f32 tiles need the whole budget; max / min run in 16 bits: half the NRAM)
        monkeypatch.setattr(scan_long, "NRAM_BUDGET", (130 if op == "cumsum" else 80 if exclusive else 66) * 1024)   # 1 of 3 kept
    res = _long(op, "f16", (300007,), exclusive, reverse, seed=3)
    said = " ".join(r.message for r in res.remarks)
    assert "__sync_all()" in res.source
    if op != "cumprod":
        assert "read twice" in said, said
        assert "__nram__ half keep_" in res.source
        assert ("__bang_half2float(et_" in res.source) == (op == "cumsum")   # max / min: never widened
    if sram and op != "cumprod":
        assert "__mlu_shared__ half x_ks" in res.source and "SRAM2NRAM" in res.source, said


@pytest.mark.parametrize("op,dtype", [("cumsum", "bf16"), ("cummax", "bf16")])
def test_16bit_operand_through_a_cast(op, dtype):
    """`cumsum(f32(x))` of a 16-bit x is the raw path too; its result rounded to 16 bits before the transpose."""
    src = (f"func f(x: {dtype}[N]) -> (y: {dtype}[N]) {{\n  y[i] = {op}(f32(x[i]), i)\n}}\n")
    f = parse_text(src).funcs[0]
    x = _inputs(dtype, (70001,), np.random.default_rng(4), op)
    res = run_func(f, {"x": x}, {"N": 70001})
    want = _reference(op, x.astype(np.float64), 0, 0, 0, dtype)
    v = compare(res.outputs["y"], want, ir.DType(dtype), rounding_bound(f, {"x": x}, {"N": 70001})["y"])
    assert v.passed, v.reason
    assert "__nram__ bfloat16_t keep_" in res.source or "keep_" not in res.source


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
@pytest.mark.parametrize("early", [True, False])
def test_chunk_carries_in_either_phase(op, exclusive, reverse, early, monkeypatch):
    """Phase 1 computes every chunk's sub-segment carries (`koff_`) unless the table would take more than
    EARLY_BYTES of NRAM (then phase 2 computes them, chunk by chunk): both, over ranges of several chunks with a
    partial last chunk, in every form."""
    from gir.passes.schedule_mlu import scan_long
    if not early:
        monkeypatch.setattr(scan_long, "EARLY_BYTES", 0)
    res = _long(op, "f32", (3, 90001), exclusive, reverse, seed=7)
    assert ("koff_" in res.source) == early and "__sync_all()" in res.source


@pytest.mark.parametrize("dtype,op,shape,exclusive,reverse", [
    ("f32", "cumsum", (2, 400003), 0, 0), ("f32", "cummax", (700001,), 1, 1), ("bf16", "cumsum", (1500001,), 0, 1),
    ("i32", "cummin", (1200001,), 1, 0), ("f16", "cumsum", (2, 600001), 1, 0)])
def test_chunks_kept_in_sram(dtype, op, shape, exclusive, reverse, monkeypatch):
    """Ranges longer than NRAM keeps: phase 1 copies the landed tiles of the next chunks (every operand tensor,
    x and w) into the cluster's SRAM, each core in its part, and phase 2 reads them from there; the kernel runs
    in cluster and core scopes. Small NRAM and SRAM budgets put NRAM-kept, SRAM-kept and re-read chunks in one
    range; values judged against float64 numpy."""
    from gir.passes.schedule_mlu import scan_long
    monkeypatch.setattr(scan_long, "NRAM_BUDGET", 300 * 1024)
    monkeypatch.setattr(scan_long, "SRAM_BUDGET", 128 * 1024)
    res = _long(op, dtype, shape, exclusive, reverse, weighted=True, seed=11)
    said = " ".join(r.message for r in res.remarks)
    assert "__mlu_shared__" in res.source and "x_ks" in res.source and "w_ks" in res.source, said
    assert "NRAM2SRAM" in res.source and "SRAM2NRAM" in res.source and "clusterId" in res.source
    assert "in SRAM" in said and "read twice" in said, said


@pytest.mark.parametrize("op,dtype,reverse,shape,axis", [
    ("cummax", "f32", 0, (300007,), 0), ("cummin", "f16", 1, (300007,), 0), ("cummax", "bf16", 1, (3, 90001), 1),
    ("cummax", "f32", 0, (40009, 40), 0), ("cummin", "f16", 1, (40009, 64), 0)])
def test_nan_propagates_through_the_carries(op, dtype, reverse, shape, axis):
    """A NaN in the operand makes every later running max / min NaN, as numpy's (the range and chunk carries
    are scalar code: a max / min there must not drop a NaN operand, as C's fmaxf / fminf would)."""
    names = "ab"[:len(shape)]
    dims = ", ".join(f"D{k}" for k in range(len(shape)))
    idx = ", ".join(names)
    src = (f"func f(x: {dtype}[{dims}]) -> (y: {dtype}[{dims}]) {{\n"
           f"  y[{idx}] = {op}(x[{idx}], {names[axis]}{', reverse=1' if reverse else ''})\n}}\n")
    f = parse_text(src).funcs[0]
    x = _inputs(dtype, shape, np.random.default_rng(12), op)
    flat = x.reshape(-1)
    flat[[1000, len(flat) // 2 + 7]] = np.nan
    res = run_func(f, {"x": x}, {f"D{k}": n for k, n in enumerate(shape)})
    assert "__sync_all()" in res.source   # a long scan (ranges over the cores)
    want = _reference(op, x.astype(np.float64), axis, 0, reverse, dtype).astype(x.dtype)
    got = res.outputs["y"]
    assert np.array_equal(np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64)))
    assert np.array_equal(got, want, equal_nan=True)
