"""The search keeps only candidates that pass the z3/isl kernel checks (passes.analysis.checks)."""
from __future__ import annotations

import numpy as np

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.passes.analysis.checks import check_kernel
from gir.passes.schedule import RowConfig, lower_func, plan_module
from gir.passes.schedule import rows as rows_mod
from gir.targets.sim import run_func


def _walk(stmts):
    for s in stmts:
        yield s
        for attr in ("body", "then", "orelse"):
            yield from _walk(getattr(s, attr, ()))


def test_forced_config_over_the_shared_memory_limit_is_rejected():
    # 8192 warps per row team: the per-warp exchange buffers need 4 B x 8192 x 2 slots = 64 KiB > 48 KiB
    bad = RowConfig(threads=32 * 8192, rows_per_block=1, vec=4, cached=0)
    mod = parse_file("samples/softmax.gir")
    g = plan_module(mod, "cuda", {"sizes": {"M": 64, "N": 4096}, "row_config": bad})[0].groups[0]
    assert g.config != bad
    assert [c for c, _ in g.rejected] == [bad]
    assert any("[capacity]" in m for m in g.rejected[0][1])
    # the kernel that was taken instead passes every check
    f = lower_func(mod.funcs[0], "cuda", {"sizes": {"M": 64, "N": 4096}, "row_config": bad})
    assert not [d for k in f.kernels for d in check_kernel(f, k, "cuda") if d.severity == "error"]
    # without checking the forced configuration is emitted as is
    g0 = plan_module(mod, "cuda", {"sizes": {"M": 64, "N": 4096}, "row_config": bad, "check": False})[0].groups[0]
    assert g0.config == bad and not g0.rejected


SHIFTED = """func shifted(x: f32[M, 4100]) -> (y: f32[M, 4096]) {
  y[i, j] = x[i, j + 2] * 3.0
}
"""


def test_misaligned_vector_candidates_are_rejected(monkeypatch):
    """Break the generator's own alignment test (x[i, j + 2] claimed aligned): every vec=4 candidate now
    emits a misaligned 16-byte load, the alignment check rejects it and a scalar candidate is taken."""
    orig = rows_mod.RowKernel._add_input

    def lying(self, x):
        orig(self, x)
        for c in self.colrefs:
            c.aligned_offset = c.mode == "vec" or c.aligned_offset
    monkeypatch.setattr(rows_mod.RowKernel, "_add_input", lying)
    func = parse_text(SHIFTED).funcs[0]
    sizes = {"M": 37}
    g = plan_module(ir.Module((func,)), "sim", {"sizes": sizes})[0].groups[0]
    assert g.rejected and g.config not in [c for c, _ in g.rejected]
    assert all(getattr(c, "vec", 4) == 4 for c, _ in g.rejected)
    assert any("[alignment]" in m for _, ms in g.rejected for m in ms)
    low = lower_func(func, "sim", {"sizes": sizes})
    assert all(s.vec == 1 for k in low.kernels for s in _walk(k.body) if isinstance(s, ir.Move))
    inputs = random_inputs(func, sizes, np.random.default_rng(7))
    got = run_func(low, inputs, sizes).outputs["y"]
    np.testing.assert_allclose(got, evaluate(func, inputs, sizes)["y"], rtol=1e-6)


def test_unforced_samples_reject_nothing():
    for name in ("softmax", "layernorm", "cross_entropy"):
        p = plan_module(parse_file(f"samples/{name}.gir"), "cuda", {"sizes": {"M": 1000, "N": 3000}})[0]
        assert all(not g.rejected for g in p.groups)
