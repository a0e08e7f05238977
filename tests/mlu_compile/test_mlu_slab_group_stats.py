"""Statistics over a whole slab (a group norm's mean and variance over the rows and the lanes of a group) in a slab
shared by several cores (passes/schedule_mlu/tiles_cluster.py): each core reduces its sub-tiles to one value, the
cores' values meet in a [cores] exchange vector (SRAM for a cluster, GDRAM for every core), and every core reduces
that vector. Before, only per-lane statistics were combined, so a group norm with fewer groups than cores ran a
group per core (N = 1, G = 4, 64 x 4,096 groups: 4 cores busy, or other recipes through GDRAM: 3.5x the DMA
roofline).

Values against the evaluator with the shared plans forced (seeded random programs: one or two levels of max / min /
sum / mean of element-wise expressions, the online softmax pair, per-channel operands, f32 / f16 / bf16, a batch
axis or none, awkward sizes), the static checks on every kernel, and the simulated time of the plan the planner
picks for the group norm samples with few groups."""
from __future__ import annotations

import numpy as np
import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_file, parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu import tiles_kernel as K
from gir.targets.mlu.run import run_func
from gir.views import complete_sizes
from gir.walk import walk_stmts

from tests.mlu_compile.test_mlu_tiles import _check


def program(seed: int, affine: bool | None = None) -> tuple[str, dict]:
    """A seeded program of statistics over the two inner axes of each (b, g) group, used again at every element
    (`affine`: with a per-channel operand, or without; default: seeded)."""
    rng = np.random.default_rng(seed)
    t = ["f32", "f16", "bf16"][rng.integers(3)]
    batch = bool(rng.integers(2))
    ax = "b, g, c, s" if batch else "g, c, s"
    st = "b, g" if batch else "g"
    x = f"f32(x[{ax}])"
    e1 = ["{0}", "exp({0} * 0.25)", "abs({0})", "({0}) * ({0})"][rng.integers(4)].format(x)
    r1 = ["max", "min", "sum", "mean"][rng.integers(4)]
    lines = [f"  a[{st}] = {r1}({e1})"]
    y = f"{x} - a[{st}]"
    kind = rng.integers(3)
    if kind == 0:   # a second level over the first (a variance)
        lines.append(f"  v[{st}] = mean(({x} - a[{st}]) * ({x} - a[{st}]))")
        y = f"({x} - a[{st}]) * rsqrt(v[{st}] + 0.00001)"
    elif kind == 1:   # the online softmax pair over the whole group
        lines[0] = f"  a[{st}] = max({x})"
        lines.append(f"  z[{st}] = sum(exp({x} - a[{st}]))")
        y = f"exp({x} - a[{st}]) / z[{st}]"
    ins = f"x: {t}[{'B, ' if batch else ''}G, C, S]"
    draw = bool(rng.integers(2))   # (drawn either way: the rest of the seed's sequence stays)
    if draw if affine is None else affine:   # a per-channel affine
        ins += ", w: f32[G, C]"
        y = f"({y}) * w[g, c] + 0.5"
    outs = f"y: {t}[{'B, ' if batch else ''}G, C, S]"
    if rng.integers(2):
        outs += f", o: f32[{'B, ' if batch else ''}G]"
        lines.append(f"  o[{st}] = a[{st}] + 1.0")
    lines.append(f"  y[{ax}] = {t}({y})")
    src = f"func f({ins}) -> ({outs}) {{\n" + "\n".join(lines) + "\n}\n"
    # (4 to 18 groups, fewer than the cores; rows of 130+ lanes and more than two sub-tiles of rows per core: what
    # a cluster's shared plan needs)
    sizes = {"G": int(rng.integers(2, 6) if batch else rng.integers(4, 10)), "C": int(rng.integers(40, 150)),
             "S": int(rng.integers(130, 700))}
    if batch:
        sizes["B"] = int(rng.integers(2, 4))
    return src, sizes


def _forced(monkeypatch, parts):
    orig = K.estimate
    monkeypatch.setattr(K, "estimate", lambda t, pl, tasks=K.TASKS: orig(t, pl, tasks) *
                        (0.001 if pl.mode == "slab" and pl.parts == parts(tasks) else 1.0))


def _levels(e: ir.Func) -> set:
    return {s.level for k in e.kernels for s in walk_stmts(k.body) if isinstance(s, (ir.Parallel, ir.Sync))}


SEEDS = range(16)


@pytest.mark.parametrize("seed", SEEDS)
def test_group_statistics_in_a_slab_a_cluster_shares(monkeypatch, seed):
    """Values (and static checks) with the cluster's shared slab put first; some programs still take another
    recipe (a group without a per-channel operand is one long row; one group is too few units for the clusters):
    the next test counts those."""
    _forced(monkeypatch, lambda tasks: K.CORES)
    src, sizes = program(seed)
    _check(parse_text(src).funcs[0], sizes, seed)   # static checks and values against the evaluator


