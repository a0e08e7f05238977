"""The NRAM a kernel needs is counted from the IR (passes/schedule_mlu/tiles_nram.py: slots of the software-
pipeline pass, 128-byte alignment, the vector forms' scratch tiles) and placement and the tile recipe size their
tiles with that count, without the emitter (passes sit below codegen/). It must equal what the emitter declares
(with the dense-staging pass's runs, which it adds only where they fit): more would shrink tiles for nothing, less
would overflow NRAM."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gir.codegen.mlu import emit_func
from gir.codegen.mlu.report import CHECK_SIZES, LARGE, SIZES, _sizes
from gir.errors import GirError
from gir.parser import parse_file, parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.staging import gdram_types, stage_kernel
from gir.passes.schedule_mlu.swpipe import pipeline_kernel
from gir.passes.schedule_mlu.tiles_nram import pipelined_nram

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "differential"))
from diffprog import program  # noqa: E402

SAMPLES = sorted(p for p in (REPO / "samples").glob("*.gir"))


def _same(e) -> None:
    declared = {k.name: k.metadata["nram_bytes"] for k in emit_func(e, fuse=False)}
    for k in e.kernels:
        assert pipelined_nram(stage_kernel(pipeline_kernel(k), gdram_types(e))) == declared[k.name], k.name


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample_kernels_nram_counted_exactly(path):
    for f in (f for f in parse_file(str(path)).funcs if not f.is_explicit):
        for table in (SIZES, CHECK_SIZES):
            sizes = _sizes(f, table, LARGE) or _sizes(f, table, {s: 67 for s in f.size_symbols()})
            try:
                e = schedule_mlu(f, sizes)
            except GirError:   # refused on the MLU (f64): nothing to count
                continue
            _same(e)


@pytest.mark.parametrize("seed", range(60))
def test_random_program_kernels_nram_counted_exactly(seed):
    text, sizes = program(seed)
    f = parse_text(text).funcs[0]
    try:
        e = schedule_mlu(f, sizes)
    except GirError:
        return
    _same(e)


def test_clamp_into_its_own_bound_and_pow_of_a_constant_are_counted():
    f = parse_text("""
func g(x: f32[M, N], h: f32[M, N]) -> (y: f32[M, N], z: f32[M, N]) {
  y[i, j] = clamp(x[i, j], -1.0, h[i, j])
  z[i, j] = pow(2.0, x[i, j]) + pow(x[i, j], 1.5)
}""").funcs[0]
    _same(schedule_mlu(f, {"M": 64, "N": 300}))


@pytest.mark.parametrize("text,sizes", [
    ("func f(x: f32[B, V]) -> (y: i32[B]) {\n  y[b] = argmax(x[b, v])\n}\n", {"B": 64, "V": 32000}),   # chunked
    ("func f(x: f16[B, V]) -> (y: i32[B]) {\n  y[b] = argmin(x[b, v])\n}\n", {"B": 5, "V": 40009}),
    ("func f(x: f32[B, V]) -> (y: i32[B]) {\n  y[b] = argmax(x[b, v])\n}\n", {"B": 64, "V": 20000}),   # one tile
    ("func f(x: f32[A, B]) -> (t: f32[]) {\n  t[] = sum(x[i, j])\n}\n", {"A": 3, "B": 262144}),       # flat rows
])
def test_index_and_flat_kernels_nram_counted_exactly(text, sizes):
    _same(schedule_mlu(parse_text(text).funcs[0], sizes))
