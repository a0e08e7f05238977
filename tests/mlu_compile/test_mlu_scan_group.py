"""Scans sharing their operands fused into one MLU kernel (passes/schedule_mlu/scan_group.py): seeded random groups
(any op, exclusive / reverse forms mixed, any axis, 2-D and 3-D, f32 / f16 / bf16 / i32, sizes 1 / primes / tails)
against the evaluator; the group forms where it should (one kernel, the operand read once) and not where it must
not (a scan of a member's result, no SRAM for differing directions); the reorder that brings members together."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

from gir import ir
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu import scan_group, scan_size
from gir.passes.schedule_mlu.scan_group import order_scans
from gir.passes.schedule_mlu.schedule import func_info, specialize
from gir.targets.mlu.run import run_func

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "differential"))
from diffrun import check_text  # noqa: E402

OPS = ("cumsum", "cumprod", "cummax", "cummin")
EXTENTS = (1, 2, 7, 31, 33, 64, 97, 130, 257)


def group_program(seed: int) -> tuple[str, dict[str, int], bool]:
    """(source, sizes, whether the directions differ): two or three scans of one input along one axis."""
    rng = random.Random(seed)
    rank = rng.choice((1, 2, 2, 3))
    dims = "ABC"[:rank]
    sizes = {d: rng.choice(EXTENTS) for d in dims}
    while np.prod(list(sizes.values())) > 20000:
        big = max(sizes, key=sizes.get)
        sizes[big] = max(1, sizes[big] // 3)
    dt = rng.choice(("f32", "f32", "f16", "bf16", "i32"))
    idx = ", ".join(d.lower() for d in dims)
    axis = rng.choice(dims).lower()
    w_dims = [d for d in dims if rng.random() < 0.5]
    params = [f"x: {dt}[{', '.join(dims)}]"] + ([f"w: {dt}[{', '.join(w_dims)}]"] if w_dims else [])
    w = f"w[{', '.join(d.lower() for d in w_dims)}]" if w_dims else None
    stmts, results, dirs = [], [], set()
    for k in range(rng.choice((2, 2, 3))):
        op = rng.choice(OPS if dt != "i32" or k else ("cumsum", "cummax"))
        arg = rng.choice([f"x[{idx}]"] + ([f"x[{idx}] * {w}", f"{w} - x[{idx}]"] if w else []))
        if op == "cumprod":
            arg = f"select({arg} > 0, 1, -1)" if dt == "i32" else f"1.0 + 0.01 * ({arg})"
        rev = rng.random() < 0.5
        dirs.add(rev)
        flags = (", exclusive=1" if rng.random() < 0.4 else "") + (", reverse=1" if rev else "")
        stmts.append(f"  y{k}[{idx}] = {op}({arg}, {axis}{flags})")
        results.append(f"y{k}: {dt}[{', '.join(dims)}]")
    text = f"func g{seed}({', '.join(params)}) -> ({', '.join(results)}) {{\n" + "\n".join(stmts) + "\n}\n"
    return text, sizes, len(dirs) > 1


def _kernels(text: str, sizes: dict, **kw) -> tuple[int, list]:
    remarks: list = []
    out = schedule_mlu(parse_text(text).funcs[0], sizes, remarks=remarks, **kw)
    return sum(isinstance(x, ir.Kernel) for x in out.body), remarks


SEEDS = range(40)


def test_generator_covers_the_classes():
    progs = [group_program(s) for s in SEEDS]
    assert sum(mixed for _, _, mixed in progs) >= 12 and sum(not mixed for _, _, mixed in progs) >= 12
    assert sum(": i32[" in t for t, _, _ in progs) >= 4 and sum(": f16[" in t or "bf16[" in t for t, _, _ in progs) >= 8
    assert sum("exclusive=1" in t for t, _, _ in progs) >= 12 and sum(1 in s.values() for _, s, _ in progs) >= 8
    fused = [_kernels(t, s)[0] < t.count(" = cum") for t, s, _ in progs]   # (the cost model's pick, at these sizes)
    # (8 mixed groups and 20 in all fused before 2026-12-01's cost model, 7 and 19 since: see
    # test_forward_and_reverse_scans_read_x_once)
    assert sum(f for f, (_, _, mixed) in zip(fused, progs) if mixed) >= 7 and sum(fused) >= 19


@pytest.mark.parametrize("seed", SEEDS)
def test_random_group_agrees(seed):
    text, sizes, _ = group_program(seed)
    problems = check_text(text, sizes, seed, f"<group {seed}>", ("mlu-sim",))
    assert not problems, f"seed {seed}: {problems}\n{text}{sizes}"


SAMPLE = """func cp(x: f32[M, N], w: f32[N]) -> (c: f32[M, N], p: f32[M, N]) {
  c[i, j] = cumsum(x[i, j] * w[j], j)
  p[i, j] = cumprod(1.0 + 0.01 * x[i, j], j, reverse=1)
}
"""


@pytest.mark.parametrize("sizes", [{"M": 1024, "N": 1024}])
def test_forward_and_reverse_scans_read_x_once(sizes, monkeypatch):
    """samples/cumsum.gir's two row scans: one kernel; the reverse one walks back over tiles kept in SRAM, so the
    kernel reads x (and w per tile) once: GDRAM traffic is the compulsory bytes plus w's re-reads. (At 700 x 1,031
    two kernels of whole-row units, scan_size.py `row_units`, are faster -- 1.635x the DMA roofline against the
    group's 1.943x -- and taken; left out here. Without them, since 2026-12-01's cost model, two unit kernels
    are estimated faster than the group there and taken, 58.2 us simulated against about 54.8 for the group: a
    known ranking loss in that setting, so 700 x 1,031 is no longer a case of this test.)"""
    monkeypatch.setattr(scan_size, "row_units", lambda *a: [])
    n, remarks = _kernels(SAMPLE, sizes)
    assert n == 1
    said = [r.message for r in remarks if "run as one kernel" in r.message]
    assert said and "SRAM" in said[0] and "read again" not in said[0]
    f = parse_text(SAMPLE).funcs[0]
    stats = run_func(f, None, sizes, values=False).stats
    M, N = sizes["M"], sizes["N"]
    assert stats["gdram_read_bytes"] <= 4 * M * N * 1.02 + 4 * N * (M // 32 + 1)   # x once, w once per unit
    assert stats["gdram_write_bytes"] == pytest.approx(8 * M * N, rel=0.01)


def test_partial_keep_reads_the_rest_again(monkeypatch):
    """SRAM too small for a unit's tiles: phase 2 reads the rest again from GDRAM (said in a missed remark; the
    cost model then prefers two kernels here, so the group is built directly), values still right."""
    import dataclasses
    from gir.verdict import compare
    monkeypatch.setattr(scan_group, "SRAM_BUDGET", 2 * 4 * 32 * 320 * 4)   # two tiles of 32 x 320 per core
    sizes = {"M": 100, "N": 1031}
    spec = specialize(parse_text(SAMPLE).funcs[0], sizes)
    remarks: list = []
    items = scan_group.group_items(spec, func_info(spec), remarks=remarks)
    assert items is not None and len(items) == 1
    said = [r for r in remarks if "run as one kernel" in r.message]
    assert said and said[0].kind == "missed" and "read again" in said[0].message, [r.message for r in remarks]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((100, 1031)).astype(np.float32)
    w = rng.standard_normal(1031).astype(np.float32)
    out = run_func(dataclasses.replace(spec, body=tuple(items)), {"x": x, "w": w}, sizes).outputs
    c = np.cumsum(x.astype(np.float64) * w, axis=1)
    p = np.flip(np.cumprod(np.flip(1.0 + 0.01 * x.astype(np.float64), 1), axis=1), 1)
    assert compare(out["c"], c, ir.DType.f32).passed and compare(out["p"], p, ir.DType.f32).passed


def test_no_group_without_sram_when_directions_differ():
    n, remarks = _kernels(SAMPLE, {"M": 1024, "N": 1024}, allow_sram=False)
    assert n == 2 and not any("run as one kernel" in r.message for r in remarks)


def test_same_direction_group_needs_no_sram():
    src = SAMPLE.replace(", reverse=1", "")
    n, _ = _kernels(src, {"M": 1024, "N": 1024}, allow_sram=False)
    assert n == 1
    assert not check_text(src, {"M": 61, "N": 333}, 1, "<same>", ("mlu-sim",))


def test_scan_of_a_member_is_not_grouped():
    src = """func f(x: f32[M, N]) -> (a: f32[M, N], b: f32[M, N]) {
  a[i, j] = cumsum(x[i, j], j)
  b[i, j] = cummax(a[i, j], j, reverse=1)
}
"""
    n, _ = _kernels(src, {"M": 64, "N": 256})
    assert n == 2
    assert not check_text(src, {"M": 33, "N": 97}, 2, "<chain>", ("mlu-sim",))


def test_members_are_brought_together():
    """samples/cumsum.gir's order (row scan, column scan, row scan): the row scans become adjacent, and one
    kernel -- with the column scan riding along since scan_cross.py (two kernels before); a statement reading one
    in between does not move."""
    src = (ROOT / "samples" / "cumsum.gir").read_text()
    f = parse_text(src).funcs[0]
    sizes = {"M": 1024, "N": 1024}
    spec = specialize(f, sizes)
    got = order_scans(spec, dict(func_info(spec).types))
    assert [s.target.name for s in got.body] == ["c", "p", "r"]
    n, _ = _kernels(src, sizes)
    assert n == 1
    blocked = src.replace("cumprod(1.0 + 0.01 * x[i, j]", "cumprod(1.0 + 0.01 * r[i, j]")
    spec = specialize(parse_text(blocked).funcs[0], sizes)
    assert [s.target.name for s in order_scans(spec, dict(func_info(spec).types)).body] == ["c", "r", "p"]


@pytest.mark.parametrize("sizes", [{"M": 4097, "N": 1}, {"M": 4099, "N": 5}, {"M": 8195, "N": 3}])
def test_kept_tiles_fit_sram_as_allocated(sizes):
    """Column scans over few lanes, directions differing, a long scan axis: the SRAM a kept tile takes is counted
    as allocated (rows padded to the tile pitch), not as its elements -- the group kept 32x too many tiles and the
    simulator refused the kernel ("SRAM overflow")."""
    src = """func f(x: f32[M, N]) -> (c: f32[M, N], p: f32[M, N]) {
  c[i, j] = cumsum(x[i, j], i)
  p[i, j] = cummax(x[i, j], i, reverse=1)
}
"""
    assert not check_text(src, sizes, 4, "<few lanes>", ("mlu-sim",))


def test_reorder_groups_by_compute_type():
    """A 16-bit cummax computes in 16 bits, a cumsum and a cumprod of the same f16 tensor in f32: the f32 ones are
    brought together past the cummax (one kernel needs one compute type)."""
    src = """func f(x: f16[M, N]) -> (a: f16[M, N], b: f16[M, N], c: f16[M, N]) {
  a[i, j] = cumsum(x[i, j], j)
  b[i, j] = cummax(x[i, j], j)
  c[i, j] = cumprod(1.0 + 0.01 * x[i, j], j, reverse=1)
}
"""
    sizes = {"M": 1024, "N": 1024}
    spec = specialize(parse_text(src).funcs[0], sizes)
    got = order_scans(spec, dict(func_info(spec).types))
    assert [s.target.name for s in got.body] == ["a", "c", "b"]
    assert not check_text(src, {"M": 70, "N": 129}, 6, "<types>", ("mlu-sim",))
