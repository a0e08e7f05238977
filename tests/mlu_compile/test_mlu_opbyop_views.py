"""The op-by-op baseline on rank > 2 statements (`passes/schedule_mlu/splitstmt.py`): a reduction over several
trailing axes, and element-wise statements whose operands are indexed by leading axes only or by a shared
`[S, N]` slab (`indexops.py`), are split into vectorised statements instead of scalar kernels. Values match the
evaluator, the bounds / race checker accepts the kernels, and no scalar fallback kernel (`NAME_kK`) remains."""
import re

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file, parse_text
from gir.passes.analysis.checks import check_module
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.schedule import specialize
from gir.passes.schedule_mlu.splitstmt import split_statement
from gir.shapes import func_info
from gir.targets.mlu.run import run_func

SCALAR = re.compile(r"_k\d+$")


def _run(f, sizes, mode, seed):
    e = schedule_mlu(f, sizes, mode=mode)
    check_module(ir.Module((e,)), "mlu", sizes)   # raises GirError on bounds / race errors
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    res = run_func(e, x, sizes)
    for k, want in evaluate(f, x, sizes).items():
        want = np.asarray(want, np.float64)
        np.testing.assert_allclose(res.outputs[k].astype(np.float64), want, rtol=2e-5,
                                   atol=2e-5 * max(1.0, np.abs(want).max()), err_msg=f"{f.name} {sizes} {k}")
    return [k.name for k in e.kernels]


# report check size, a reduced one, odd channel counts / rows not a multiple of 64 (tails), one element per group
@pytest.mark.parametrize("sizes", [dict(N=3, G=4, CG=5, HW=130), dict(N=2, G=3, CG=7, HW=65),
                                   dict(N=1, G=5, CG=3, HW=64), dict(N=2, G=1, CG=1, HW=1)])
def test_group_norm_opbyop_vectorised_and_exact(sizes):
    f = parse_file("samples/group_norm.gir").funcs[0]
    names = _run(f, sizes, "opbyop", seed=sum(sizes.values()))
    assert names and not any(SCALAR.search(n) for n in names), names
    # every statement is its own kernel: the tile recipe (tiles.py) takes each alone (mu, vr: reductions over
    # two trailing axes, d and y: broadcasts of [N, G] and [G, CG] operands)
    assert len(names) == 4, names


GENERIC = {
    "sum3": "func sum3(x: f32[A, B, C]) -> (s: f32[A]) {\n  s[a] = sum(x[a, b, c])\n}",
    "mean4": "func mean4(x: f32[A, B, C, D]) -> (m: f32[A, B]) {\n  m[a, b] = mean(x[a, b, c, d]) * 2.0\n}",
    "max4": "func max4(x: f32[A, B, C, D]) -> (m: f32[A]) {\n  m[a] = max(x[a, b, c, d])\n}",
    "bcast3": ("func bcast3(x: f32[A, B, C], w: f32[B, C], u: f32[A]) -> (y: f32[A, B, C]) {\n"
               "  y[a, b, c] = x[a, b, c] * w[b, c] + u[a]\n}"),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
@pytest.mark.parametrize("shape", [(3, 5, 7, 65), (2, 1, 33, 130)])
def test_generic_trailing_axes_statement_alone_is_vectorised(name, shape):
    f = parse_text(GENERIC[name]).funcs[0]
    sizes = dict(zip("ABCD", shape))
    names = _run(f, sizes, "opbyop", seed=len(name) + sum(shape))
    assert names and not any(SCALAR.search(n) for n in names), names


@pytest.mark.parametrize("name,temps", [("mean4", [(2, 3, 4)]), ("max4", [(2, 3, 4), (2, 3)])])
def test_split_reduces_last_axis_first(name, temps):
    f = specialize(parse_text(GENERIC[name]).funcs[0], dict(A=2, B=3, C=4, D=5))
    info = func_info(f)
    out = split_statement(info.stmts[0].stmt, dict(info.types), {"x", "m"})
    names = [f"m_t{k}" for k in range(len(temps))]
    assert [s.target.name for s in out.stmts] == names + ["m"]
    assert [out.temps[t].shape for t in names] == temps
    assert [len(s.target.index) for s in out.stmts] == [len(t) for t in temps] + [len(info.stmts[0].out_vars)]


def test_shared_slab_is_one_fused_kernel():
    # gamma[g, c] is the same [G, CG] slab for every n: indexops reads its tiles without a leading index
    f = parse_text("func sh(x: f32[N, G, CG], gamma: f32[G, CG]) -> (y: f32[N, G, CG]) {\n"
                   "  y[n, g, c] = x[n, g, c] * gamma[g, c] - gamma[g, c]\n}").funcs[0]
    assert _run(f, dict(N=3, G=37, CG=130), "fused", seed=5) == ["sh_mlu"]
