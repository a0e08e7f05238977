"""Rows that start off a 32-byte sector (f32 N = 1025, 16-bit N odd) are read and written in whole sectors:
the scheduler shifts the lanes of each row back to the sector at or below the row start
(passes/schedule/shift.py), so a row moves exactly the sectors it spans.

`_spanned` is that model: per row r of a row-major [rows, N] tensor, the sectors from byte r*N*size to byte
(r+1)*N*size - 1. Broadcast operands (gamma, beta) are staged once per block (persistent grid) or per row
team, whole sectors from their aligned start. Values are compared with gir.evaluate on fresh random inputs.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.printer import print_module
from gir.passes.analysis.checks import check_kernel
from gir.passes.schedule import lower_func, plan_func
from gir.targets.bench.programs import program_text
from gir.targets.sim import run_func

SECTOR = 32


def _spanned(rows: int, n: int, size: int) -> int:
    r = np.arange(rows, dtype=np.int64)
    return int(SECTOR * (((r + 1) * n * size - 1) // SECTOR - (r * n * size) // SECTOR + 1).sum())


def _func(op: str, dtype: str) -> ir.Func:
    return parse_text(program_text(op, dtype), f"<{op}:{dtype}>").funcs[0]


def _run(func: ir.Func, sizes: dict, hints: dict | None = None):
    """Schedule for `hints` (default: the run sizes), run on the SIMT simulator, check values."""
    low = lower_func(func, "sim", {"sizes": hints or sizes})
    inputs = random_inputs(func, sizes, np.random.default_rng(0))
    run = run_func(low, inputs, sizes, check_races=False)
    tol = 2e-2 if any(p.type.dtype.nbytes == 2 for p in func.params) else 2e-5
    for k, want in evaluate(func, inputs, sizes).items():
        np.testing.assert_allclose(np.asarray(run.outputs[k], np.float64), np.asarray(want, np.float64),
                                   rtol=tol, atol=tol, err_msg=f"{func.name}.{k} {sizes}")
    return low, run.stats


def _config(func: ir.Func, sizes: dict):
    return plan_func(func, "sim", {"sizes": sizes}).groups[0].config


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_rows_move_the_sectors_they_span(op, dtype):
    M, N = 96, 1025
    func = _func(op, dtype)
    size = func.params[0].type.dtype.nbytes
    cfg = _config(func, {"M": M, "N": N})
    assert cfg.shift == SECTOR // size and cfg.vec == 16 // size, cfg
    _, st = _run(func, {"M": M, "N": N})
    assert st.global_read_bytes == _spanned(M, N, size)
    assert st.global_write_bytes == _spanned(M, N, size)
    assert st.global_bytes / (2 * M * N * size) <= 1.02  # f32 1.006, 16-bit 1.014 (boundary sectors)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_norm_rows_shifted_with_staged_weights(op, dtype):
    """x and y move their spanned sectors; gamma (and beta) are read once per row team into shared memory."""
    M, N = 40, 1025
    func = _func(op, dtype)
    size = func.params[0].type.dtype.nbytes
    cfg = _config(func, {"M": M, "N": N})
    assert cfg.shift and cfg.vec == 16 // size and cfg.cached, cfg
    _, st = _run(func, {"M": M, "N": N})
    teams = min(cfg.persistent, M) if cfg.persistent else M
    weights = len(func.params) - 1
    assert st.global_read_bytes == _spanned(M, N, size) + teams * weights * _spanned(1, N, size)
    assert st.global_write_bytes == _spanned(M, N, size)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("M,N", [(1, 1025), (5, 1), (9, 7), (1, 1), (3, 33), (2, 3001)])
def test_short_odd_and_single_rows(M, N, dtype):
    func = _func("softmax", dtype)
    size = func.params[0].type.dtype.nbytes
    _, st = _run(func, {"M": M, "N": N})
    if _config(func, {"M": M, "N": N}).shift:
        assert st.global_read_bytes == _spanned(M, N, size)
        assert st.global_write_bytes == _spanned(M, N, size)
    else:  # every row starts on a sector at these sizes: nothing to shift
        assert all((r * N * size) % SECTOR == 0 for r in range(M))


@pytest.mark.parametrize("N", [1024, 1027, 1033, 1, 2049])
def test_other_row_lengths_take_the_guarded_paths(N):
    """Planned for N = 1025 (guard N % 8 == 1), run at other lengths: the vec=1 cached or scalar path."""
    func = parse_file("samples/layernorm.gir").funcs[0]
    low, _ = _run(func, {"M": 6, "N": N}, hints={"M": 1000, "N": 1025})
    assert "N % 8 == 1" in print_module(ir.Module((low,)))


def test_multi_dim_rows_shift_by_their_linear_start():
    """scaled_causal_softmax x[B, H, S, S]: row (b, h, s) starts at ((b*H + h)*S + s)*S."""
    func = parse_file("samples/scaled_causal_softmax.gir").funcs[0]
    sizes = {"B": 2, "H": 3, "S": 37}
    assert _config(func, sizes).shift == 8
    _, st = _run(func, sizes)
    rows = 2 * 3 * 37
    assert st.global_write_bytes == _spanned(rows, 37, 4)
    assert st.global_read_bytes >= _spanned(rows, 37, 4)


@pytest.mark.parametrize("op,dtype,M,N", [("softmax", "f32", 64, 1024), ("softmax", "f16", 4096, 4096),
                                           ("rmsnorm", "bf16", 64, 1024), ("layernorm", "f32", 4096, 4096)])
def test_aligned_rows_unchanged(op, dtype, M, N):
    """Every row starts on a sector: no shifted candidate, no specialisation guard."""
    func = _func(op, dtype)
    assert getattr(_config(func, {"M": M, "N": N}), "shift", 0) == 0
    text = print_module(ir.Module((lower_func(func, "sim", {"sizes": {"M": M, "N": N}}),)))
    assert "for _s in" not in text and not re.search(r"% \d+ == [1-9]", text)


def test_search_ranks_shifted_against_unshifted_candidates():
    """The shift is a candidate of the search (not forced): forcing the unshifted vec=1 cached config still
    schedules, and moves more (one sector more per warp access of most rows)."""
    func = parse_file("samples/softmax.gir").funcs[0]
    sizes = {"M": 64, "N": 1025}
    best = _config(func, sizes)
    assert best.shift
    forced = plan_func(func, "sim", {"sizes": sizes, "row_config": type(best)(128, 1, 1, 9)}).groups[0].config
    assert not forced.shift
    low = lower_func(func, "sim", {"sizes": sizes, "row_config": forced})
    inputs = random_inputs(func, sizes, np.random.default_rng(0))
    st = run_func(low, inputs, sizes, check_races=False).stats
    assert st.global_write_bytes > 1.15 * _spanned(64, 1025, 4)


def test_shifted_kernel_passes_the_checks_and_alignment_is_proved():
    """Every vector access of the shifted kernel is proved aligned (z3, from the residue guard and the skew
    loop); moving the skew by one element makes the check fail."""
    func = parse_file("samples/layernorm.gir").funcs[0]
    low = lower_func(func, "cuda", {"sizes": {"M": 1000, "N": 1025}})
    for k in low.kernels:
        assert not [d for d in check_kernel(low, k, "cuda") if d.check != "overflow"]
    text = print_module(ir.Module((low,)))
    assert "for _s in" in text and "with vec=4, mask" in text
    bad = parse_text(text.replace("_b0 % 8 + 1", "_b0 % 8 + 2").replace("in _b0 % 8..", "in _b0 % 8 + 1.."),
                     "<bad>").funcs[0]
    errors = [d for k in bad.kernels for d in check_kernel(bad, k, "cuda", checks=("alignment",))]
    assert errors and all(d.severity == "error" for d in errors)
