"""The search over MLU recipes (passes/schedule_mlu/recipes.py) and its cost model (passes/schedule_mlu/cost.py):
every recipe that maps a function is a candidate; the estimate must rank them as the simulator's timing model
does, see idle cores and re-read slabs, and the choice is reported as an analysis remark."""
from __future__ import annotations

import dataclasses
import sys

import pytest

from gir import ir
from gir.parser import parse_file, parse_text
from gir.shapes import func_info
from gir.passes.schedule_mlu import schedule as S
from gir.passes.schedule_mlu.cost import estimate
from gir.passes.schedule_mlu.recipes import Setting, best, search
from gir.targets.mlu.run import run_func

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/differential")
from diffprog import program  # noqa: E402


def _search(func: ir.Func, sizes: dict[str, int]):
    """The candidates of the recipes for `func`, prepared as schedule_mlu prepares it."""
    from gir.passes.analysis.index_bounds import clamp_func
    from gir.passes.builtin.argreduce import lower_arg_reductions
    from gir.passes.builtin.hoist import hoist_reductions
    full = S.specialize(clamp_func(lower_arg_reductions(hoist_reductions(func))), sizes)
    read = {n for s in full.body if isinstance(s, ir.Assign) for n in S._refs(s.value)}
    spec = dataclasses.replace(full, params=tuple(p for p in full.params if p.name in read))
    return search(full, spec, func_info(spec), Setting("k", 32, 768 * 1024, True, 64, True), S._compulsory(spec))


def _simulated(c, sizes) -> float:
    return run_func(c.config, None, sizes, values=False).stats["seconds"]


# samples two or more recipes map, at sizes where the candidates differ (report sizes / 8)
OVERLAP = {"softmax": {"M": 512, "N": 512}, "layernorm": {"M": 512, "N": 512}, "row_sum": {"M": 512, "N": 512},
           "col_sum": {"M": 512, "N": 512}, "activations": {"M": 512, "N": 512},
           "broadcast_scale": {"A": 8, "B": 8, "C": 4, "D": 4}, "reduce_mid": {"B": 2, "S": 128, "D": 512},
           "rmsnorm_bf16": {"M": 512, "N": 512}, "group_norm": {"N": 2, "G": 4, "CG": 8, "HW": 512}}


@pytest.mark.parametrize("name", sorted(OVERLAP))
def test_the_search_picks_a_candidate_the_simulator_finds_fastest(name):
    sizes = OVERLAP[name]
    found = _search(parse_file(f"samples/{name}.gir").funcs[0], sizes)
    assert len(found.candidates) >= 2, [c.strategy for c in found.candidates]
    times = {c.strategy: _simulated(c, sizes) for c in found.candidates}
    pick = best(found.candidates)
    assert times[pick.strategy] <= 1.10 * min(times.values()), (pick.strategy, times)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "col_sum", "broadcast_scale", "softmax_col", "rope_flat",
                                  "transpose2d", "cross_entropy"])
def test_the_estimate_tracks_the_simulated_time(name):
    f = parse_file(f"samples/{name}.gir").funcs[0]
    sizes = {s: 512 for s in f.size_symbols()}
    if name == "broadcast_scale":
        sizes = {"A": 16, "B": 16, "C": 32, "D": 32}
    if name == "rope_flat":
        sizes = {"S": 512, "D": 256, "K": 128}
    pick = best(_search(f, sizes).candidates)
    ratio = pick.seconds / _simulated(pick, sizes)
    assert 0.6 <= ratio <= 1.5, ratio


def test_idle_cores_and_reread_operands_are_costed():
    # the tile recipe maps a row sum onto one core's work units at these sizes: 4x slower, the estimate sees it
    found = _search(parse_file("samples/row_sum.gir").funcs[0], {"M": 512, "N": 512})
    by = {c.strategy: c for c in found.candidates}
    assert by["tiles"].seconds > 3 * by["rows"].seconds
    assert by["tiles"].estimate["estimate"].kernels[0].busy_tasks < 32
    # the rank > 2 row view reads w once per tile of rows: more GDRAM bytes than the tile recipe's merged axes
    found = _search(parse_file("samples/broadcast_scale.gir").funcs[0], {"A": 64, "B": 64, "C": 32, "D": 32})
    by = {c.strategy: c for c in found.candidates}
    assert by["extended"].dram_bytes > 1.3 * by["tiles"].dram_bytes
    assert best(found.candidates).strategy == "tiles"


