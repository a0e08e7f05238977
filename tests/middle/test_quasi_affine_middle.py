"""Quasi-affine and guarded accesses through the IDFG (issue 13 item 1): exact isl access sets, guarded reads
clamped into their tensor, rope_flat on the simulator and mlu-sim against numpy."""
from pathlib import Path

import numpy as np
import pytest

import gir.api as api
from gir.parser import parse_text
from gir.passes.analysis import isl_helpers as ih
from gir.passes.middle import relations as rel
from gir.passes.middle.naive import build_func

ROPE = Path(__file__).resolve().parents[2] / "samples" / "rope_flat.gir"


def _graph():
    return build_func(parse_text(ROPE.read_text(), str(ROPE)).funcs[0])


@pytest.mark.parametrize("S,K", [(1, 1), (3, 17), (4, 33)])
def test_access_sets_are_exact(S, K):
    """cs[s, d // 2] touches S*K elements, x[s, d] S*D and the clamped x[s, d + 1], x[s, d - 1] S*(D-1) each:
    counted by isl, not enumerated."""
    g = _graph()
    sizes = {"S": S, "D": 2 * K, "K": K}
    counts = {}
    for n in g.nodes:
        if n.kind == "load":
            counts.setdefault(n.ref.name, []).append(ih.count(rel.access(g, n).range(), g.params, sizes))
    assert counts["cs"] == [S * K, S * K] and counts["sn"] == [S * K, S * K]
    D = 2 * K
    assert counts["x"] == [S * D, S * (D - 1), S * D, S * (D - 1)]  # preorder: then-branch, else-branch


def test_guarded_reads_are_clamped():
    g = _graph()
    shown = {str(n.ref.index[1].fn) for n in g.nodes if n.kind == "load" and n.ref.name == "x"
             and hasattr(n.ref.index[1], "fn")}
    assert shown == {"min", "max"}  # x[s, d + 1] and x[s, d - 1]; x[s, d] is left alone


@pytest.mark.parametrize("target,S,K", [("sim", 3, 19), ("sim", 1, 1), ("mlu-sim", 2, 7)])
def test_rope_flat_runs(target, S, K):
    rng = np.random.default_rng(S * 100 + K)
    x, cs, sn = (rng.standard_normal(s).astype(np.float32) for s in ((S, 2 * K), (S, K), (S, K)))
    y = api.compile(str(ROPE), target, cache=False)(x, cs, sn)
    c, s = np.repeat(cs, 2, axis=1).astype(np.float64), np.repeat(sn, 2, axis=1).astype(np.float64)
    partner = np.stack([-x[:, 1::2], x[:, 0::2]], axis=2).reshape(x.shape)
    ref = x * c + partner * s
    assert np.linalg.norm(y - ref) <= 1e-5 * np.linalg.norm(ref)