def test_most_of_those_programs_take_the_shared_slab(monkeypatch):
    _forced(monkeypatch, lambda tasks: K.CORES)
    took = [ir.ParLevel.cluster in _levels(schedule_mlu(parse_text(program(seed)[0]).funcs[0], program(seed)[1]))
            for seed in SEEDS]
    assert sum(took) >= len(took) // 2, took


@pytest.mark.parametrize("seed", range(100, 106))
def test_group_statistics_in_a_slab_every_core_shares(monkeypatch, seed):
    """Every core takes sub-tiles of each group (the grid plan: partials through GDRAM between `sync @all`); its
    rows must outnumber the cores' sub-tiles, so the groups are tall here."""
    _forced(monkeypatch, lambda tasks: tasks)
    src, sizes = program(seed)
    sizes.update(C=1100 + seed, S=40 + seed, G=1 + seed % 3)   # (fewer groups than clusters)
    if "B" in sizes:
        sizes["B"] = 1
    e = _check(parse_text(src).funcs[0], sizes, seed)
    if "w: f32" in src:   # (without a per-channel operand a group may be one long row: another recipe)
        assert ir.ParLevel.all in _levels(e), "the slab shared by every core was not taken"


@pytest.mark.parametrize("name,sizes,bound,before", [
    ("group_norm_view", {"N": 1, "C": 256, "H": 64, "W": 64}, 1.70, 3.49),
    ("group_norm_view", {"N": 2, "C": 252, "H": 63, "W": 65}, 1.45, 3.12),
    ("group_norm", {"N": 3, "G": 8, "CG": 33, "HW": 4099}, 1.55, 2.76),
    ("group_norm_affine", {"N": 2, "G": 4, "CG": 63, "HW": 4095}, 1.45, 2.61)])
def test_time_of_group_norms_with_few_groups(name, sizes, bound, before):
    """The plan the planner picks (time / DMA roofline, `before`: 7c6ceae): one kernel, a cluster per group -- or,
    since slabs store their results in place (tiles_slab.py `_lend_slabs`), a group's slab on one core where that
    fits and is faster (group_norm at 3 x 8 x 33 x 4,099: 1.453x with a cluster per group, 1.271x)."""
    f = parse_file(f"samples/{name}.gir").funcs[0]
    full = complete_sizes(f, sizes)
    res = run_func(f, None, full, values=False)
    assert len(res.explicit.kernels) == 1
    assert res.stats["seconds"] / (compulsory_bytes(f, full) / 307e9) < bound < before


@pytest.mark.parametrize("seed", range(200, 210))
def test_whole_rounds_one_unit_per_core_then_the_rest_shared(monkeypatch, seed):
    """Groups a little over whole rounds of the cores (33 to 40 of them): the whole rounds one group per core,
    then a kernel where the clusters share the rest (`Plan.head`, offered where lanes cannot be dealt in chunks),
    forced."""
    orig = K.estimate
    monkeypatch.setattr(K, "estimate", lambda t, pl, tasks=K.TASKS: orig(t, pl, tasks) * (0.001 if pl.head else 1))
    monkeypatch.setattr(K, "RANK_BYTES", 1 << 40)   # (the analytic order stands: no timing of the plans)
    rng = np.random.default_rng(seed)
    # (with a per-channel operand: without one a group may be one long row, another recipe)
    src, sizes = program(seed, affine=True)
    groups = int(rng.integers(33, 41))   # (a rest of at most a quarter of the cores)
    sizes.update(G=groups, C=int(rng.integers(40, 90)), S=int(rng.integers(130, 300)))
    if "B" in sizes:
        sizes.update(B=2, G=-(-groups // 2))
    e = _check(parse_text(src).funcs[0], sizes, seed)
    assert len(e.kernels) == 2 and ir.ParLevel.cluster in _levels(e), "the split was not taken"


def test_time_of_a_group_norm_with_a_third_round_of_four_groups():
    """68 groups on 32 cores: a kernel of two rounds one group per core, then one where four clusters share the
    last four."""
    f = parse_file("samples/group_norm_view.gir").funcs[0]
    full = complete_sizes(f, {"N": 17, "C": 252, "H": 31, "W": 33})
    res = run_func(f, None, full, values=False)
    assert [k.name for k in res.explicit.kernels] == ["group_norm_view_mlu", "group_norm_view_mlu_rest"]
    assert ir.ParLevel.cluster in _levels(res.explicit)
    assert res.stats["seconds"] / (compulsory_bytes(f, full) / 307e9) < 1.36 < 1.404
