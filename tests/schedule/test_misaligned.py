"""Row lengths that are not multiples of the vector width stay register-cached.

Expected traffic of the unshifted vec = 1 path: a warp-level scalar access covers 32 consecutive f32 elements
(128 B); when a row starts off a 32-byte sector boundary such an access touches one sector more (5 instead of
4). `_expected_bytes` sums, per row and per 32-element access, the distinct sectors. Planned for such rows, the
kernel shifts its lanes to the sector below the row start (passes/schedule/shift.py): `_spanned_bytes`, the
sectors each row spans (more in tests/schedule/test_misaligned_rows.py).
"""
from __future__ import annotations

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from gir.passes.schedule import lower_func, plan_func
from gir.targets.sim import run_func

WARP = 32


def _expected_bytes(M: int, N: int, itemsize: int = 4) -> int:
    """Sector bytes of one row-major [M, N] tensor moved by 32-lane scalar accesses along each row."""
    total = 0
    for r in range(M):
        for c in range(0, N, WARP):
            lo = (r * N + c) * itemsize
            hi = (r * N + min(c + WARP, N)) * itemsize - 1
            total += hi // 32 - lo // 32 + 1
    return total * 32


def _spanned_bytes(M: int, N: int, itemsize: int = 4) -> int:
    """Sector bytes of one row-major [M, N] tensor when every warp access starts on a sector: the sectors
    each row spans."""
    return 32 * sum(((r * N + N) * itemsize - 1) // 32 - (r * N * itemsize) // 32 + 1 for r in range(M))


def _run(name: str, M: int, N: int, seed: int = 0):
    func = parse_file(f"samples/{name}.gir").funcs[0]
    sizes = {"M": M, "N": N}
    inputs = random_inputs(func, sizes, np.random.default_rng(seed))
    low = lower_func(func, "sim", {"sizes": sizes})
    run = run_func(low, inputs, sizes, check_races=False)
    for k, want in evaluate(func, inputs, sizes).items():
        np.testing.assert_allclose(run.outputs[k], want, rtol=2e-5, atol=2e-5, err_msg=f"{name}.{k}")
    return func, sizes, run.stats


def test_expected_model():
    # aligned rows: exactly the tensor; N = 1025: 7 of 8 rows start off a sector boundary
    assert _expected_bytes(8, 1024) == 8 * 1024 * 4
    assert _expected_bytes(8, 1025) == 32 * (129 + 7 * 161)
    assert _expected_bytes(4, 1) == 4 * 32


@pytest.mark.parametrize("N", [1, 7, 1000, 1025, 4097])
def test_softmax_rows_read_and_written_once(N):
    M = 24
    _, _, st = _run("softmax", M, N, seed=N)
    want = _spanned_bytes(M, N)
    assert st.global_read_bytes == pytest.approx(want, rel=0.01), (st.global_read_bytes, want)
    assert st.global_write_bytes == pytest.approx(want, rel=0.01), (st.global_write_bytes, want)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "rmsnorm"])
def test_n1025_register_cached(name):
    """The README command's shape: M = 1000, N = 1025 (softmax 1.007x compulsory with the shifted lanes: the
    sectors the rows span; layernorm / rmsnorm add their per-block gamma / beta loads)."""
    M, N = 1000, 1025
    func, sizes, st = _run(name, M, N, seed=5)
    plan = plan_func(func, "sim", {"sizes": sizes})
    cfg = plan.groups[0].config
    assert cfg.cached and cfg.vec == 4 and cfg.shift, cfg
    want = 2 * _spanned_bytes(M, N)  # x read once, y written once
    # broadcast operands (gamma, beta): loaded once per persistent block / row team
    extra = sum(int(np.prod([sizes.get(d, d) for d in p.type.shape])) * 4 for p in func.params[1:])
    teams = cfg.persistent * cfg.rows_per_block if cfg.persistent else M
    slack = teams * (_spanned_bytes(1, N) + 32) * (len(func.params) - 1) if extra else 0
    assert want <= st.global_bytes <= want + slack + 0.01 * want, (st.global_bytes, want, slack)
    compulsory = sum(int(np.prod([sizes.get(d, d) for d in p.type.shape])) * 4 for p in func.params) + M * N * 4
    assert st.global_bytes / compulsory < (1.01 if name == "softmax" else 1.3)


def test_aligned_rows_keep_vec4():
    func = parse_file("samples/softmax.gir").funcs[0]
    cfg = plan_func(func, "sim", {"sizes": {"M": 1000, "N": 1024}}).groups[0].config
    assert cfg.vec == 4 and cfg.cached


def test_vec4_plan_has_scalar_cached_middle_path():
    """A kernel planned for aligned N still caches rows of odd length within its cache (vec=1 branch)."""
    func = parse_file("samples/softmax.gir").funcs[0]
    M, N = 40, 1023
    inputs = random_inputs(func, {"M": M, "N": N}, np.random.default_rng(9))
    low = lower_func(func, "sim", {"sizes": {"M": 1000, "N": 1024}})
    run = run_func(low, inputs, {"M": M, "N": N}, check_races=False)
    np.testing.assert_allclose(run.outputs["y"], evaluate(func, inputs, {"M": M, "N": N})["y"], rtol=2e-5, atol=1e-7)
    assert run.stats.global_read_bytes == pytest.approx(_expected_bytes(M, N), rel=0.01)


@pytest.mark.parametrize("run_sizes", [{"N": 2, "G": 3, "CG": 5, "HW": 33},     # CG above the cached cap
                                       {"N": 2, "G": 2, "CG": 2, "HW": 1023}])  # odd HW: vec=1 cached
def test_group_norm_two_column_dims_cached_and_guarded(run_sizes):
    """group_norm rows (CG, HW) are register-cached (by the row or the tile recipe); runs outside the hinted
    cache fall back correctly."""
    from gir.passes.schedule import RowConfig
    func = parse_file("samples/group_norm.gir").funcs[0]
    hints = {"N": 4, "G": 4, "CG": 2, "HW": 1024}
    cfg = plan_func(func, "sim", {"sizes": hints}).groups[0].config
    assert (cfg.cached and cfg.inner) if isinstance(cfg, RowConfig) else cfg.cache, cfg
    inputs = random_inputs(func, run_sizes, np.random.default_rng(13))
    run = run_func(lower_func(func, "sim", {"sizes": hints}), inputs, run_sizes)
    np.testing.assert_allclose(run.outputs["y"], evaluate(func, inputs, run_sizes)["y"], rtol=2e-5, atol=2e-5)
