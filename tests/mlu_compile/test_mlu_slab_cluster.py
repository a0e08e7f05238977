"""A unit's slab shared by the cores of a cluster (passes/schedule_mlu/tiles_cluster.py): statistics over the rows
(column max, sum, mean, variance, the online softmax's rescaled sum) are combined across the four cores through
SRAM. Before, a column softmax at sizes whose rows are not whole 64-byte granules ran in 32-lane strips (128-byte
row segments: 2,039^2 f32 1.704x the DMA roofline, 4,093 x 1,021 2.168x).

Values against the evaluator with the shared plan forced at awkward sizes (a core without a sub-tile, one lane,
two combine passes, 16-bit tensors, per-lane results stored once, unit axes), the static checks on every kernel,
and the simulated time of the plans the planner picks at >= 4M elements."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu import tiles_kernel as K
from gir.targets.mlu.run import run_func
from gir.walk import walk_stmts

from tests.mlu_compile.test_mlu_tiles import _check

SOFTMAX_COL = """func f(x: T[N, C]) -> (y: T[N, C]) {
  mx[c] = max(f32(x[n, c]))
  e[n, c] = exp(f32(x[n, c]) - mx[c])
  s[c] = sum(e[n, c])
  y[n, c] = T(e[n, c] / s[c])
}
"""
COL_NORM = """func f(x: f32[N, C], g: f32[C]) -> (y: f32[N, C], m: f32[C]) {
  m[c] = mean(x[n, c])
  v[c] = mean((x[n, c] - m[c]) * (x[n, c] - m[c]))
  y[n, c] = (x[n, c] - m[c]) / sqrt(v[c] + 0.00001) * g[c]
}
"""
MIN_MAX = """func f(x: f32[N, C]) -> (y: f32[N, C]) {
  lo[c] = min(x[n, c])
  hi[c] = max(x[n, c])
  y[n, c] = (x[n, c] - lo[c]) / (hi[c] - lo[c] + 0.001)
}
"""
CAUSAL = """func f(x: f32[N, C]) -> (y: f32[N, C]) {
  z[n, c] = select(c <= n, x[n, c], -inf)
  mx[c] = max(z[n, c])
  e[n, c] = exp(z[n, c] - mx[c])
  s[c] = sum(e[n, c])
  y[n, c] = e[n, c] / s[c]
}
"""
MID = """func f(x: f32[B, N, C]) -> (y: f32[B, N, C]) {
  mx[b, c] = max(x[b, n, c])
  e[b, n, c] = exp(x[b, n, c] - mx[b, c])
  s[b, c] = sum(e[b, n, c])
  y[b, n, c] = e[b, n, c] / s[b, c]
}
"""


def _shared(e: ir.Func) -> bool:
    return any(isinstance(s, ir.Parallel) and s.level == ir.ParLevel.cluster for k in e.kernels for s in walk_stmts(k.body))


@pytest.fixture
def shared_first(monkeypatch):
    """The planner's estimate put slabs shared by a cluster first (small sizes are not timed: the first plan that
    fits wins)."""
    orig = K.estimate
    monkeypatch.setattr(K, "estimate", lambda t, pl, tasks=K.TASKS: orig(t, pl, tasks) *
                        (0.001 if pl.mode == "slab" and pl.parts == K.CORES else 1.0))


CASES = [(SOFTMAX_COL.replace("T", "f32"), {"N": 301, "C": 517}),
         (SOFTMAX_COL.replace("T", "f32"), {"N": 200, "C": 131}),
         (SOFTMAX_COL.replace("T", "f32"), {"N": 150, "C": 100}),    # 3 sub-tiles of 64 rows: core 3 has none
         (SOFTMAX_COL.replace("T", "f16"), {"N": 211, "C": 97}),
         (SOFTMAX_COL.replace("T", "bf16"), {"N": 130, "C": 256}),
         (COL_NORM, {"N": 257, "C": 259}),                            # two combines (mean, then variance)
         (MIN_MAX, {"N": 101, "C": 333}),
         (MID, {"B": 3, "N": 67, "C": 129}),
         (CAUSAL, {"N": 300, "C": 200})]                            # sub-tiles of -inf only in a column


@pytest.mark.parametrize("src,sizes", CASES)
def test_values_with_the_shared_slab(shared_first, src, sizes):
    f = parse_text(src).funcs[0]
    e = _check(f, sizes)   # static checks (bounds, races, barriers, capacity) and values against the evaluator
    assert _shared(e), "the shared slab was not taken"


def test_sub_tiles_of_minus_inf_only():
    """A column whose first sub-tiles are all -inf (a causal mask): the online max started at -inf and the rescale
    exp(m_old - m_new) was exp(-inf - -inf) = NaN (before this change too: 4,092,273 NaN at 2,039^2)."""
    f = parse_text(CAUSAL).funcs[0]
    _check(f, {"N": 2039, "C": 2039})


@pytest.fixture
def grid_first(monkeypatch):
    """The planner's estimate put slabs shared by every core first."""
    orig = K.estimate
    monkeypatch.setattr(K, "estimate", lambda t, pl, tasks=K.TASKS: orig(t, pl, tasks) *
                        (0.001 if pl.mode == "slab" and pl.parts == tasks else 1.0))


GRID_CASES = [(SOFTMAX_COL.replace("T", "f32"), {"N": 3001, "C": 40}),
              (SOFTMAX_COL.replace("T", "f16"), {"N": 6000, "C": 3}),
              (COL_NORM, {"N": 2100, "C": 33}),
              (CAUSAL, {"N": 4000, "C": 20}),
              (MID, {"B": 2, "N": 4000, "C": 20})]


