"""The MLU compiles through the same pass pipeline as the GPU targets (issue 12, item 1): `gir passes --default
--target mlu-sim` prints it, `gir compile --target mlu` / `gir run --target mlu-sim` / gir.compile run it through
the PassManager, so --passes replaces it and --print-ir-after-all shows every stage."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gir import ir
from gir.cli import main
from gir.parser import parse_file, parse_text
from gir.printer import print_module

REPO = Path(__file__).resolve().parents[2]
SOFTMAX = REPO / "samples" / "softmax.gir"
FRONT = "squeeze-unit-axes,delinearize,hoist-reductions,naive-lower,fuse,forward-stores,dead-stores,load-cse"


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_default_pipeline_text_of_the_mlu(capsys):
    assert _run(capsys, "passes", "--default", "--target", "mlu-sim") == \
        (0, f"{FRONT},promote{{target=mlu-sim}},schedule{{target=mlu-sim}},software-pipeline,dense-staging\n", "")
    code, out, _ = _run(capsys, "passes", "--default", "--target", "mlu", "--sizes", "M=64,N=128")
    hints = 'sizes="M=64","N=128"'
    assert code == 0 and out == \
        f"{FRONT},promote{{target=mlu-sim {hints}}},schedule{{target=mlu-sim {hints}}},software-pipeline,dense-staging\n"
    # the GPU pipeline is the same passes
    _, gpu, _ = _run(capsys, "passes", "--default", "--target", "cuda")
    assert gpu.startswith(FRONT + ",promote,schedule")


def test_passes_replaces_the_mlu_pipeline(capsys):
    args = ("compile", SOFTMAX, "--target", "mlu", "--sizes", "M=64,N=128")
    code, default, _ = _run(capsys, *args)
    assert code == 0 and default.count("__mlu_global__") == 1          # softmax: one fused kernel
    _, text, _ = _run(capsys, "passes", "--default", "--target", "mlu-sim", "--sizes", "M=64,N=128")
    code, same, _ = _run(capsys, *args, "--passes", text.strip())
    assert code == 0 and same == default
    # without 'fuse' the function is the op-by-op program: one kernel per statement, and a missed remark says so
    no_fuse = "naive-lower,forward-stores,dead-stores,load-cse,promote{target=mlu-sim},schedule{target=mlu-sim}"
    code, out, err = _run(capsys, *args, "--passes", no_fuse)
    assert code == 0 and out != default and out.count("__mlu_global__") == 4
    assert "was not fused (the pipeline has no 'fuse')" in err and "[-Rpass-missed=schedule]" in err


def test_print_ir_after_all_shows_every_mlu_stage(capsys):
    code, out, err = _run(capsys, "compile", SOFTMAX, "--target", "mlu", "--sizes", "M=64,N=128",
                          "--print-ir-after-all")
    assert code == 0 and "__mlu_global__" in out
    stages = re.findall(r"IR after '([a-z-]+)", err)
    assert stages == FRONT.split(",") + ["promote", "schedule", "software-pipeline", "dense-staging"]
    scheduled = err[err.index("IR after 'schedule"):err.index("IR after 'software-pipeline")]
    assert "@core" in scheduled and "@block" not in scheduled   # the schedule stage prints the MLU kernels
    assert "async" not in scheduled and "slots=" not in scheduled
    last = err[err.index("IR after 'software-pipeline"):err.index("IR after 'dense-staging")]
    # the pipelining is IR: async moves of the next / previous tile, slotted tiles, syncs of the core's pipes
    assert re.search(r"alloc \w+: f32\[3, .*\] @nram with slots=3", last)
    assert re.search(r"load \w+\[\(\w+ \+ 1\) % 3, .* with .*async", last) and "sync @core" in last


def test_passes_without_software_pipeline_emit_synchronous_moves(capsys):
    args = ("compile", SOFTMAX, "--target", "mlu", "--sizes", "M=64,N=128")
    _, text, _ = _run(capsys, "passes", "--default", "--target", "mlu-sim", "--sizes", "M=64,N=128")
    assert text.strip().endswith(",software-pipeline,dense-staging")
    code, out, _ = _run(capsys, *args, "--passes", text.strip().replace(",software-pipeline", ""))
    assert code == 0 and "__memcpy(" in out and "__memcpy_async" not in out
    code, out, _ = _run(capsys, *args)
    assert code == 0 and "__memcpy_async" in out


def test_gpu_kernels_from_passes_are_refused_located(capsys):
    code, _, err = _run(capsys, "compile", SOFTMAX, "--target", "mlu", "--sizes", "M=64,N=128",
                        "--passes", "naive-lower,schedule{target=cuda}")
    assert code == 1 and "a GPU level: the MLU target needs kernels over @cluster and @core" in err
    assert re.search(r":\d+:\d+: error:", err) and "^" in err and "schedule{target=mlu-sim}" in err


def test_run_mlu_sim_runs_the_pipeline(capsys):
    code, out, _ = _run(capsys, "run", SOFTMAX, "--target", "mlu-sim", "--sizes", "M=8,N=96")
    assert code == 0 and re.search(r"^y\s.*pass$", out, re.M)
    no_fuse = "naive-lower,schedule{target=mlu-sim}"
    code, out, err = _run(capsys, "run", SOFTMAX, "--target", "mlu-sim", "--sizes", "M=8,N=96", "--passes", no_fuse)
    assert code == 0 and re.search(r"^y\s.*pass$", out, re.M) and "over 4 kernel(s)" in out
    assert "was not fused" in err


@pytest.mark.parametrize("name", ["softmax", "layernorm", "rope", "softmax_col", "cumsum", "channel_stats"])
def test_pipeline_output_is_the_strategies_output(name):
    """The schedule pass hands the MLU strategies the function naive-lower saw: the same explicit GIR (and so
    the same simulated times) as calling them directly."""
    from gir.passes.manager import as_module
    from gir.passes.middle import run_default
    from gir.passes.schedule_mlu import schedule_mlu
    from gir.passes.schedule_mlu.swpipe import pipeline_func

    f = parse_file(str(REPO / "samples" / f"{name}.gir")).funcs[0]
    sizes = {s: 96 for s in f.size_symbols()}
    state, _ = run_default(ir.Module((f,)), "mlu-sim", {"sizes": sizes})
    assert print_module(as_module(state)) == print_module(ir.Module((pipeline_func(schedule_mlu(f, sizes)),)))


SCAN_AND_SCALE = """
func scan_scale(x: f32[M, N]) -> (y: f32[M, N]) {
  c[i, j] = cumsum(x[i, j], j)
  y[i, j] = c[i, j] * 2.0
}
"""


def test_mlu_remarks_flow_through_the_pass_context():
    from gir.passes.middle import run_default

    m = parse_text(SCAN_AND_SCALE, "scan_scale.gir")
    _, ctx = run_default(m, "mlu-sim", {"sizes": {"M": 4, "N": 40}})
    missed = [r for r in ctx.remarks if r.kind == "missed" and r.pass_name == "schedule-mlu"]
    assert missed and "holds scans" in missed[0].message and missed[0].loc is not None
    assert any(r.pass_name == "fuse" for r in ctx.remarks)   # the front passes' remarks are there too


def test_api_compile_mlu_sim_warns_with_the_pipeline_remarks():
    import gir

    k = gir.compile(SCAN_AND_SCALE, target="mlu-sim", cache=False)
    x = np.random.default_rng(0).standard_normal((4, 40)).astype(np.float32)
    from gir.api import MissedOptimization
    with pytest.warns(MissedOptimization, match="holds scans"):
        y = k(x)
    np.testing.assert_allclose(y, np.cumsum(x, axis=1) * 2.0, rtol=1e-5, atol=1e-5)
