"""Long rows that fit NRAM once computed in place run single-pass (x read once; passes/schedule_mlu/lower_rows.py,
placement.py, codegen/mlu/emit.py). The placement budgets the NRAM the emitter declares (tiles with their pipeline
slots: 3 for a tile loaded and stored, scratch and mask tiles); a budget one byte short of one row's footprint
goes to the chunked schedule (longrows.py). Simulated with NRAM shrunk to the budget, so a planning error would be
an overflow."""
import dataclasses

import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.placement import RESERVE, nram_footprint
from gir.passes.schedule_mlu.rowmodel import analyze_rows
from gir.passes.schedule_mlu.schedule import specialize
from gir.targets.bench.programs import program_text
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func

TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


def _func(op, dt):
    return parse_text(program_text(op, dt)).funcs[0]


def _one_row(f, sizes) -> int:
    """The smallest `nram` budget with which one row runs single-pass."""
    return nram_footprint(analyze_rows(specialize(f, sizes), {}), 1) + RESERVE


@pytest.mark.parametrize("op,dt,m,n", [
    ("softmax", "f32", 67, 2000), ("softmax", "f16", 33, 2048), ("log_softmax", "f32", 40, 2048),
    ("log_softmax", "bf16", 35, 1000), ("rmsnorm", "f32", 70, 1025), ("rmsnorm", "f16", 33, 2048),
    ("layernorm", "f32", 65, 2048), ("layernorm", "bf16", 37, 1000),
])
def test_single_pass_at_one_row_budget_matches_evaluator(op, dt, m, n):
    f = _func(op, dt)
    sizes = {"M": m, "N": n}
    nram = _one_row(f, sizes)
    e = schedule_mlu(f, sizes, nram=nram)
    src = "".join(k.source for k in emit_func(e))
    assert "for (int ch1_" not in src and "it_ % 3 *" in src       # one pass; y stored from x's load tile (3 slots)
    chunked = "".join(k.source for k in emit_func(schedule_mlu(f, sizes, nram=nram - 1)))
    assert "for (int ch1_" in chunked                      # a byte less: the row does not fit, chunked passes
    x = random_inputs(f, sizes, np.random.default_rng(0))
    small = dataclasses.replace(MLU370, nram_bytes=nram - RESERVE)   # what the plan says the kernel needs
    res = run_func(e, x, sizes, machine=small)
    for k, want in evaluate(f, x, sizes).items():
        want = np.asarray(want, np.float64)
        tol = TOL[dt]
        np.testing.assert_allclose(res.outputs[k].astype(np.float64), want, rtol=tol,
                                   atol=tol * max(1.0, np.abs(want).max()))
    compulsory = sum(a.nbytes for a in x.values()) + sum(np.asarray(v).size for v in res.outputs.values()) * \
        f.results[0].type.dtype.nbytes
    col_extra = sum(np.asarray(v).nbytes * 31 for k, v in x.items() if np.asarray(v).ndim == 1)   # per core
    if n * f.params[0].type.dtype.nbytes % MLU370.dma_granularity == 0:   # rows of whole DMA segments
        assert compulsory <= res.stats["gdram_traffic_bytes"] <= compulsory + col_extra
    else:   # x read once, but rows share segments (the chunked schedule: 1.5x)
        assert res.stats["gdram_traffic_bytes"] <= 1.1 * compulsory + col_extra


@pytest.mark.parametrize("op,dt", [("softmax", "f32"), ("log_softmax", "f16"), ("rmsnorm", "f32")])
def test_bench_shape_32768_is_single_pass_near_the_roofline(op, dt):
    # the chunked schedule read x twice: 1.5x the compulsory traffic, 1.64x (softmax f32) to 2.13x (log_softmax
    # f16) the DMA roofline
    f = _func(op, dt)
    sizes = {"M": 4096, "N": 32768}
    res = run_func(f, None, sizes, values=False)
    esz = f.params[0].type.dtype.nbytes
    compulsory = 2 * 4096 * 32768 * esz + sum(32768 * p.type.dtype.nbytes * 32 for p in f.params[1:])
    assert res.stats["gdram_traffic_bytes"] <= compulsory
    assert res.stats["gdram_traffic_bytes"] >= 2 * 4096 * 32768 * esz
    assert res.stats["seconds"] < 1.12 * 2 * 4096 * 32768 * esz / MLU370.gdram_bandwidth


def test_layernorm_32768_f32_stays_chunked():
    # x (3 slots) + d*d + gamma + beta = 768 KiB: all of NRAM, before row vectors; the chunked passes remain
    e = schedule_mlu(_func("layernorm", "f32"), {"M": 64, "N": 32768})
    assert "for (int ch1_" in "".join(k.source for k in emit_func(e))
