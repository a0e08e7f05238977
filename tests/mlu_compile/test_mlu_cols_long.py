"""Column scans over few lanes on the MLU (passes/schedule_mlu/scan_cols_long.py): a scan along a leading or middle
axis whose lane chunks leave cores idle, cut into ranges of the scan axis over the cores (range totals, a barrier
across the cores, the scan carrying them; tiles of phase 1 kept in NRAM). Values against numpy for every op and
form, element types, operands broadcast along either axis, sizes with partial tiles and ranges; simulated time
against the unit kernel (the simulator's model time, not wall clock)."""
import numpy as np
import pytest

from gir import ir
from gir.parser import parse_text
from gir.rounding import rounding_bound
from gir.targets.mlu.run import run_func

from tests.mlu_compile.test_mlu_scan import FORMS, _inputs, _reference, compare


def _cols(op, dtype, shape, exclusive, reverse, weight=None, seed=0):
    """`y = op(x [* w], axis)` along the axis before the last; `weight`: None, "scan" (w along the scan axis)
    or "lanes" (w along the last axis)."""
    names = "abc"[:len(shape)]
    dims = ", ".join(f"D{k}" for k in range(len(shape)))
    idx, axis = ", ".join(names), names[-2]
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    wk = {"scan": -2, "lanes": -1}.get(weight)
    operand = f"x[{idx}]" + (f" * w[{names[wk]}]" if weight else "")
    if op == "cumprod" and dtype != "i32":
        operand = f"1.0 + {operand} * 0.001"
    wdim = f"D{len(shape) + wk}" if weight else f"D{len(shape) - 1}"
    src = (f"func f(x: {dtype}[{dims}], w: {dtype}[{wdim}]) -> (y: {dtype}[{dims}]) {{\n"
           f"  y[{idx}] = {op}({operand}, {axis}{flags})\n}}\n")
    f = parse_text(src).funcs[0]
    sizes = {f"D{k}": n for k, n in enumerate(shape)}
    rng = np.random.default_rng(seed)
    x = _inputs(dtype, shape, rng, op)
    w = _inputs(dtype, (shape[wk],) if weight else shape[-1:], rng, op)
    if dtype == "i32" and op == "cumprod":
        x, w = (np.where(np.abs(a) > 1, 1, a).astype(np.int32) for a in (x, w))
    res = run_func(f, {"x": x, "w": w}, sizes)
    wide = np.int32 if dtype == "i32" else np.float64
    e = x.astype(wide)
    if weight:
        e = e * (np.expand_dims(w.astype(wide), -1) if weight == "scan" else w.astype(wide))
    if op == "cumprod" and dtype != "i32":
        e = 1.0 + e * 0.001
    want = _reference(op, e, len(shape) - 2, exclusive, reverse, dtype)
    bound = rounding_bound(f, {"x": x, "w": w}, sizes)["y"]
    v = compare(res.outputs["y"], want, ir.DType(dtype), bound)
    assert v.passed, (op, dtype, shape, exclusive, reverse, weight, v.reason)
    return res


def _ranged(res) -> bool:
    return any("ranges (range totals" in r.message for r in res.remarks)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("exclusive,reverse", FORMS)
def test_every_op_and_form(op, exclusive, reverse):
    assert _ranged(_cols(op, "f32", (6007, 40), exclusive, reverse, "scan"))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "i32"])
@pytest.mark.parametrize("weight", ["scan", "lanes"])
def test_element_types_and_operands(dtype, weight):
    assert _ranged(_cols("cumsum", dtype, (5003, 33), 1, 1, weight))


@pytest.mark.parametrize("shape", [(2, 9001, 5), (4099, 64), (65536, 3), (1031, 97)])
def test_sizes(shape):
    _cols("cummax", "f32", shape, 0, 1, "lanes")


def test_faster_than_the_unit_kernel():
    """64 columns of 65,536 rows (2 lane chunks for 32 cores): timing-only, the simulator's model time."""
    f = parse_text("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cummax(x[i, j], i, reverse=1)\n}\n").funcs[0]
    res = run_func(f, None, {"M": 65536, "N": 64}, values=False)
    roofline = 2 * 4 * 65536 * 64 / 307e9
    assert _ranged(res)
    assert res.stats["seconds"] < 1.5 * roofline    # the unit kernel: 602 us, 5.5x