def test_dma_latency_and_vector_issue_are_counted():
    text = """func f(x: f32[64, 256]) -> (y: f32[64, 256]) {
  kernel f_k with task_dim=32 {
    parallel t in 0..32 @core {
      alloc a: f32[2, 256] @nram
      for r in 0..1 {
        load a[0:2, 0:256] <- x[2 * t:2 * t + 2, 0:256]
        a[0:2, 0:256] = exp(a[0:2, 0:256])
        a[0:2, 0:256] = a[0:2, 0:256] + 1.0
        store y[2 * t:2 * t + 2, 0:256] <- a[0:2, 0:256]
      }
    }
  }
}
"""
    f = parse_text(text, "k.gir").funcs[0]
    from gir.passes.machines import MLU370 as m
    k = estimate(f).kernels[0]
    assert k.tasks == 32 and k.busy_tasks == 32
    assert k.io >= 2 * m.gdram_latency_cycles   # one load, one store
    units = 2 * 256 * 4 // m.vector_unit_bytes
    assert k.compute == 2 * m.vector_op_cycles + units * (m.cycles_special + m.cycles_simple)
    assert k.gdram == 2 * 64 * 256 * 4
    sim = run_func(f, None, {}, values=False).stats["seconds"]
    assert 0.6 <= estimate(f).seconds / sim <= 1.5


@pytest.mark.parametrize("seed", [20, 40, 45, 78, 110, 111, 117, 145, 182])
def test_random_programs_the_search_ranks_like_the_simulator(seed):
    # seeded random programs (tests/differential/diffprog.py) two recipes map, scaled up 16x
    text, sizes = program(seed)
    sizes = {k: v * 16 for k, v in sizes.items()}
    found = _search(parse_text(text, f"<random {seed}>").funcs[0], sizes)
    assert len(found.candidates) >= 2
    times = {c.strategy: _simulated(c, sizes) for c in found.candidates}
    assert times[best(found.candidates).strategy] <= 1.10 * min(times.values()), times


def test_the_choice_is_an_analysis_remark(tmp_path, capsys):
    from gir.cli import main
    main(["run", "samples/broadcast_scale.gir", "--target", "mlu-sim", "--sizes", "A=8,B=8,C=4,D=4", "-R"])
    err = capsys.readouterr()
    text = err.out + err.err
    assert "broadcast_scale.gir:2:1: remark: function 'broadcast_scale': MLU recipe 'tiles'" in text
    assert "others: extended" in text


def test_row_statistics_applied_per_row_are_costed_per_row():
    # the last statement of layernorm_768 alone (the op-by-op baseline schedules it so): the tile recipe's
    # [1024, 32] tiles apply mu and vr with one vector op per row (1024 ops of 32 elements per tile), the row model
    # one per row of 768; the estimate must count those ops (it once chose the tile schedule: 186 vs 100 us)
    text = """func f(x: f32[M, 768], mu: f32[M], vr: f32[M], gamma: f32[768], beta: f32[768]) -> (y: f32[M, 768]) {
  y[i, j] = (x[i, j] - mu[i]) / sqrt(vr[i] + 1e-05) * gamma[j] + beta[j]
}
"""
    sizes = {"M": 4096}
    found = _search(parse_text(text, "s.gir").funcs[0], sizes)
    times = {c.strategy: _simulated(c, sizes) for c in found.candidates}
    assert set(times) == {"rows", "tiles"} and times["tiles"] > 1.5 * times["rows"]
    assert best(found.candidates).strategy == "rows"


def test_a_recipe_that_crashes_is_reported_and_the_others_compete(monkeypatch):
    import gir.passes.schedule_mlu.recipes as R
    from gir.passes.schedule_mlu import schedule_mlu

    def broken(*args):
        raise TypeError("boom")
    recipes = tuple(R.Recipe(r.name, broken) if r.name == "tiles" else r for r in R.RECIPES)
    monkeypatch.setattr(R, "RECIPES", recipes)
    remarks: list = []
    out = schedule_mlu(parse_file("samples/softmax.gir").funcs[0], {"M": 64, "N": 96}, remarks=remarks)
    assert len(out.kernels) == 1
    hit = [r for r in remarks if "recipe 'tiles' failed with an internal error (TypeError: boom)" in r.message]
    assert hit and hit[0].kind == "missed" and hit[0].loc is not None


