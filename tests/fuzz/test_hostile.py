"""Every hostile case of tests/fuzz/hostile.py through every subcommand: no traceback, no hang, a located
diagnostic (or a command-line one), no file written on failure (the oracle is tests/fuzz/harness.invoke)."""
from __future__ import annotations

import pytest

from tests.fuzz.hostile import cases, run_case

CASES = cases()
TIMEOUT_S = 90  # a hang guard for a slow CI machine; the limits make every case finish in seconds here


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input(case, tmp_path):
    bad = run_case(case, tmp_path, TIMEOUT_S)
    assert not bad, "\n".join(f"gir {' '.join(o.argv)}: {o.problems}\n{(o.exc or '')[-800:]}" for o, _ in bad)