@pytest.mark.parametrize("src,sizes", GRID_CASES)
def test_values_with_the_slab_shared_by_every_core(grid_first, src, sizes):
    """Too few units for the clusters (narrow columns): every core takes sub-tiles of each unit, the partials
    combined through a GDRAM array between two `sync @all` (static checks included: the barriers order them)."""
    f = parse_text(src).funcs[0]
    assert _grid(_check(f, sizes))


def test_sram_not_allowed_keeps_one_core_per_unit(shared_first):
    f = parse_text(SOFTMAX_COL.replace("T", "f32")).funcs[0]
    assert not _shared(schedule_mlu(f, {"N": 301, "C": 517}, allow_sram=False))


def _grid(e: ir.Func) -> bool:
    return any(isinstance(s, ir.Sync) and s.level == ir.ParLevel.all for k in e.kernels for s in walk_stmts(k.body))


@pytest.mark.parametrize("sizes,bound,before,kind", [({"N": 2039, "C": 2039}, 1.30, 1.704, _shared),
                                                     ({"N": 4093, "C": 1021}, 1.42, 2.168, _shared),
                                                     ({"N": 4096, "C": 1025}, 1.53, 2.969, _shared),
                                                     ({"N": 65521, "C": 64}, 1.30, 2.941, _grid),
                                                     ({"N": 131071, "C": 32}, 1.30, 3.238, _grid),
                                                     ({"N": 8192, "C": 32}, 2.5, 4.168, _grid),
                                                     # one 1,024-lane unit: the two-level combine (its partials
                                                     # were 25% of the bytes through GDRAM; 1.521x before it)
                                                     ({"N": 8191, "C": 1023}, 1.36, 1.521, _grid)])
def test_time_of_the_column_softmax(sizes, bound, before, kind):
    """The plan the planner picks; narrow columns (every core shares a unit): before, the statistics went through
    GDRAM in other recipes (five kernels, x read three times)."""
    f = parse_text(SOFTMAX_COL.replace("T", "f32")).funcs[0]
    res = run_func(f, None, sizes, values=False)
    assert kind(res.explicit) and len(res.explicit.kernels) == 1
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < bound < before


def test_whole_rows_at_aligned_sizes_stay_as_they_were():
    """4,096^2: 128-byte segments are whole granules there; the one-core slab stays (1.174x)."""
    f = parse_text(SOFTMAX_COL.replace("T", "f32")).funcs[0]
    res = run_func(f, None, {"N": 4096, "C": 4096}, values=False)
    assert not _shared(res.explicit)
    assert res.stats["seconds"] / (compulsory_bytes(f, {"N": 4096, "C": 4096}) / 307e9) < 1.18


def random_program(seed: int) -> tuple[str, dict]:
    """A seeded program of statistics over the rows (one or two levels, max / min / sum / mean of an element-wise
    expression) used again at every row, any float type, a unit axis or none, awkward sizes."""
    rng = np.random.default_rng(seed)
    t = ["f32", "f16", "bf16"][rng.integers(3)]
    unit = bool(rng.integers(2))
    ax = "b, n, c" if unit else "n, c"
    st = "b, c" if unit else "c"
    x = f"f32(x[{ax}])"
    unary = ["exp({})", "({}) * 0.5", "abs({})", "({}) * ({})", "tanh({})"]
    e1 = unary[rng.integers(len(unary))].format(x, x)
    r1 = ["max", "min", "sum", "mean"][rng.integers(4)]
    lines = [f"  a[{st}] = {r1}({e1})"]
    y = f"{x} - a[{st}]"
    if rng.integers(2):   # a second level using the first statistic
        r2 = ["max", "sum", "mean"][rng.integers(3)]
        lines.append(f"  v[{st}] = {r2}(({x} - a[{st}]) * ({x} - a[{st}]))")
        y = f"({x} - a[{st}]) / sqrt(v[{st}] + 1.0)"
    elif r1 == "max" or rng.integers(3) == 0:   # the online softmax pair (exp(x - a) with a the max)
        lines[0] = f"  a[{st}] = max({x})"
        lines.append(f"  s[{st}] = sum(exp({x} - a[{st}]))")
        y = f"exp({x} - a[{st}]) / s[{st}]"
    outs = f"y: {t}[{'B, ' if unit else ''}N, C]"
    if rng.integers(2):
        outs += f", o: f32[{'B, ' if unit else ''}C]"
        lines.append(f"  o[{st}] = a[{st}] * 2.0")
    lines.append(f"  y[{ax}] = {t}({y})")
    src = f"func f(x: {t}[{'B, ' if unit else ''}N, C]) -> ({outs}) {{\n" + "\n".join(lines) + "\n}\n"
    sizes = {"N": int(rng.integers(64, 400)), "C": int(rng.integers(33, 700))}
    if unit:
        sizes["B"] = int(rng.integers(1, 4))
    return src, sizes


@pytest.mark.parametrize("seed", range(12))
def test_random_statistics_programs_with_the_shared_slab(shared_first, seed):
    src, sizes = random_program(seed)
    _check(parse_text(src).funcs[0], sizes, seed)


@pytest.mark.parametrize("seed", range(6))
def test_random_statistics_programs_with_the_grid_slab(grid_first, seed):
    """The slab every core shares, its partials combined in two levels (SRAM within a cluster, then one GDRAM
    row per cluster: tiles_cluster.Combine), on the random statistics programs at sizes with few units and
    enough rows for every core (static checks included: the race check sees the `sync @all` order the
    clusters)."""
    src, sizes = random_program(100 + seed)
    rng = np.random.default_rng(seed)
    sizes.update(N=int(rng.integers(1024, 2600)), C=int(rng.integers(17, 260)))
    if "B" in sizes:
        sizes["B"] = 1
    e = _check(parse_text(src).funcs[0], sizes, seed)
    assert _grid(e), src