# ---------------------------------------------------------------- 16-bit operands (review of the raw 16-bit path)
@pytest.mark.parametrize("op,exclusive,reverse,shape", [
    ("cumsum", 1, 0, (20011, 32)),     # dense tiles of an odd number of rows: 16-bit slots would misalign
    ("cummax", 1, 1, (20011, 64)),
    ("cumsum", 0, 0, (10892, 64)),
    ("cumsum", 0, 1, (16384, 64)),     # R x W a multiple of 64: the 16-bit slots
])
def test_16bit_kept_tiles_stay_aligned(op, exclusive, reverse, shape):
    import numpy as np
    from gir import ir
    from gir.parser import parse_text
    from gir.targets.mlu.run import run_func
    from tests.mlu_compile.test_mlu_scan import _inputs, _reference, compare
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    f = parse_text(f"func f(x: f16[M, N]) -> (y: f16[M, N]) {{\n  y[i, j] = {op}(x[i, j], i{flags})\n}}\n").funcs[0]
    x = _inputs("f16", shape, np.random.default_rng(8), op)
    res = run_func(f, {"x": x}, {"M": shape[0], "N": shape[1]})
    assert "__sync_all()" in res.source
    v = compare(res.outputs["y"], _reference(op, x.astype(np.float64), 0, exclusive, reverse, "f16"), ir.DType.f16)
    assert v.passed, v.reason


@pytest.mark.parametrize("op,dtype,exclusive,reverse,weight", [
    ("cumsum", "f32", 1, 0, "scan"), ("cummax", "f32", 0, 1, "lanes"), ("cumsum", "f16", 0, 0, None),
    ("cummin", "bf16", 1, 1, None), ("cumsum", "i32", 0, 1, "lanes"), ("cumprod", "f32", 1, 1, "scan")])
def test_tiles_kept_in_sram(op, dtype, exclusive, reverse, weight, monkeypatch):
    """Ranges longer than NRAM keeps: the next tiles' landed operands (x, and w when it is read per scan row) stay
    in the cluster's SRAM between the phases (scan_sram.py); small budgets put NRAM-kept, SRAM-kept and re-read
    tiles in one range. Values against float64 numpy."""
    from gir.passes.schedule_mlu import scan_cols_long
    monkeypatch.setattr(scan_cols_long, "NRAM_BUDGET", 200 * 1024)
    monkeypatch.setattr(scan_cols_long, "SRAM_BUDGET", 128 * 1024)
    res = _cols(op, dtype, (40009, 40), exclusive, reverse, weight, seed=5)
    said = " ".join(r.message for r in res.remarks)
    assert "in SRAM" in said and "read twice" in said and ", 0 in SRAM" not in said, said
    assert "__mlu_shared__" in res.source and "NRAM2SRAM" in res.source and "SRAM2NRAM" in res.source
    assert ("w_ks" in res.source) == (weight == "scan")


def test_every_tile_kept_on_chip():
    """64 columns of 65,536 rows in f32: NRAM keeps half of each range, SRAM the rest -- no tile is read twice
    (timing-only: GDRAM traffic is the compulsory bytes)."""
    f = parse_text("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cummax(x[i, j], i, reverse=1)\n}\n").funcs[0]
    res = run_func(f, None, {"M": 65536, "N": 64}, values=False)
    assert any("every range stays on chip" in r.message for r in res.remarks)
    assert res.stats["gdram_traffic_bytes"] <= 1.01 * 2 * 4 * 65536 * 64


def test_no_sram_when_the_schedule_may_not_use_it():
    """`allow_sram=False` (schedule_mlu / run_func): the long scans keep no tile in SRAM (read twice instead)."""
    f = parse_text("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cummax(x[i, j], i, reverse=1)\n}\n").funcs[0]
    res = run_func(f, None, {"M": 65536, "N": 64}, values=False, allow_sram=False)
    assert "__mlu_shared__" not in res.source and "SRAM2NRAM" not in res.source
    g = parse_text("func g(x: f32[N]) -> (y: f32[N]) {\n  y[i] = cumsum(x[i], i)\n}\n").funcs[0]
    res = run_func(g, None, {"N": 16777216}, values=False, allow_sram=False)
    assert "__sync_all()" in res.source and "__mlu_shared__" not in res.source
