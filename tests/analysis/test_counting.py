"""Exact point counting without enumeration (isl_helpers.count_set) against isl's enumerating
count_val, and traffic counts of scheduled kernels against numbers recorded from the count_val
implementation (hand formulas where they exist)."""
import itertools
import random

import islpy as isl
import pytest

from gir.passes.analysis import isl_helpers as ih
from gir.passes.analysis.access import collect
from gir.passes.analysis.lattice_count import Unbounded, count_cons
from gir.passes.analysis.traffic import kernel_traffic
from tests.analysis.conftest import load

SETS = [
    "[N] -> { A[x, y] : exists (e: x = 4e + 1 and 0 <= x < N and 0 <= y < floor(x/3)) }",
    "[N, M] -> { A[b, r, k, l, w, e] : 0 <= b < 28 and 0 <= r < floor((M + 27)/28) and b + 28r < M and 0 <= k < 2"
    " and 0 <= l < 8 and 0 <= w < 4 and 0 <= e < 4 and 128k + 4l + 32w + e < N }",
    "[N, M] -> { A[i, j] : 0 <= i < N and i <= j < M }",  # triangle
    "[N, M] -> { A[i, j] : 0 <= i < N and 0 <= j < M and (i + 2j) mod 3 = 1 }",
    "[N, M] -> { A[i, j] : 0 <= i < N and 0 <= j < M and (i != j or i > 3) }",
    "[N, M] -> { A[i, j] : 0 <= i < N and 0 <= j < M and 2i + 4j = 6 }",
    "[N, M] -> { A[i, j] : 0 <= i < N and 0 <= j < M and 3i - 5j >= 2 }",
    "[N, M] -> { A[i, j] : 0 <= i < N and 0 <= j < M and i < 2 } + { A[i, j] : 0 <= i < M and 0 <= j < N and j < 3 }",
    "[N, M] -> { A[i, j] -> B[a] : 0 <= i < N and 0 <= j < M and a = 2i + 3j }",
    "[N, M] -> { A[i, j] -> B[a] : 0 <= i < N and 0 <= j < M and a = floor((i + 5j)/4) }",
    "[N, M] -> { A[k, l] -> B[o] : 0 <= k < 3 and 0 <= l < 8 and 16k + 2l <= o <= 16k + 2l + 1 and 0 <= o < N and o < M }",
    "[N, M] -> { A[i] -> B[o] : 0 <= i < N and exists (e: 0 <= e < 4 and o = 3i + e) and o mod 2 = 0 and o < M }",
]


def test_count_cons_matches_brute_force():
    """Random small systems (box given as constraints, random inequalities and equalities) against
    enumeration of the box."""
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 4)
        los = [rng.randint(-4, 3) for _ in range(n)]
        his = [lo + rng.randint(0, 9) for lo in los]
        cons = [({v: 1}, -los[v], False) for v in range(n)] + [({v: -1}, his[v], False) for v in range(n)]
        for _ in range(rng.randint(0, 4)):
            coeffs = {v: a for v in range(n) if (a := rng.randint(-4, 4))}
            cons.append((coeffs, rng.randint(-12, 12), rng.random() < 0.25))
        want = sum(all((sum(a * p[v] for v, a in c.items()) + k == 0) if eq else
                       (sum(a * p[v] for v, a in c.items()) + k >= 0) for c, k, eq in cons)
                   for p in itertools.product(*[range(lo, hi + 1) for lo, hi in zip(los, his)]))
        assert count_cons(cons, {v: (None, None) for v in range(n)}) == want, cons


def _fixed(s: isl.Set, vals):
    names = [s.get_dim_name(isl.dim_type.param, k) for k in range(s.dim(isl.dim_type.param))]
    return s.intersect_params(ih.size_params(names, vals))


@pytest.mark.parametrize("text", SETS)
def test_count_set_matches_isl_enumeration(text):
    """count_set either counts exactly or says Unbounded (then `ih.count` lets isl enumerate: e.g. the range of
    a = 2i + 3j at N=2 is a union of strided pieces without a finite box)."""
    rng = random.Random(2026)
    obj = isl.Map(text) if "->" in text.split("{", 1)[1].split("}")[0] else isl.Set(text)
    views = [obj.wrap(), obj.domain(), obj.range()] if isinstance(obj, isl.Map) else [obj]
    counted = 0
    for vals in [{"N": 1, "M": 1}, {"N": 7, "M": 64}] + [{"N": rng.randint(1, 90), "M": rng.randint(1, 90)}
                                                       for _ in range(3)]:
        for s in views:
            s = _fixed(s, vals)
            want = s.count_val().to_python()
            try:
                got = ih.count_set(s, vals)
            except Unbounded:
                assert ih.count(s, [], vals) == want, (text, vals)
                continue
            assert got == want, (text, vals)
            counted += 1
    assert counted >= len(views)  # the closed form did the work for most cases


def _isl_count(obj, params, sizes):
    s = obj.wrap() if isinstance(obj, isl.Map) else obj
    return int(s.intersect_params(ih.size_params(params, sizes)).count_val().to_python())


