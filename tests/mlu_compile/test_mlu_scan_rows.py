"""Whole-row units of the MLU row scan (passes/schedule_mlu/scan_size.py `row_units`): a unit is W lanes (8 to
256) of whole rows, one tile scanned in sub-segments, the unit loop software-pipelined and the per-position
operands loaded once per core; a reverse scan lands its positions at the tile's end (scan.py `_Kernel.shift`).
Values against numpy with the form forced (seeded random programs: every op, form and element type, weighted,
per-lane operands, rank 3, sizes 1 / primes / tails); the 16-lane carries; the simulated times it buys."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.passes.schedule_mlu import scan_size, scan_subseg
from gir.targets.mlu.run import run_func
from gir.verdict import compare

from tests.mlu_compile.test_mlu_scan import _inputs, _reference
from tests.mlu_compile.test_mlu_scan_size import _plan


def _program(rng: random.Random) -> tuple:
    """(source, sizes, inputs' shapes, the reference's operand builder, op, t, exclusive, reverse)."""
    op = rng.choice(["cumsum", "cumprod", "cummax", "cummin"])
    t = rng.choice(["f32", "f16", "bf16", "i32"])
    exclusive, reverse = rng.choice([0, 1]), rng.choice([0, 1])
    rank3 = rng.random() < 0.3
    idx = "b, i, j" if rank3 else "i, j"
    e = f"x[{idx}]" if op != "cumprod" or t == "i32" else f"1.0 + x[{idx}] * 0.001"
    operands = {}
    if rng.random() < 0.5:   # a per-position operand (once per core), or one per batch and position (per unit)
        wi = rng.choice(["b, j", "j"]) if rank3 else "j"
        operands["w"] = wi
        e = f"({e}) * w[{wi}]"
    if rng.random() < 0.3 and op != "cumprod":   # a per-lane operand
        operands["g"] = "i"
        e = f"{e} + g[i]"
    dims = {"b": "B", "i": "M", "j": "N"}
    params = ", ".join([f"x: {t}[{', '.join(dims[v] for v in idx.split(', '))}]"] +
                       [f"{n}: {t}[{', '.join(dims[v] for v in wi.split(', '))}]" for n, wi in operands.items()])
    flags = (", exclusive=1" if exclusive else "") + (", reverse=1" if reverse else "")
    src = (f"func f({params}) -> (y: {t}[{', '.join(dims[v] for v in idx.split(', '))}]) {{\n"
           f"  y[{idx}] = {op}({e}, j{flags})\n}}\n")
    sizes = {"M": rng.choice([1, 7, 33, 100, 131]), "N": rng.choice([1, 5, 64, 300, 527, 1031])}
    if rank3:
        sizes["B"] = rng.choice([1, 3])
    return src, sizes, operands, op, t, exclusive, reverse


def _agrees(src: str, sizes: dict, operands: dict, op: str, t: str, exclusive: int, reverse: int, seed: int):
    f = parse_text(src).funcs[0]
    rank3 = "B" in sizes
    shape = ((sizes["B"],) if rank3 else ()) + (sizes["M"], sizes["N"])
    rng = np.random.default_rng(seed)
    axes = {"b": sizes.get("B"), "i": sizes["M"], "j": sizes["N"]}
    ins = {"x": _inputs(t, shape, rng, op)}
    for n, wi in operands.items():
        ins[n] = _inputs(t, tuple(axes[v] for v in wi.split(", ")), rng, op)
    if t == "i32" and op == "cumprod":
        ins = {n: np.where(np.abs(a) > 1, 1, a).astype(np.int32) for n, a in ins.items()}
    res = run_func(f, ins, sizes)
    wide = np.int32 if t == "i32" else np.float64
    e = ins["x"].astype(wide)
    if op == "cumprod" and t != "i32":
        e = 1.0 + e * 0.001
    if "w" in ins:
        w = ins["w"].astype(wide)
        e = e * (w[:, None, :] if operands["w"] == "b, j" else w)
    if "g" in ins:
        e = e + ins["g"].astype(wide)[:, None]
    want = _reference(op, e, len(shape) - 1, exclusive, reverse, t)
    return compare(res.outputs["y"], want, ir.DType(t)).passed, res.source


@pytest.fixture
def whole_rows(monkeypatch):
    """The unit kernel's other candidates estimated as never faster: the whole-row units win where they fit."""
    orig = scan_size._sized

    def slow(*a, **k):
        seconds, kern, used = orig(*a, **k)
        return (None if seconds is None else 1e9), kern, used
    monkeypatch.setattr(scan_size, "_sized", slow)


