"""Seeded random programs (tests/middle/randprog.py: element-wise chains with broadcasts over any axes,
reductions over random axes - alone or normalising their input in one or two phases - and permutations):
every one compiles through the default pipeline, matches the reference evaluator on the simulator at small odd
sizes (scheduled for those sizes, and for the large ones), and moves at most 1.10x its compulsory bytes at
about 4M elements (exact isl counts in 32-byte sectors per warp access, as the simulator counts them)."""
from __future__ import annotations

import numpy as np
import pytest

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.verifier import verify_module
from gir.passes.analysis.traffic import compulsory_bytes
from gir.passes.schedule import lower_module
from gir.targets.bench.runners import analysed_bytes
from gir.targets.sim import run_func
from tests.middle.randprog import program

SEEDS = range(120)
GOAL = 1.10
TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}  # norm-wise against the reference's magnitude (rounding of the result type)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program(seed):
    text, small, big = program(seed)
    module = parse_text(text, f"<random {seed}>")
    verify_module(module)
    func = module.funcs[0]
    inputs = random_inputs(func, small, np.random.default_rng(seed))
    want = evaluate(func, inputs, compute_dtype=np.float64)
    for hints in (small, big):
        low = lower_module(module, "sim", {"sizes": hints}).funcs[0]
        got = run_func(low, inputs, small).outputs
        for name, ref in want.items():
            ref = np.asarray(ref, np.float64)
            err = np.linalg.norm(np.asarray(got[name], np.float64) - ref) / max(np.linalg.norm(ref), 1e-30)
            dt = next(r.type.dtype.value for r in func.results if r.name == name)
            assert err < TOL[dt], f"{name} (scheduled for {hints}): relative error {err:.2e}\n{text}"
    read, written = compulsory_bytes(func, big)
    ratio = analysed_bytes(low, big) / (read + written)
    assert ratio <= GOAL, f"{ratio:.3f}x the compulsory bytes at {big}\n{text}"