def test_tile_plans_are_ranked_by_the_cost_model(monkeypatch):
    # the tile recipe's plans (lane width, held / slab / stream, sub-tile rows) were taken in the order of an
    # analytic estimate of GDRAM bytes and DMA latencies; the first RANKED that fit are timed by the cost model:
    # group_norm_view's slab sub-tiles of 16 rows instead of 8 (1.326x -> 1.276x the DMA roofline)
    import gir.passes.schedule_mlu.tiles_kernel as K
    from gir.passes.schedule_mlu import schedule_mlu
    f = parse_file("samples/group_norm_view.gir").funcs[0]
    sizes = {"N": 16, "C": 256, "H": 32, "W": 32, "C_div_4": 64, "H_mul_W": 1024}   # (derived sizes bound)
    ranked = run_func(schedule_mlu(f, sizes), None, sizes, values=False).stats["seconds"]
    monkeypatch.setattr(K, "RANKED", 1)   # the analytic estimate's first plan that fits
    first = run_func(schedule_mlu(f, sizes), None, sizes, values=False).stats["seconds"]
    assert ranked < 0.97 * first


def test_the_tile_recipe_is_also_tried_on_the_declared_axes():
    # merging mse_loss's two axes into one leaves the tile recipe no tile of two axes; on the declared axes it
    # is one kernel (the rank > 2 row view's partials + combine are two): 10.3 vs 10.7 us at 256 x 520 (at 7 x 65
    # one kernel took 2.6 us instead of 3.3 when its plans were ranked, which small functions now skip)
    sizes = {"M": 256, "N": 520}
    found = _search(parse_file("samples/mse_loss.gir").funcs[0], sizes)
    by = {c.strategy: c for c in found.candidates}
    assert "tiles" not in by and {"extended", "tiles-unmerged"} <= set(by)
    assert best(found.candidates).strategy == "tiles-unmerged"
    assert _simulated(by["tiles-unmerged"], sizes) < _simulated(by["extended"], sizes)


ROW_VECTORS = {
    "row_max": "func f(x: DT[M, N]) -> (y: DT[M], lo: DT[M], r: DT[M]) {\n  y[i] = max(x[i, j])\n"
               "  lo[i] = min(x[i, j])\n  r[i] = y[i] - lo[i]\n}\n",
    "scaled": "func f(x: DT[M, N], s: f32[M], b: f16[M]) -> (y: DT[M, N], t: DT[M]) {\n"
              "  y[i, j] = x[i, j] * DT(s[i]) + DT(b[i])\n  t[i] = DT(sum(f32(x[i, j])) * s[i])\n}\n",
}


@pytest.mark.parametrize("name", sorted(ROW_VECTORS))
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("sizes", [{"M": 2048, "N": 300}, {"M": 96, "N": 1000}, {"M": 4096, "N": 1},
                                   {"M": 33, "N": 64}, {"M": 2039, "N": 61}, {"M": 5, "N": 3}])
def test_rows_blocked_values(name, dt, sizes):
    """Recipe `rows-blocked` (each core's tiles contiguous, its [M] vectors moved once per core) competes with
    `rows` at every M (where the rows do not split evenly over the cores the last busy core's run is cut short and
    the cores past M idle); whichever wins, the values of both match the evaluator."""
    import numpy as np

    from gir.evaluate import evaluate, random_inputs
    from gir.verdict import compare
    f = parse_text(ROW_VECTORS[name].replace("DT", dt)).funcs[0]
    found = _search(f, sizes)
    names = [c.strategy for c in found.candidates]
    assert "rows-blocked" in names, (names, found.why_not)
    x = random_inputs(f, sizes, np.random.default_rng(5))
    want = evaluate(f, x, sizes)
    for c in found.candidates:
        if c.strategy not in ("rows", "rows-blocked"):
            continue
        got = run_func(c.config, x, sizes).outputs
        for p in f.results:
            v = compare(got[p.name], want[p.name], p.type.dtype)
            assert v.passed, (c.strategy, p.name, v.reason)


