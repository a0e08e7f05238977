"""Bounded, seeded fuzzing of the CLI (see driver.py; long runs: `python -m tests.fuzz.driver`).

Fixed seeds, so a failure is reproducible: rerun the case with `fuzz_case(SEED, tmpdir)` and read the
mutated text from the assertion message.
"""
from __future__ import annotations

import pytest

from tests.fuzz.driver import explicit_case, fuzz_case

MUTATION_SEEDS = range(100)
EXPLICIT_SEEDS = range(30)


def _report(seed, src, text, bad) -> str:
    lines = [f"seed {seed} (from {src}):", text]
    for o in bad:
        lines += [f"gir {' '.join(o.argv)} -> {o.status}: {o.problems}", o.stderr[:800], o.exc or ""]
    return "\n".join(lines)


@pytest.mark.parametrize("chunk", range(4))
def test_mutated_samples(chunk, tmp_path):
    for seed in MUTATION_SEEDS[chunk::4]:
        src, text, bad, _timeouts = fuzz_case(seed, tmp_path, timeout=30)
        assert not bad, _report(seed, src, text, bad)


def test_generated_explicit_kernels(tmp_path):
    checked = []
    for seed in EXPLICIT_SEEDS:
        what, text, bad, _timeouts = explicit_case(10_000 + seed, tmp_path, timeout=30)
        assert not bad, _report(seed, what, text, bad)
        checked.append(what.endswith("check=0"))
    # valid kernels (compared with the reference on the simulator) and invalid ones must both occur
    assert 5 <= sum(checked) <= len(checked) - 5, checked
