"""Column reductions over rows that start off a 32-byte sector boundary (passes/schedule/tiles_skew.py): every
warp access is shifted back to a sector boundary, a block owns several aligned windows of columns and reads one
extra window per row. Values against the evaluator on sim (race checks on) for the reductions and dtypes the
column tile handles, sizes 1 / primes / non-multiples of 32; the traffic of a case the search gives the skewed
tile (simulated sector bytes, not time)."""
import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.analysis.traffic import compulsory_bytes
from gir.passes.schedule import lower_func
from gir.targets.sim import run_func
from gir.verdict import compare

PROGRAMS = {
    "sum": "func f(x: DT[A, B, C]) -> (y: DT[A, C]) {\n  y[a, c] = sum(x[a, b, c])\n}\n",
    "max": "func f(x: DT[A, B, C]) -> (y: DT[A, C]) {\n  y[a, c] = max(x[a, b, c])\n}\n",
    "wsum": "func f(x: DT[A, B, C], w: DT[B]) -> (y: DT[A, C]) {\n  y[a, c] = sum(x[a, b, c] * w[b])\n}\n",
    "var": "func f(x: DT[A, B, C]) -> (m: DT[A, C], v: DT[A, C]) {\n  m[a, c] = mean(x[a, b, c])\n"
           "  v[a, c] = mean((x[a, b, c] - m[a, c]) * (x[a, b, c] - m[a, c]))\n}\n",
}


def _run(text: str, sizes: dict, seed: int = 0):
    f = parse_text(text).funcs[0]
    inp = random_inputs(f, sizes, np.random.default_rng(seed))
    want = evaluate(f, inp, sizes)
    low = lower_func(f, "sim", {"sizes": sizes})
    res = run_func(low, inp, sizes)
    for p in f.results:
        v = compare(res.outputs[p.name], want[p.name], p.type.dtype)
        assert v.passed, (text, sizes, p.name, v.reason)
    return f, low, res


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("dt", ["f32", "f16"])
@pytest.mark.parametrize("sizes", [{"A": 2, "B": 300, "C": 4095}, {"A": 3, "B": 77, "C": 1021},
                                   {"A": 1, "B": 33, "C": 7}, {"A": 1, "B": 1, "C": 1}])
def test_values(name, dt, sizes):
    _run(PROGRAMS[name].replace("DT", dt), sizes, seed=len(name))


def test_skewed_tile_reads_each_row_about_once():
    """A = 4, B = 1024, C = 4095 f32: the search picks the skewed tile (lanes over 12 windows of columns); 1.030x
    the compulsory bytes where 32-column tiles of misaligned rows moved 1.219x."""
    sizes = {"A": 4, "B": 1024, "C": 4095}
    f, low, res = _run(PROGRAMS["sum"].replace("DT", "f32"), sizes)
    read, written = compulsory_bytes(f, sizes)
    from gir.printer import format_func
    text = format_func(low)
    assert "C % 8 == 7" in text and "for _s in 0..8" in text      # specialised on the residue, skew loop
    assert res.stats.global_bytes <= 1.04 * (read + written)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_16bit_column_tiles_are_not_skewed(dt):
    """16-bit rows: 16 elements per sector, so only 16 warps keep one skew per warp, and the 16-byte vectors'
    exchange buffer does not fit shared memory with them. Skewed tiles of 8-byte vectors moved 1.03x on the
    simulator but ran 7.7x slower than the plain 32-column tiles on an H200 (sum over the middle axis of
    [128, 4096, 4095] f16: 10.9 ms against 1.41 ms, docs/bench/README.md): the plain tiles are taken, their
    misaligned rows costing a sector per row and warp (1.47x here)."""
    sizes = {"A": 4, "B": 1024, "C": 4095}
    f, low, res = _run(PROGRAMS["sum"].replace("DT", dt), sizes)
    read, written = compulsory_bytes(f, sizes)
    from gir.printer import format_func
    text = format_func(low)
    assert "for _s in" not in text and " % 16 == " not in text
    assert res.stats.global_bytes <= 1.5 * (read + written)
