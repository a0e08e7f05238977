"""Column scans of rows off the 64-byte DMA granule (passes/schedule_mlu/scan.py `_Plan.wide`): lane chunks
narrower than the row pay a partial granule at both ends of every row segment, and read each partially written
one again; one chunk as wide as the row (up to 1024 lanes) with the scan axis cut into ranges over the cores
competes with them on the MLU cost model. A cumsum down 2039 x 2039 f32 was 1.576x the DMA roofline (64-lane
chunks), 1.182x now; 4099 x 1021 2.020x -> 1.264x. Values against the evaluator, both directions, three dtypes."""
from __future__ import annotations

import numpy as np
import pytest

from gir.codegen.mlu.report import compulsory_bytes
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.rounding import rounding_bound
from gir.targets.mlu.run import run_func
from gir.verdict import compare

SCAN = "func f(x: T[M, N]) -> (c: T[M, N]) {\n  c[i, j] = OP(x[i, j], i REV)\n}\n"


def _func(op: str, t: str, reverse: bool):
    return parse_text(SCAN.replace("OP", op).replace("T[", f"{t}[").replace(" REV", ", reverse=1" if reverse
                                                                            else "")).funcs[0]


@pytest.mark.parametrize("op, reverse", [("cumsum", False), ("cummax", True)])
def test_wide_column_scan_near_the_roofline(op, reverse):
    f = _func(op, "f32", reverse)
    sizes = {"M": 2039, "N": 2039}
    res = run_func(f, None, sizes, values=False)
    ratio = res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9)
    assert ratio < 1.3, ratio


@pytest.mark.parametrize("t", ["f32", "f16", "i32"])
@pytest.mark.parametrize("op, reverse", [("cumsum", False), ("cummax", True), ("cumprod", True)])
def test_wide_column_scan_values(op, reverse, t):
    if op == "cumprod" and t == "i32":
        pytest.skip("integer products overflow")
    f = _func(op, t, reverse)
    sizes = {"M": 2000, "N": 333}
    e = schedule_mlu(f, sizes, remarks=(said := []))
    if t == "f32":   # the wide plan is taken (f16 cummax, computed in f16, keeps 64-lane units here)
        assert any("cut into" in r.message for r in said), [r.message for r in said]
    rng = np.random.default_rng(len(op) + len(t))
    x = random_inputs(f, sizes, rng)
    if op == "cumprod":
        x["x"] = (1.0 + 0.001 * np.asarray(x["x"], dtype=np.float64)).astype(np.asarray(x["x"]).dtype)
    got = run_func(e, x, sizes).outputs["c"]
    want = evaluate(f, x, sizes, compute_dtype=np.float64)["c"]
    v = compare(got, want, f.results[0].type.dtype, rounding_bound(f, x, sizes)["c"])
    assert v.passed, (v.error, v.tolerance, v.reason)
