"""In-file expected-error annotations for negative tests (format: tests/frontend/README.md)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ANNOTATION = re.compile(r"#\s*expect-error@([+-]?)(\d+):(\d+):\s*(.+?)\s*$")
DIAGNOSTIC = re.compile(r"^(.+?):(\d+):(\d+): error: (.*)$")


@dataclass(frozen=True)
class Expected:
    line: int
    col: int
    text: str
    at: int  # line of the annotation itself


def expectations(path: Path) -> list[Expected]:
    """Parse `# expect-error@L:C: TEXT` annotations; L is absolute, or relative with a sign."""
    out = []
    for k, line in enumerate(path.read_text().splitlines(), 1):
        m = ANNOTATION.search(line)
        if m is None:
            continue
        sign, num, col, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        target = k + num if sign == "+" else k - num if sign == "-" else num
        out.append(Expected(target, col, text, k))
    return out


def diagnostics(stderr: str, path: str) -> list[tuple[int, int, str]]:
    """(line, col, message) of every `FILE:L:C: error: MSG` line about `path` in the output."""
    out = []
    for line in stderr.splitlines():
        m = DIAGNOSTIC.match(line)
        if m and m.group(1) == path:
            out.append((int(m.group(2)), int(m.group(3)), m.group(4)))
    return out


def mismatches(expected: list[Expected], actual: list[tuple[int, int, str]]) -> list[str]:
    """Problems, empty when every diagnostic is matched by exactly one annotation and vice versa."""
    left = list(actual)
    problems = []
    for e in expected:
        hit = next((a for a in left if a[0] == e.line and a[1] == e.col and e.text in a[2]), None)
        if hit is None:
            problems.append(f"missing: {e.line}:{e.col}: {e.text} (annotation on line {e.at})")
        else:
            left.remove(hit)
    problems += [f"unexpected: {l}:{c}: {msg}" for l, c, msg in left]
    return problems
