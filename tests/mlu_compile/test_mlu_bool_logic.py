"""Boolean logic, float-to-integer casts and integer // and % of index values on the MLU vector schedules
(passes/schedule_mlu/boolarith.py, rowmodel.py): `and` / `or` / `not` become 0/1 arithmetic, `i32(float)` a
truncation and `a // b`, `a % b` floor((a + 0.5) / b) arithmetic on exact f32 integers, so the statements that
hold them are vector kernels (they ran as scalar kernels, about a thousand times slower than the DMA roofline),
with the evaluator's values on every schedule kind (row model, 3-D tiles, reductions), for bool tensors and
compares, at sizes 1, primes and non-multiples of 32."""
import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.targets.mlu.run import run_func

PROGRAMS = {
    "and_or_not": """func f(a: f32[M, N], b: f32[M, N], m: bool[M, N]) -> (y: f32[M, N], z: bool[M, N]) {
  y[i, j] = select(a[i, j] > 0.0 and b[i, j] < 0.5 or not m[i, j], a[i, j], b[i, j] * 2.0)
  z[i, j] = not (a[i, j] > b[i, j] or m[i, j])
}""",
    "counted": """func f(a: f32[M, N]) -> (c: f32[M], k: i32[M]) {
  c[i] = sum(select(a[i, j] > -0.5 and a[i, j] < 0.5, 1.0, 0.0))
  k[i] = i32(max(a[i, j] > 1.0 and not (a[i, j] > 2.0)))
}""",
    "rank3": """func f(a: f32[A, B, C], w: f32[C]) -> (y: f32[A, B, C], s: f32[A, B]) {
  y[i, j, k] = select(a[i, j, k] > w[k] or a[i, j, k] < -1.0, 0.0, a[i, j, k])
  s[i, j] = sum(select(not (a[i, j, k] > w[k]), a[i, j, k], 0.0))
}""",
    "casts": """func f(a: f32[M, N], k: i32[M, N]) -> (t: i32[M, N], u: f32[M, N], b: i32[M, N]) {
  t[i, j] = i32(a[i, j] * 10.0)
  u[i, j] = f32(i32(a[i, j] * 7.0)) * 0.5 + a[i, j]
  b[i, j] = i32(bool(k[i, j])) + i32(not bool(k[i, j])) * 2
}""",
    "trunc_read_again": """func f(x: f32[M, N]) -> (k: i32[M], y: f32[M], z: i32[M, N], b: bool[M, N]) {
  t[i, j] = i32(x[i, j] * 3.0)
  k[i] = i32(sum(x[i, j]))
  y[i] = f32(k[i]) + 0.5 + sum(f32(t[i, j]))
  z[i, j] = t[i, j] * 2 + 1
  b[i, j] = t[i, j] == 0
}""",
    "trunc_rank3": """func f(a: f32[A, B, C]) -> (t: i32[A, B, C], y: f32[A, B, C]) {
  t[i, j, k] = i32(a[i, j, k] * 3.0)
  y[i, j, k] = f32(t[i, j, k]) + a[i, j, k]
}""",
    "mid_axis": """func f(a: f32[A, B, C]) -> (y: f32[A, C]) {
  y[i, k] = sum(select(a[i, j, k] > 0.0 and a[i, j, k] < 1.0, a[i, j, k], 0.0))
}""",
    "int_index": """func f(x: i32[M, N]) -> (y: i32[M, N]) {
  y[i, j] = x[i, j] + i * 3 + j
}""",
    "quasi": """func f(a: f32[M, N]) -> (y: f32[M, N], z: i32[M, N]) {
  y[i, j] = a[i, j] * f32(j % 7) + f32((i - 5) // 3) + f32((i + j) % 2)
  z[i, j] = (j - 3) % 4 + (i * 3 + j) // 5 + j // N
}""",
    "quasi_rank3": """func f(a: f32[A, B, C]) -> (y: f32[A, B, C]) {
  y[i, j, k] = a[i, j, k] * f32(k % 3 + j // 2)
}""",
}
SIZES = [{"M": 1, "N": 1}, {"M": 7, "N": 31}, {"M": 37, "N": 100}, {"M": 64, "N": 1031}]


def _sizes(s):
    return dict(s, A=s["M"], B=3, C=s["N"])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("size", range(len(SIZES)))
def test_logic_and_casts_match_the_evaluator(name, size):
    f = parse_text(PROGRAMS[name]).funcs[0]
    sizes = _sizes(SIZES[size])
    rng = np.random.default_rng(size * 100 + len(name))
    x = random_inputs(f, sizes, rng)
    for p in f.params:   # values spread over the compares' thresholds and the truncations' signs
        if p.type.dtype == p.type.dtype.f32:
            x[p.name] = (rng.standard_normal(x[p.name].shape) * 1.5).astype(np.float32)
    got = run_func(f, x, sizes)
    want = evaluate(f, x, sizes)
    for k, w in want.items():
        w = np.asarray(w, np.float64)
        g = np.asarray(got.outputs[k], np.float64)
        if f.results[[r.name for r in f.results].index(k)].type.dtype.is_float:
            assert np.linalg.norm(g - w) <= 2e-6 * max(np.linalg.norm(w), 1e-30), k
        else:
            assert np.array_equal(g, w), (k, np.argwhere(g != w)[:5])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_no_scalar_kernel(name):
    f = parse_text(PROGRAMS[name]).funcs[0]
    res = run_func(f, None, _sizes({"M": 256, "N": 1024}), values=False)
    assert not [r for r in res.remarks if "scalar" in r.message], [r.message for r in res.remarks]


def test_floordiv_beyond_exact_f32_is_a_remarked_scalar_kernel():
    # i * N + j reaches 2^24 at 4096 x 4096: (a + 0.5) / b is no longer exact on f32 values, so the statement keeps
    # the scalar kernel (exact int arithmetic), said by a located remark; at 64 x 100 it is a vector kernel
    from gir.passes.schedule_mlu import schedule_mlu
    f = parse_text("func f(a: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = a[i, j] + f32((i * N + j) % 7)\n}\n",
                   filename="q.gir").funcs[0]
    for sizes, scalar in (({"M": 4096, "N": 4096}, True), ({"M": 64, "N": 100}, False)):
        remarks: list = []
        schedule_mlu(f, sizes, remarks=remarks)
        said = [r for r in remarks if "scalar" in r.message]
        assert bool(said) == scalar and all(r.loc.line == 2 for r in said), [r.message for r in remarks]


def test_large_index_arithmetic_keeps_exact_integers():
    # i * N + j reaches 2^24 at 4096 x 4097: stored to an i32 result or compared it must be exact, which f32
    # vectors are not: the scalar kernel (remarked); at 64 x 100 the vector kernel
    from gir.passes.schedule_mlu import schedule_mlu
    srcs = ["func f(x: i32[M, N]) -> (y: i32[M, N]) {\n  y[i, j] = x[i, j] + i * N + j\n}\n",
            "func f(a: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = select(i * N + j < 5000, a[i, j], 0.0)\n}\n"]
    for src in srcs:
        f = parse_text(src, filename="q.gir").funcs[0]
        for sizes, scalar in (({"M": 4096, "N": 4097}, True), ({"M": 64, "N": 100}, False)):
            remarks: list = []
            schedule_mlu(f, sizes, remarks=remarks)
            assert bool([r for r in remarks if "scalar" in r.message]) == scalar, (src, sizes)
