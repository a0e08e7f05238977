"""Slab kernels of the tile recipe that work in place (passes/schedule_mlu/tiles_slab.py, tiles_kept.py):

- results of the last pass computed into the slab of a value read there for the last time (`_lend_slabs`), stored
  from it: no sub-tile tiles in two pipeline slots for them;
- an online softmax's exponentials kept in A's slab with a history of the running maxima, the last pass taking
  e = A_k * exp(m_k - m) instead of exp(A - m) again (`kept_exps`);
- blocks of q sub-tiles per DMA (`Plan.q`) for slabs without an online softmax;
- the buffers of a pass sized by liveness over every op the pass runs (a select of a comparison into a slab had the
  comparison computed into the tile of the value it selects).

Values against the evaluator (static checks on every kernel) with each kind of slab plan forced (one core, a
cluster's cores, every core), on seeded random softmax-like programs (A an input or computed, read elsewhere or
not, extra outputs, f32 / f16 / bf16, tails of every sub-tile); which form is taken; and the simulated time of
column softmaxes off the powers of two against what they took before (206bd03)."""
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


def program(seed: int) -> tuple[str, dict, bool]:
    """(source, sizes, whether the exponentials may be kept) of a seeded softmax over the rows T of [B?, T, L]."""
    rng = np.random.default_rng(seed)
    t = ["f32", "f16", "bf16"][rng.integers(3)]
    batch = bool(rng.integers(2))
    ax, st = ("b, n, c", "b, c") if batch else ("n, c", "c")
    x = f"f32(x[{ax}])"
    form = rng.integers(3)
    a = [x, f"({x} * 0.5 + 1.0)", f"select({x} > 1.5, -1.0, {x})"][form]
    lines = [f"  m[{st}] = max({a})", f"  s[{st}] = sum(exp({a} - m[{st}]))"]
    y = [f"exp({a} - m[{st}]) / s[{st}]", f"exp({a} - m[{st}]) * (1.0 / s[{st}])"][rng.integers(2)]
    lines.append(f"  y[{ax}] = {t}({y})")
    shape = ("B, " if batch else "") + "N, C"
    outs = [f"y: {t}[{shape}]"]
    kept = True
    if rng.integers(3) == 0:   # A read once more in the last pass: its slab cannot keep the exponentials
        outs.append(f"z: f32[{shape}]")
        lines.append(f"  z[{ax}] = {a} * s[{st}]")
        kept = False
    if rng.integers(2):
        outs.append(f"o: f32[{'B, ' if batch else ''}C]")
        lines.append(f"  o[{st}] = m[{st}] + log(s[{st}])")
    src = f"func f(x: {t}[{shape}]) -> ({', '.join(outs)}) {{\n" + "\n".join(lines) + "\n}\n"
    sizes = {"N": int(rng.integers(300, 700)), "C": int(rng.integers(33, 300))}
    if batch:
        sizes["B"] = int(rng.integers(2, 4))
    return src, sizes, kept


def _forced(monkeypatch, parts, q: int = 1) -> list:
    """The slab plans of `parts` cores a unit and `q` sub-tiles per DMA first, and the first that fits taken (the
    cost model does not rank them); returns the list the plans taken are recorded in."""
    orig, build, plans = K.estimate, K.build, []
    monkeypatch.setattr(K, "estimate", lambda t, pl, tasks=K.TASKS: orig(t, pl, tasks) *
                        (0.001 if pl.mode == "slab" and pl.parts == parts(tasks) and pl.q == q else 1.0))
    def first(t, name, tasks=32, nram=K.NRAM_BUDGET, rank=None, sram=True):
        got = build(t, name, tasks, nram, None, sram)
        plans.append(got[1])
        return got
    monkeypatch.setattr(K, "build", first)
    return plans


def _allocs(e: ir.Func) -> set[str]:
    return {s.name for k in e.kernels for s in walk_stmts(k.body) if isinstance(s, ir.Alloc)}