@pytest.mark.parametrize("name,sizes", [("layernorm_sim", {"M": 3, "N": 1000}), ("layernorm_sim", {"M": 2, "N": 999}),
                                        ("layernorm_sim", {"M": 1, "N": 16385}), ("sum_last_sim", {"A": 2, "B": 3, "C": 37})])
def test_every_access_count_matches_isl(name, sizes):
    f = load(name)
    ki = collect(f, f.kernels[0])
    for ins in ki.instrs:
        for acc in ins.accesses:
            m = ki.access_map(ins, acc)
            for obj in (m, m.range()):
                assert ih.count(obj, ki.params, sizes) == _isl_count(obj, ki.params, sizes), (ins.name, acc.buf.name)


def _global(t):
    return [(a.buf, a.write, a.bytes, a.distinct_bytes, a.sectors, a.ideal_sectors, a.stride)
            for i in t.instrs for a in i.accesses if a.level == "global" and a.bytes]


def test_layernorm_scheduled_counts_recorded():
    """Totals recorded from the count_val implementation; global bytes also by hand: 528 blocks each
    read gamma and beta once (clipped to N), x and y once per row (three passes over x when N > 16384)."""
    f = load("layernorm_sim")
    cases = [
        ({"M": 5, "N": 1000}, 528 * 1000 * 4 * 2 + 5 * 1000 * 4, 5 * 1000 * 4,
         {"reg": (3809920, 71705536), "shared": (327680, 640)}, (16, 16, 4)),
        ({"M": 3, "N": 999}, 528 * 999 * 4 * 2 + 3 * 999 * 4, 3 * 999 * 4,
         {"reg": (3170688, 71000664), "shared": (196608, 384)}, (4, 4, 1)),
        ({"M": 2, "N": 17001}, 5 * 2 * 17001 * 4, 2 * 17001 * 4,
         {"reg": (2236672, 1562992), "shared": (131072, 256)}, (4, 4, 1)),
        ({"M": 530, "N": 64}, 528 * 64 * 4 * 2 + 530 * 64 * 4, 530 * 64 * 4,
         {"reg": (403851520, 338123776), "shared": (34734080, 67840)}, (8, 8, 4)),  # a warp covers 64 of 128
    ]
    for sizes, gr, gw, onchip, sectors in cases:
        t = kernel_traffic(f, f.kernels[0], sizes)
        assert (t.total("global", "read"), t.total("global", "write")) == (gr, gw), sizes
        for lv, (r, w) in onchip.items():
            assert (t.total(lv, "read"), t.total(lv, "write")) == (r, w), (sizes, lv)
        g = _global(t)
        assert all(a[4:] == sectors for a in g), sizes
        n = sizes["N"]
        assert {a[0]: a[3] for a in g if a[0] in ("gamma", "beta")} == {"gamma": n * 4, "beta": n * 4}


def test_sum_last_scheduled_counts_recorded():
    """Rows of 33 f32 start off a sector boundary: the sampled warps straddle more sectors than the first one
    (row 0, aligned) and than the minimum (4); the sector bytes match what the simulator counts."""
    import numpy as np
    from gir.targets.sim import run_func
    f = load("sum_last_sim")
    sizes = {"A": 3, "B": 5, "C": 33}
    t = kernel_traffic(f, f.kernels[0], sizes)
    (x, y) = _global(t)
    assert x[:4] == ("x", False, 1980, 1980) and x[5:] == (4, 1) and 4.5 < x[4] < 6.5
    assert y == ("y", True, 60, 60, 1, 1, None)
    analysed = sum(a.sector_bytes() for i in t.instrs for a in i.accesses if a.level == "global")
    xs = np.random.default_rng(0).standard_normal((3, 5, 33)).astype(np.float32)
    simulated = run_func(f, {"x": xs}, sizes).stats.global_bytes
    assert abs(analysed - simulated) <= 0.05 * simulated, (analysed, simulated)
    assert (t.total("reg", "read"), t.total("reg", "write")) == (15480, 19200)
    t = kernel_traffic(f, f.kernels[0], {"A": 1, "B": 1, "C": 1})
    assert _global(t) == [("x", False, 4, 4, 1, 1, None), ("y", True, 4, 4, 1, 1, None)]


@pytest.mark.parametrize("name,sizes,read,write", [
    ("layernorm_sim", {"M": 32768, "N": 16384}, 32768 * 16384 * 4 + 2 * 528 * 16384 * 4, 32768 * 16384 * 4),
    ("sum_last_sim", {"A": 128, "B": 4096, "C": 4095}, 128 * 4096 * 4095 * 4, 128 * 4096 * 4),
])
def test_benchmark_sizes_count_exactly(name, sizes, read, write):
    """Billions of (instance, element) pairs: the count_val implementation took 20-150 s here."""
    f = load(name)
    t = kernel_traffic(f, f.kernels[0], sizes)
    assert (t.total("global", "read"), t.total("global", "write")) == (read, write)
