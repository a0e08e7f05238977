"""The README's "From Python" example runs as written (its last line raises the GirError it shows)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import gir

ROOT = Path(__file__).resolve().parents[2]


def test_readme_example(monkeypatch):
    block = re.search(r"## From Python\n\n```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md has no 'From Python' example"
    lines = block.group(1).rstrip("\n").splitlines()
    assert len(lines) <= 10
    *body, last = lines
    shown = re.search(r"# GirError: (.*)$", last).group(1)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec("\n".join(body), scope)
    with pytest.raises(gir.GirError) as e:
        exec(last, scope)
    assert e.value.message == shown
    assert scope["softmax"].programs  # compiled at the first call, for the binding of x
