"""Structure of the scheduler's output: verifies, round-trips, fusion, vector widths, strategy choice."""
from __future__ import annotations

import glob

import pytest

from gir import ir
from gir.errors import GirError
from gir.parser import parse_file, parse_text
from gir.printer import print_module
from gir.verifier import verify_module
from gir.passes.schedule import lower_module, plan_module

SAMPLES = sorted(glob.glob("samples/*.gir"))
FUSED_ONE_KERNEL = ["softmax", "softmax_f16", "log_softmax", "layernorm", "layernorm_768", "rmsnorm",
                    "rmsnorm_bf16", "add_layernorm", "masked_softmax", "scaled_causal_softmax", "l2_normalize",
                    "elementwise_chain", "bias_gelu_erf", "swiglu", "group_norm", "row_max", "relu_mask"]


def _walk(stmts):
    for s in stmts:
        yield s
        for attr in ("body", "then", "orelse"):
            yield from _walk(getattr(s, attr, ()))


def _moves(func):
    return [s for k in func.kernels for s in _walk(k.body) if isinstance(s, ir.Move)]


def _lower(name, sizes=None, target="cuda"):
    return lower_module(parse_file(f"samples/{name}.gir"), target, {"sizes": sizes or {}}).funcs[0]


@pytest.mark.parametrize("path", SAMPLES)
@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_every_sample_lowers_verifies_and_round_trips(path, target):
    src = parse_file(path)
    out = lower_module(src, target, {"sizes": {}})  # compile times: docs/scheduling.md (measured, not asserted)
    verify_module(out)
    assert parse_text(print_module(out)) == out
    for f, g in zip(src.funcs, out.funcs):
        assert (f.name, f.params, f.results) == (g.name, g.params, g.results)
        assert g.is_explicit


@pytest.mark.parametrize("name", FUSED_ONE_KERNEL)
def test_fused_groups_are_one_kernel_without_temporaries(name):
    f = _lower(name, {"M": 4096, "N": 4096})
    assert len(f.kernels) == 1
    assert not [i for i in f.body if isinstance(i, ir.Alloc)]


def test_cross_entropy_mean_is_a_second_kernel():
    f = _lower("cross_entropy", {"M": 4096, "N": 4096})
    assert len(f.kernels) == 2  # per-row losses, then the scalar mean over loss_row


@pytest.mark.parametrize("name,dtype_vec", [("softmax", 4), ("layernorm", 4), ("softmax_f16", 8), ("rmsnorm_bf16", 8)])
def test_sixteen_byte_vectors_when_the_row_allows(name, dtype_vec):
    f = _lower(name, {"M": 4096, "N": 4096})
    vecs = {m.vec for m in _moves(f) if m.kind in ("load", "store")}
    assert dtype_vec in vecs
    # tails and odd row lengths fall back to scalar accesses under a size guard
    assert 1 in vecs


def test_vector_width_on_constant_misaligned_row_only_shifted_and_proved_aligned():
    """Rows of 1001 f32 start off a 16-byte boundary: vectors only with lanes shifted to the sector below the
    row start (passes/schedule/shift.py), and the alignment check proves every one aligned."""
    from gir.passes.analysis.checks import check_kernel
    src = parse_text("func f(x: f32[M, 1001]) -> (y: f32[M, 1001]) {\n  y[i, j] = x[i, j] * 2.0\n}\n")
    f = lower_module(src, "cuda", {"sizes": {"M": 64}}).funcs[0]
    cfg = plan_module(src, "cuda", {"sizes": {"M": 64}})[0].groups[0].config
    assert all(m.vec == 1 for m in _moves(f)) or cfg.shift
    assert not [d for k in f.kernels for d in check_kernel(f, k, "cuda", checks=("alignment", "bounds"))]


def _strategy(name, sizes):
    return plan_module(parse_file(f"samples/{name}.gir"), "cuda", {"sizes": sizes})[0].groups[0]


def test_reduction_strategy_depends_on_row_length():
    short = _strategy("softmax", {"M": 65536, "N": 64})
    long = _strategy("softmax", {"M": 4096, "N": 8192})
    huge = _strategy("softmax", {"M": 64, "N": 1 << 20})
    assert short.strategy == "row-warp"
    assert long.strategy == "row-block" and long.config.cached > 0
    assert huge.config.cached == 0  # does not fit in registers: re-read per phase
    # reductions over a non-contiguous axis: column tiles, lanes along the kept (contiguous) axis
    col = _strategy("col_sum", {"M": 4096, "N": 4096})
    assert col.strategy == "column-tiles" and col.decision.lanes == "j" and col.decision.warps == "i"
    mid = _strategy("reduce_mid", {})
    assert mid.strategy == "column-tiles" and mid.decision.lanes == "d"


def test_layernorm_uses_persistent_blocks_for_gamma_reuse():
    g = _strategy("layernorm", {"M": 4096, "N": 4096})
    assert g.config.persistent > 0 and g.config.persistent % 132 == 0
    assert g.estimate["dram_bytes"] + g.estimate["l2_bytes"] <= 1.05 * g.estimate["compulsory"]


def test_transpose_uses_padded_shared_tile():
    """The transpose recipe is a point of the search: a 32x33 shared tile. (At these sizes the tile recipe's
    2-D lane sub-tiles - 2 lanes x 4 along the input's rows, 16 along its columns - move as few sectors and win.)"""
    from gir.passes.base import PassContext
    from gir.passes.machines import machine_for
    from gir.passes.manager import PassManager
    from gir.passes.middle.search import transpose
    g = PassManager("naive-lower,fuse").run(parse_file("samples/transpose2d.gir"), PassContext()).graphs()[0]
    (cand,) = transpose.candidates(g, g.stmts, machine_for("cuda"), {"M": 1024, "N": 1024})
    text = cand.emit("t").kernels[0]
    assert "alloc _tile: f32[32, 33] @shared" in text
    plan = plan_module(parse_file("samples/transpose2d.gir"), "cuda", {"sizes": {"M": 1024, "N": 1024}})[0]
    chosen = plan.groups[0]
    assert chosen.strategy in ("transpose", "column-tiles")
    assert chosen.estimate.get("dram_bytes", 0) <= 1.01 * 2 * 4 * 1024 * 1024 or chosen.strategy == "transpose"


def test_hip_uses_wavefront_64():
    f = _lower("softmax", {"M": 64, "N": 4096}, "hip")
    lanes = [s for k in f.kernels for s in _walk(k.body) if isinstance(s, ir.Parallel) and s.level == ir.ParLevel.lane]
    assert lanes and all(s.hi == ir.Const(64) for s in lanes)


def test_unknown_target_is_a_gir_error():
    with pytest.raises(GirError, match="unknown GPU target"):
        lower_module(parse_file("samples/softmax.gir"), "mlu")


def test_schedule_pass_turns_the_idfg_into_kernels():
    from gir.passes.base import PassContext, check_pass_class
    from gir.passes.manager import PassManager
    from gir.passes.middle.search.schedule import Schedule
    check_pass_class(Schedule, "test")
    assert (Schedule.consumes, Schedule.produces) == ("idfg", "gir")
    ctx = PassContext()
    pm = PassManager('naive-lower,fuse,forward-stores,dead-stores,schedule{target=sim sizes="M=8","N=100"}')
    out = pm.run(parse_file("samples/rmsnorm.gir"), ctx)
    verify_module(out)
    assert ctx.statistics["schedule.kernels"] == 1