def test_rows_blocked_stores_each_result_once_per_core():
    """row_max at 2048 x 2048: three [M] results stored per 8-row tile were three 500-cycle DMAs per tile (1.297x
    the DMA roofline); stored once per core, 1.124x, and the search picks it."""
    f = parse_file("samples/row_max.gir").funcs[0]
    sizes = {"M": 2048, "N": 2048}
    found = _search(f, sizes)
    pick = best(found.candidates)
    assert pick.strategy == "rows-blocked", [(c.strategy, c.seconds) for c in found.candidates]
    stores = [s for k in pick.config.kernels for s in _moves(k.body) if s.kind == "store"]
    assert len(stores) == 3 and all(not _in_loop(k.body, s) for k in pick.config.kernels for s in stores)
    times = {c.strategy: _simulated(c, sizes) for c in found.candidates}
    assert times["rows-blocked"] < 0.95 * times["rows"], times

def test_rows_blocked_uneven_rows():
    """Rows that do not split evenly over the 32 cores (M = 2039: 31 cores take 64 rows, the last 55): blocked
    too, each busy core's vectors moved once (masked), idle cores skip them. row_max was 1.310x the DMA roofline
    with a DMA per tile and result; blocked 1.140x (at 1000 x 777, timed here: 1.651x -> 1.473x)."""
    f = parse_file("samples/row_max.gir").funcs[0]
    sizes = {"M": 1000, "N": 777}
    found = _search(f, sizes)
    pick = best(found.candidates)
    assert pick.strategy == "rows-blocked", [(c.strategy, c.seconds) for c in found.candidates]
    times = {c.strategy: _simulated(c, sizes) for c in found.candidates}
    assert times["rows-blocked"] < 0.95 * times["rows"], times


def test_rows_blocked_short_rows():
    """Short rows (64-row tiles): the per-tile results are moved into the per-core vectors by one on-chip copy
    each (codegen/mlu/vecops.py MOVE_ROWS), not a scalar loop per row, so the blocked form is the faster one
    there too (with the loops row_max at N = 7 was 14.1x the DMA roofline against 10.6x for `rows`). Since the
    dense-staging pass and taller row tiles both forms are near (4.74 and 4.63 us, from 5.25 and 5.67): the pick
    is within 3% of the faster."""
    from gir.codegen.mlu.emit import emit_func
    f = parse_file("samples/row_max.gir").funcs[0]
    sizes = {"M": 4096, "N": 7}
    found = _search(f, sizes)
    times = {c.strategy: _simulated(c, sizes) for c in found.candidates}
    pick = best(found.candidates)
    assert pick.strategy == "rows-blocked" and times["rows-blocked"] < 1.03 * times["rows"], times
    text = "\n".join(k.source for k in emit_func(pick.config))
    loops = [ln for ln in text.splitlines() if "for (int r_" in ln and "_all[" in ln]
    # (the tiles' 28-byte rows move through a dense run too: the dense-staging pass's copies, not counted here)
    moves = [ln for ln in text.splitlines() if "NRAM2NRAM" in ln and "stg_" not in ln]
    assert len(moves) == 3 and "stg_" in text and not loops


def _moves(stmts):
    for s in stmts:
        if isinstance(s, ir.Move):
            yield s
        for child in getattr(s, "body", ()) or ():
            yield from _moves([child])


def _in_loop(stmts, move, inside=False) -> bool:
    for s in stmts:
        if s is move:
            return inside
        if hasattr(s, "body"):
            got = _in_loop(s.body, move, inside or isinstance(s, ir.For))
            if got is not None:
                return got
    return None


@pytest.mark.parametrize("sizes", [{"M": 100001, "N": 1500}, {"M": 131071, "N": 2000}])
def test_rows_blocked_fits_nram_beside_the_placement(sizes):
    """The per-core [M] vectors come on top of the placement's tiles, which may take all of NRAM: the blocked
    tiles shrink until the kernel fits (row_mean at M = 100001, N = 1500 overflowed NRAM by 1.8 KB)."""
    from gir.passes.schedule_mlu.tiles_nram import kernel_nram
    f = parse_file("samples/row_mean.gir").funcs[0]
    found = _search(f, sizes)
    for c in found.candidates:
        assert all(kernel_nram(k) <= 768 * 1024 for k in c.config.kernels), c.strategy
    assert sizes["M"] != 100001 or "rows-blocked" in [c.strategy for c in found.candidates], found.why_not
    run_func(best(found.candidates).config, None, sizes, values=False)   # the simulator's NRAM check
