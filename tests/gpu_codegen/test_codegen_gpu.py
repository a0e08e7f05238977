"""Run generated CUDA on a real GPU through cupy (skipped without one)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gir.parser import parse_file
from gir.targets.cuda import available, run_func

HERE = Path(__file__).parent
ROOT = HERE.parent.parent

pytestmark = pytest.mark.gpu


def test_available_is_a_bool():
    assert available() in (True, False)


@pytest.mark.skipif(not available(), reason="no CUDA device (cupy missing or no GPU)")
@pytest.mark.parametrize("m", [1, 3, 77])
def test_softmax_rows_on_gpu(m):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, 1024)).astype(np.float32)
    res = run_func(parse_file(ROOT / "samples/explicit/softmax_rows.gir").funcs[0], {"x": x}, repeat=3)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(res.outputs["y"], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert res.seconds > 0


@pytest.mark.skipif(not available(), reason="no CUDA device (cupy missing or no GPU)")
@pytest.mark.parametrize("n", [1, 511, 4099])
def test_masked_vadd_on_gpu(n):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    res = run_func(parse_file(HERE / "kernels/vadd_masked.gir").funcs[0], {"a": a, "b": b})
    np.testing.assert_allclose(res.outputs["c"], a + b, rtol=1e-6)
