"""Run generated CUDA on a real GPU through cupy (skipped without one)."""
from __future__ import annotations

import importlib.util
import math
import zlib
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


# Every sample on the GPU: scheduled once for its first size binding (tests/sample_refs.py), run at every binding
# and at one large binding (about 2M elements per tensor: several waves of blocks, the chained scans' look-back
# across blocks), judged as `gir run` judges (gir.verdict against the float64 evaluator). Results start poisoned
# (targets/cuda/arrays.py): an element no kernel writes fails the comparison.
SAMPLES = sorted(p.stem for p in (ROOT / "samples").glob("*.gir"))
_spec = importlib.util.spec_from_file_location("gir_sample_refs_gpu", ROOT / "tests" / "sample_refs.py")
sample_refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample_refs)


def large_sizes(func, name: str, elements: int = 1 << 21) -> dict[str, int]:
    """Every size symbol of `func`'s tensors as declared (a view's outer shape) at one odd value so that its
    largest tensor holds about `elements`."""
    from gir.views import outer_type

    shapes = [outer_type(p).shape for p in func.params + func.results]
    names = {d for shape in shapes for d in shape if isinstance(d, str)}

    def largest(v: int) -> int:
        sizes = sample_refs.with_relations(name, {d: v for d in names})
        return max(math.prod(sizes[d] if isinstance(d, str) else d for d in shape) for shape in shapes)

    lo, hi = 1, elements
    while lo < hi:   # the largest value whose largest tensor stays within `elements`
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if largest(mid) <= elements else (lo, mid - 1)
    return sample_refs.with_relations(name, {d: lo if lo % 2 else max(lo - 1, 1) for d in names})


def _check_sample_on_gpu(name: str, explicit, func, sizes: dict) -> None:
    from gir.targets.bench.runners import check_outputs
    from gir.views import complete_sizes, outer_shape, to_outer

    rng = np.random.default_rng(zlib.crc32(f"{name}:{sorted(sizes.items())}".encode()))
    sizes = complete_sizes(func, dict(sizes))
    inputs = sample_refs.sample_inputs(name, func, sizes, rng)
    res = run_func(explicit, {k: v.copy() for k, v in inputs.items()}, sizes)
    declared = {p.name: inputs[p.name].reshape(outer_shape(p, sizes)) for p in func.params}  # as `gir run` has them
    row = check_outputs(func, declared, to_outer(func, res.outputs, sizes), sizes)
    assert row["status"] == "ok", f"{name} at {sizes}: {row}"


@pytest.mark.skipif(not available(), reason="no CUDA device (cupy missing or no GPU)")
@pytest.mark.parametrize("name", SAMPLES)
def test_sample_on_gpu(name):
    import gir
    from gir.passes.schedule import lower_module

    module = gir.parse_file(str(ROOT / "samples" / f"{name}.gir"))
    func = module.funcs[0]
    bindings = sample_refs.REFERENCES[name][1]
    explicit = lower_module(module, "cuda", {"sizes": bindings[0]}).funcs[0]
    for sizes in bindings:
        _check_sample_on_gpu(name, explicit, func, sizes)
    big = large_sizes(func, name)
    _check_sample_on_gpu(name, lower_module(module, "cuda", {"sizes": big}).funcs[0], func, big)
