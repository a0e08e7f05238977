"""MLIR-style tests of the IDFG passes: each file in checks/ is an operator-layer program with

    # RUN: <pass pipeline>          the pipeline to run (from the operator layer)
    # PRINT: idfg                   optional: check the graph's text instead of the explicit GIR it stands for
    # SIZES: M=5,N=7                optional: also run the printed explicit GIR on the simulator at these sizes
                                    and compare it with the reference evaluator
    # CHECK / CHECK-NEXT / CHECK-NOT / CHECK-SAME: ...   FileCheck directives on the printed output
    # CHECK-REMARK: ...             an optimisation remark whose message contains this text

Only what matters is checked (MLIR Testing Guide); numbers are judged norm-wise."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from gir.printer import print_module
from gir.passes.base import PassContext
from gir.passes.manager import PassManager, as_module, ir_kind
from tests.middle.filecheck import directives, filecheck

CHECKS = sorted(Path(__file__).parent.joinpath("checks").glob("*.gir"))


def _header(text: str, key: str) -> str | None:
    m = re.search(rf"^#\s*{key}:\s*(.*)$", text, re.M)
    return m.group(1).strip() if m else None


@pytest.mark.parametrize("path", CHECKS, ids=[p.stem for p in CHECKS])
def test_pass_check(path):
    text = path.read_text()
    module = parse_file(str(path))
    ctx = PassContext(filename=str(path))
    state = PassManager(_header(text, "RUN")).run(module, ctx)
    if _header(text, "PRINT") == "idfg":
        assert ir_kind(state) == "idfg"
        out = state.to_text()
    else:
        out = print_module(as_module(state))
    filecheck(out, directives(text))
    for want in re.findall(r"^#\s*CHECK-REMARK:\s*(.*)$", text, re.M):
        assert any(want.strip() in r.message for r in ctx.remarks), \
            f"no remark contains {want!r}; remarks:\n" + "\n".join(r.message for r in ctx.remarks)
    sizes = _header(text, "SIZES")
    if sizes:
        from gir.cli.common import parse_sizes
        from gir.targets.sim import run_func
        sizes = parse_sizes(sizes)
        func = module.funcs[0]
        inputs = random_inputs(func, sizes, np.random.default_rng(7))
        got = run_func(as_module(state).funcs[0], inputs, sizes).outputs
        want = evaluate(func, inputs, compute_dtype=np.float64)
        for name, ref in want.items():
            err = np.linalg.norm(np.asarray(got[name], np.float64) - ref) / max(np.linalg.norm(ref), 1e-30)
            assert err < 1e-5, f"{name}: relative error {err:.2e}"
