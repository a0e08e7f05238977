"""The MLU schedules compute integer arithmetic in f32 vector tiles, exact only while values and partial sums stay
below 2^24 in magnitude. A row sum of integers that interval arithmetic does not bound below 2^24 (an integer
tensor's values are unknown) is refused by the row model (iotas.exact_int_sum) and runs as the exact scalar
kernel; element-wise integer arithmetic in tiles is still remarked (docs/mlu.md, "Known gaps")."""
import numpy as np
import pytest

from gir.parser import parse_text
from gir.targets.mlu.run import run_func


def test_i32_sum_beyond_2_pow_24_is_exact():
    f = parse_text("func f(x: i32[M, N]) -> (r: i32[M]) {\n  r[i] = sum(x[i, j] * 1000003)\n}\n").funcs[0]
    x = np.random.default_rng(0).integers(-50, 50, (5, 100)).astype(np.int32)
    got = run_func(f, {"x": x}, {"M": 5, "N": 100}).outputs["r"]
    assert np.array_equal(got, (x.astype(np.int64) * 1000003).sum(axis=1).astype(np.int32))


def test_integers_computed_in_f32_are_remarked():
    # the gap above is said with a located remark where a kernel widens integer tiles to f32 (never in silence),
    # and not where integer results are positions or compares narrowed from float work (exact)
    f = parse_text("func f(x: i32[M, N]) -> (y: i32[M, N]) {\n  y[i, j] = x[i, j] * 3 + 1\n}\n",
                   filename="w.gir").funcs[0]
    res = run_func(f, None, {"M": 64, "N": 100}, values=False)
    hits = [r for r in res.remarks if "f32 vector tiles" in r.message]
    assert len(hits) == 1 and "'x'" in hits[0].message and hits[0].loc.line == 1
    quiet = [  # exact: positions and compares narrowed from float work; labels compared with column indices or
        # gathered by them (a rounded value of 2^24 or more never meets one below it); reads through f32()
        "func g(x: f32[M, N]) -> (t: i32[M], a: i32[M]) {\n  t[i] = argmax(x[i, j])\n"
        "  a[i] = i32(max(x[i, j] > 0.0))\n}\n",
        open("samples/onehot.gir").read().replace("[M, C]", "[M, N]").replace("C", "N"),
        open("samples/cross_entropy.gir").read(),
        "func g(k: i32[M, N], x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] * f32(k[i, j])\n}\n"]
    for src in quiet:
        g = parse_text(src).funcs[0]
        assert not [r for r in run_func(g, None, {"M": 64, "N": 100}, values=False).remarks
                    if "f32 vector tiles" in r.message], src
    both = parse_text("func h(a: i32[M, N], b: i32[M, N]) -> (y: bool[M, N]) {\n  y[i, j] = a[i, j] == b[i, j]\n}\n"
                      ).funcs[0]   # two widened integers compared: 2^24 + 1 == 2^24 in f32
    hits = [r for r in run_func(both, None, {"M": 64, "N": 100}, values=False).remarks if "f32 vector" in r.message]
    assert len(hits) == 1 and "'a', 'b'" in hits[0].message
