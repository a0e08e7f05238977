"""Batched transposes on the MLU (passes/schedule_mlu/transpose.py): `y[l..., j, i] = x[l'..., i, j]`, the last
two axes swapped and the leading ones kept or permuted, is a 2-D transpose per slab with the units of all slabs
spread over the cores (it ran as a scalar kernel: ~1,200x the DMA roofline). Values for every element type, sizes
1 / primes / tails; no scalar kernel."""
import numpy as np
import pytest

from gir.parser import parse_text
from gir.targets.mlu.run import run_func

CASES = {
    "rank3": ("func f(x: {t}[A, C, D]) -> (y: {t}[A, D, C]) {{\n  y[a, j, i] = x[a, i, j]\n}}\n", (0, 2, 1)),
    "rank4": ("func f(x: {t}[A, B, C, D]) -> (y: {t}[A, B, D, C]) {{\n  y[a, b, j, i] = x[a, b, i, j]\n}}\n",
              (0, 1, 3, 2)),
    "lead_permuted": ("func f(x: {t}[A, B, C, D]) -> (y: {t}[B, A, D, C]) {{\n  y[b, a, j, i] = x[a, b, i, j]\n}}\n",
                      (1, 0, 3, 2)),
}
SIZES = [dict(A=1, B=1, C=1, D=1), dict(A=3, B=2, C=37, D=100), dict(A=2, B=5, C=130, D=67),
         dict(A=2, B=1, C=257, D=129)]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("t", ["f32", "f16", "i32", "bool"])
@pytest.mark.parametrize("k", range(len(SIZES)))
def test_batched_transpose_values(case, t, k):
    text, perm = CASES[case]
    f = parse_text(text.format(t=t)).funcs[0]
    sizes = {s: v for s, v in SIZES[k].items() if s in f.size_symbols()}
    shape = tuple(sizes[str(d)] for d in f.params[0].type.shape)
    rng = np.random.default_rng(k)
    x = rng.integers(-1000, 1000, shape) if t != "bool" else rng.integers(0, 2, shape)
    x = x.astype({"f32": np.float32, "f16": np.float16, "i32": np.int32, "bool": np.bool_}[t])
    res = run_func(f, {"x": x}, sizes)
    assert np.array_equal(np.asarray(res.outputs["y"]), np.transpose(x, perm))
    assert not [r for r in res.remarks if "scalar" in r.message]


def test_many_small_slabs_stay_near_the_roofline():
    # 128 slabs of 256 x 256 (8M elements): the slabs' units fill the 32 cores; simulated (model) time, not
    # wall-clock: 1.074x the DMA roofline when written, like the 2-D transpose of 4096 x 4096 (1.037x)
    from gir.targets.mlu import MLU370
    f = parse_text(CASES["rank3"][0].format(t="f32")).funcs[0]
    res = run_func(f, None, dict(A=128, C=256, D=256), values=False)
    roofline = 2 * 128 * 256 * 256 * 4 / MLU370.gdram_bandwidth
    assert res.stats["seconds"] / roofline <= 1.15
