"""Seeded random-program differential test (issue 12, item 5): 200 valid operator-layer programs (diffprog.py:
element-wise chains, broadcasts over any axes, reductions over any axes incl. leading and middle ones, casts inside
expressions, f32 / f16 / bf16, sizes 1 / primes / non-multiples of 32, unused inputs, indices as values) run on
the evaluator, the SIMT simulator and the MLU simulator. Both targets must match the evaluator within the result
type's tolerance (gir.verdict); the MLU may instead refuse a program with a located GirError, never crash."""
from __future__ import annotations

import pytest

from diffrun import check
from diffprog import program

SEEDS = range(200)


def test_generator_covers_the_classes():
    texts = [program(s)[0] for s in SEEDS]
    assert sum("f16(" in t or "bf16(" in t for t in texts) >= 20                       # casts in expressions
    assert sum(": f16[" in t or ": bf16[" in t for t in texts) >= 60                   # 16-bit tensors
    assert sum("u: " in t for t in texts) >= 10                                         # unused inputs
    assert sum("s[] = " in t for t in texts) >= 10                                      # full reductions
    assert sum("s[b" in t or "s[c" in t or "s[d" in t for t in texts) >= 20           # leading axes reduced
    assert sum(" * a " in t or "f32(a)" in t or " * b " in t or "f32(b)" in t for t in texts) >= 10  # indices
    assert any(1 in program(s)[1].values() for s in SEEDS)
    # integer results: reductions of integer selects, nested reductions in the condition, argmax/argmin, // and %
    assert sum("min(select" in t or "max(select" in t or "sum(select" in t for t in texts) >= 15
    assert sum("(x[e" in t or ", e]" in t or ", f]" in t for t in texts) >= 8
    assert sum("argmax(" in t or "argmin(" in t for t in texts) >= 3
    assert sum(("//" in t or ") % " in t) and "y: i32" in t for t in texts) >= 5


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_agrees(seed):
    problems = check(seed)
    # a refusal must be located and name what the MLU target lacks (not an internal inconsistency)
    bad = {k: v for k, v in problems.items()
           if not (k == "mlu-sim" and v.startswith("refused:") and ("MLU" in v or "NRAM" in v))}
    assert not bad, f"seed {seed}: {bad}\n{program(seed)[0]}{program(seed)[1]}"
