"""Helpers of the MLU simulator tests: fresh random inputs and in-file expected-error annotations."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gir.targets.mlu import MluError, parse_program, simulate

_EXPECTED = re.compile(r"//\s*expected-error\s*\{\{(.*?)\}\}")


def rand(rng: np.random.Generator, shape, dtype=np.float32, low=-2.0, high=2.0) -> np.ndarray:
    """Random values bounded away from zero (never zeros, so a missed write cannot pass for a result)."""
    mag = rng.uniform(0.25, 1.0, size=shape) * max(abs(low), abs(high))
    sign = rng.choice([-1.0, 1.0], size=shape) if low < 0 else 1.0
    return (mag * sign).astype(dtype)


def expect_error(text: str, kernel: str = "k", args: dict | None = None, task_dim=1, **kw) -> MluError:
    """Parse and run ``text``; it must fail at the line annotated ``// expected-error {{substring}}``."""
    annotated = [(i + 1, m.group(1)) for i, line in enumerate(text.splitlines()) for m in _EXPECTED.finditer(line)]
    assert len(annotated) == 1, "annotate exactly one line with // expected-error {{...}}"
    line, needle = annotated[0]
    with pytest.raises(MluError) as info:
        program = parse_program(text, filename="test.mlu")
        simulate(program, kernel, args or {}, task_dim, **kw)
    err = info.value
    assert needle in err.message, f"expected {needle!r} in:\n{err}"
    assert err.span is not None and err.span.line == line, f"expected the error at line {line}:\n{err}"
    assert f"test.mlu:{line}:" in str(err)
    return err