@pytest.mark.parametrize("seed", range(24))
def test_random_row_scans_in_whole_row_units(seed, whole_rows):
    src, sizes, operands, op, t, exclusive, reverse = _program(random.Random(seed))
    ok, _ = _agrees(src, sizes, operands, op, t, exclusive, reverse, seed)
    assert ok, (src, sizes)


def test_the_forced_programs_take_whole_row_units(whole_rows):
    """(The generator above reaches the form: its kernels have no tile loop and scan in sub-segments, and the
    per-position operands are loaded before the unit loop -- reverse ones too.)"""
    hits = reverse = 0
    for seed in range(24):
        src, sizes, operands, op, t, exclusive, rev = _program(random.Random(seed))
        text = run_func(parse_text(src).funcs[0], None, sizes, values=False).source
        if "vt_" in text and not re.search(r"\bk_\b", text):
            hits += 1
            reverse += rev
    assert hits >= 16 and reverse >= 6, (hits, reverse)


def test_sixteen_lane_chunks_carry_in_whole_units():
    """16 f32 lanes are half a vector unit: the carries' rows take 32 (the other 16 computed and never read)."""
    p = _plan(4096, 1207)
    p.W, p.R, p.dense, p.subseg = 16, 1216, True, True
    assert scan_subseg.carry_lanes(p) == 32
    k = scan_subseg.pays(p)
    assert k and (16 * k) % 64 == 0
    assert scan_subseg.subsegments(p, 1207, True, None) == k                  # forward: the pads come last
    r = _plan(4096, 1207, flags=", reverse=1")
    r.W, r.R, r.dense, r.subseg = 16, 1216, True, True
    assert scan_subseg.subsegments(r, 1207, True, None) == 0                  # reverse, pads last: no
    assert scan_subseg.subsegments(r, 1207, True, None, shifted=True) == k    # reverse, pads first: yes


@pytest.mark.parametrize("t,op,e,flags,sizes,bound,before", [
    ("f16", "cumsum", "x[i, j] * w[j]", "", {"M": 4392, "N": 1207}, 1.32, 2.193),
    ("f16", "cumsum", "x[i, j] * w[j]", ", reverse=1", {"M": 3827, "N": 404}, 1.50, 2.041),
    ("bf16", "cumsum", "x[i, j] * w[j]", ", exclusive=1", {"M": 12312, "N": 527}, 1.30, 1.466),
    ("f16", "cummax", "x[i, j]", "", {"M": 1050, "N": 2323}, 1.37, 1.577),   # (computed in f16)
])
def test_time_of_whole_row_units(t, op, e, flags, sizes, bound, before):
    """Simulated time over the DMA roofline (`gir run FILE --target mlu-sim --sizes ... --no-races`; programs of
    tests/differential/scanspread.py), before -> after the whole-row units (docs/mlu.md)."""
    src = (f"func f(x: {t}[M, N], w: {t}[N]) -> (y: {t}[M, N]) {{\n"
           f"  y[i, j] = {op}({e}, j{flags})\n}}\n")
    f = parse_text(src).funcs[0]
    res = run_func(f, None, sizes, values=False)
    ratio = res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9)
    assert ratio < bound < before, ratio


@pytest.mark.parametrize("t,op", [("f16", "cumsum"), ("bf16", "cummax"), ("f16", "cumprod")])
def test_dense_kernels_staged(t, op, whole_rows):
    """A `layout=dense` kernel whose tile rows (448) are longer than the moved ones (404) goes through the
    dense-staging run (staging.py: the tile's own row length is the pitch there), into and out of the columns a
    reverse scan's positions land in (`o_h + 44`); values against numpy."""
    sizes, operands = {"M": 300, "N": 404}, {"w": "j"}
    e = "x[i, j]" if op != "cumprod" else "1.0 + x[i, j] * 0.001"
    src = (f"func f(x: {t}[M, N], w: {t}[N]) -> (y: {t}[M, N]) {{\n"
           f"  y[i, j] = {op}(({e}) * w[j], j, reverse=1)\n}}\n")
    ok, text = _agrees(src, sizes, operands, op, t, 0, 1, 3)
    assert ok and "stg_" in text, src
    assert re.search(r"o_h \+ [^;]*\+ 44", text) or "o_h + 44" in text
