"""Known gap (docs/mlu.md, "Known gaps"): the MLU schedules compute integer arithmetic in f32 vector tiles, so an
i32 result is exact only while its values and partial sums stay below 2^24 in magnitude. The SIMT simulator is
exact. This test reproduces the gap (strict xfail: it fails the suite once the gap is closed, so the marker goes)."""
import numpy as np
import pytest

from gir.parser import parse_text
from gir.targets.mlu.run import run_func


@pytest.mark.xfail(strict=True, reason="MLU integer arithmetic in f32: exact below 2^24 only")
def test_i32_sum_beyond_2_pow_24_is_exact():
    f = parse_text("func f(x: i32[M, N]) -> (r: i32[M]) {\n  r[i] = sum(x[i, j] * 1000003)\n}\n").funcs[0]
    x = np.random.default_rng(0).integers(-50, 50, (5, 100)).astype(np.int32)
    got = run_func(f, {"x": x}, {"M": 5, "N": 100}).outputs["r"]
    assert np.array_equal(got, (x.astype(np.int64) * 1000003).sum(axis=1).astype(np.int32))