@pytest.mark.parametrize("parts", [1, 4, 32])
@pytest.mark.parametrize("seed", range(6))
def test_softmax_slabs_in_place(monkeypatch, seed, parts):
    plans = _forced(monkeypatch, lambda tasks: {1: 1, 4: K.CORES, 32: tasks}[parts])
    src, sizes, kept = program(seed)
    if parts == 4:   # (a cluster shares a unit when the units fill half the clusters at least)
        sizes["C"] = 200 + 13 * seed
    if parts == 32:   # (every core shares a unit only when the units are fewer than the clusters and tall)
        sizes.update(B=1, N=40 * 32 + seed * 7) if "B" in sizes else sizes.update(N=40 * 32 + seed * 7)
        sizes["C"] = 33 + seed * 50
    e = _check(parse_text(src).funcs[0], sizes, seed)
    names = _allocs(e)
    assert any(pl.mode == "slab" and pl.parts == {1: 1, 4: 4, 32: 32}[parts] for pl in plans), plans
    assert ("m_h" in names) == kept and ("onl_e" in names) != kept, (src, sizes, names)   # exponentials kept


def test_the_plain_column_softmax_keeps_its_exponentials_and_stores_in_place():
    f = parse_file("samples/softmax_col.gir").funcs[0]
    for sizes in (dict(N=4097, C=1023), dict(N=2049, C=2049), dict(N=4096, C=4096)):
        e = schedule_mlu(f, sizes)
        names = _allocs(e)
        assert "mx_h" in names and "onl_e" not in names, (sizes, names)
        stores = [s for k in e.kernels for s in walk_stmts(k.body) if isinstance(s, ir.Move) and s.kind == "store"
                  and s.dst.name == "y"]
        assert stores and all(s.src.name == "x_s" for s in stores), sizes


@pytest.mark.parametrize("seed", range(3))
def test_blocks_of_sub_tiles_per_dma(monkeypatch, seed):
    """A two-level statistic (a column layer norm: no online softmax) with blocks of q sub-tiles per DMA forced:
    values, and the loads move q times the rows the computes take."""
    rng = np.random.default_rng(seed)
    src = ("func f(x: f32[N, C], g: f32[C]) -> (y: f32[N, C]) {\n"
           "  mu[c] = mean(x[n, c])\n"
           "  v[c] = mean((x[n, c] - mu[c]) * (x[n, c] - mu[c]))\n"
           "  y[n, c] = (x[n, c] - mu[c]) * rsqrt(v[c] + 0.00001) * g[c]\n}\n")
    sizes = {"N": int(rng.integers(300, 700)), "C": int(rng.integers(500, 1100))}
    for q in (2, 4):
        plans = _forced(monkeypatch, lambda tasks: 1, q)
        _check(parse_text(src).funcs[0], sizes, seed)
        assert any(pl.q == q for pl in plans), plans
        monkeypatch.undo()


@pytest.mark.parametrize("sizes,bound,before", [
    (dict(N=4097, C=1023), 1.33, 1.460),
    (dict(N=2049, C=2049), 1.30, 1.480),
    (dict(N=3001, C=1500), 1.25, 1.346),
    (dict(N=4096, C=4096), 1.15, 1.174)])
def test_time_of_column_softmaxes(sizes, bound, before):
    """Simulated time over the DMA roofline of the plan the planner picks, below `bound` (`before`: 206bd03)."""
    f = parse_file("samples/softmax_col.gir").funcs[0]
    full = complete_sizes(f, sizes)
    res = run_func(f, None, full, values=False)
    assert res.stats["seconds"] / (compulsory_bytes(f, full) / 307e9) < bound < before


def test_a_softmax_operand_that_is_an_output_keeps_its_values():
    """A review's finding: A an output too (its slab must keep A, not its exponentials)."""
    src = ("func f(x: f32[N, C]) -> (a: f32[N, C], y: f32[N, C]) {\n  a[n, c] = x[n, c] * 0.5 + 1.0\n"
           "  m[c] = max(a[n, c])\n  s[c] = sum(exp(a[n, c] - m[c]))\n  y[n, c] = exp(a[n, c] - m[c]) / s[c]\n}\n")
    _check(parse_text(src).funcs[0], {"N": 2000, "C": 33})
