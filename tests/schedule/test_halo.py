"""Halo staging (passes/schedule/halo.py): a tensor read at several constant offsets along the lane axis is
read from global memory once per chunk (plus its halo) and the shifted variants from shared memory.

Values against the reference evaluator on seeded random inputs (offsets of both signs, two tensors, f16/f32,
select-guarded clamped accesses, a reduction, sizes 1, primes and non-multiples of 32) on the SIMT simulator
with its race checks on; traffic of a stencil near compulsory; the staging refused (with a remark) when the
halo does not fit shared memory, and not applied to a single offset.
"""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.printer import print_module
from gir.verdict import compare
from gir.passes.middle import run_default
from gir.passes.schedule import lower_func, plan_func
from gir.targets.sim import run_func

STENCILS = {
    # offsets -2 and +3 (no offset 0 among the guarded reads), clamped by the guard
    "both_signs": """func both_signs(x: f32[M, N]) -> (y: f32[M, N]) {
  y[i, j] = select(j >= 2 and j + 3 < N, x[i, j - 2] + 2.0 * x[i, j + 3], x[i, j])
}""",
    # two tensors, f16, each at two offsets
    "two_f16": """func two_f16(a: f16[M, N], b: f16[M, N]) -> (y: f16[M, N]) {
  y[i, j] = select(j > 0, a[i, j - 1], a[i, j]) * 0.5 + select(j + 1 < N, b[i, j + 1], 0.0) - b[i, j] + a[i, j]
}""",
    # a reduction of a three-point stencil
    "laplace_sum": """func laplace_sum(x: f32[M, N]) -> (s: f32[M]) {
  s[i] = sum(select(j >= 1 and j + 1 < N, x[i, j - 1] - 2.0 * x[i, j] + x[i, j + 1], 0.0))
}""",
    # i32 (exact), a symmetric difference
    "diff_i32": """func diff_i32(x: i32[M, N]) -> (y: i32[M, N]) {
  y[i, j] = select(j >= 1 and j + 1 < N, x[i, j + 1] - x[i, j - 1], x[i, j])
}""",
}


def _func(name: str) -> ir.Func:
    return parse_text(STENCILS[name], f"<{name}>").funcs[0]


def _sizes(func: ir.Func, m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


def _run(func: ir.Func, sizes: dict, hints: dict | None = None, seed: int = 0):
    low = lower_func(func, "sim", {"sizes": hints or sizes})
    inputs = random_inputs(func, sizes, np.random.default_rng(seed))
    run = run_func(low, inputs, sizes)   # race and barrier checks on
    for k, want in evaluate(func, inputs, sizes).items():
        v = compare(run.outputs[k], want, func.results[0].type.dtype)
        assert v.passed, f"{func.name}.{k} {sizes}: error {v.error:.3g} > {v.tolerance:.3g} {v.reason}"
    return low, run.stats


@pytest.mark.parametrize("name", list(STENCILS))
def test_stencils_are_staged_and_correct(name):
    func = _func(name)
    hints = _sizes(func, 64, 1000)
    cfg = plan_func(func, "sim", {"sizes": hints}).groups[0].config
    assert getattr(cfg, "halo", False), cfg
    low, _ = _run(func, _sizes(func, 5, 97), hints)   # scheduled for long rows, run at a prime
    assert "_h0" in print_module(ir.Module((low,)))
    for k, (m, n) in enumerate([(1, 1), (3, 2), (2, 31), (3, 33), (2, 1021)]):
        _run(func, _sizes(func, m, n), seed=k)       # scheduled for the run sizes


def test_rope_flat_values_and_single_read():
    src = open("samples/rope_flat.gir").read()
    func = parse_text(src, "rope_flat.gir").funcs[0]
    for s, d in [(1, 2), (3, 34), (2, 1022)]:
        _run(func, {"S": s, "D": d, "K": d // 2})
    low, st = _run(func, {"S": 64, "D": 1024, "K": 512})
    read = 4 * 64 * 1024 * 2   # x once, cs and sn (half the columns) once each
    assert st.global_read_bytes <= 1.01 * read, st.global_read_bytes / read


def test_stencil_reads_the_shifted_tensor_once():
    func = _func("both_signs")
    m, n = 256, 1021
    low, st = _run(func, {"M": m, "N": n})
    compulsory = 4 * m * n
    assert st.global_read_bytes <= 1.02 * compulsory, st.global_read_bytes / compulsory
    assert st.global_bytes <= 1.02 * 2 * compulsory, st.global_bytes / (2 * compulsory)


def test_single_offset_is_not_staged():
    func = parse_text("""func one(x: f32[M, N]) -> (y: f32[M, N]) {
  y[i, j] = select(j + 1 < N, 2.0 * x[i, j + 1], 0.0)
}""", "<one>").funcs[0]
    low, _ = _run(func, {"M": 3, "N": 40})
    assert "_h0" not in print_module(ir.Module((low,)))


def test_halo_too_large_for_shared_memory_is_remarked():
    func = parse_text("""func far(x: f32[M, N]) -> (y: f32[M, N]) {
  y[i, j] = x[i, j] + select(j + 20000 < N, x[i, j + 20000], 0.0)
}""", "far.gir").funcs[0]
    hints = {"M": 4096, "N": 20050}
    module, ctx = run_default(ir.Module((func,)), "sim", {"sizes": hints})
    assert "_h0" not in print_module(module)
    msgs = [r.message for r in ctx.remarks if r.kind == "missed"]
    assert any("halo of x is not staged in shared memory" in m for m in msgs), msgs
    _run(func, {"M": 2, "N": 20050}, hints)
