"""A small FileCheck (LLVM's, as MLIR tests use it): `CHECK:` lines match in order, `CHECK-NEXT:` on the line
right after the previous match, `CHECK-SAME:` on the same line, `CHECK-NOT:` must not occur between the
surrounding matches. A pattern is a substring; `{{...}}` holds a regular expression."""
from __future__ import annotations

import re

_DIRECTIVE = re.compile(r"#\s*(CHECK(?:-NEXT|-NOT|-SAME)?):\s?(.*)$")


def directives(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        m = _DIRECTIVE.search(line)
        if m:
            out.append((m.group(1), m.group(2).rstrip()))
    return out


def _pattern(p: str) -> re.Pattern:
    parts = re.split(r"(\{\{.*?\}\})", p)
    return re.compile("".join(part[2:-2] if part.startswith("{{") else re.escape(part) for part in parts))


def filecheck(output: str, checks: list[tuple[str, str]]) -> None:
    """Raise AssertionError (with the output and the failing directive) unless `output` satisfies `checks`."""
    lines = output.splitlines()
    pos = 0          # next line to search
    last = -1        # line of the previous match
    col = 0          # end of the previous match on that line (for CHECK-SAME)
    nots: list[str] = []

    def fail(kind, pat, why):
        raise AssertionError(f"{kind}: {pat!r} {why}\n--- output ---\n{output}")

    for kind, pat in checks:
        rx = _pattern(pat)
        if kind == "CHECK-NOT":
            nots.append(pat)
            continue
        if kind == "CHECK-SAME":
            m = rx.search(lines[last], col) if last >= 0 else None
            if not m:
                fail(kind, pat, f"not found on line {last + 1}")
            col = m.end()
            continue
        found = None
        rng = [pos] if kind == "CHECK-NEXT" else range(pos, len(lines))
        for k in rng:
            if k < len(lines):
                m = rx.search(lines[k])
                if m:
                    found = (k, m)
                    break
        if found is None:
            fail(kind, pat, "not found" + (f" on line {pos + 1}" if kind == "CHECK-NEXT" else f" after line {pos}"))
        k, m = found
        for n in nots:
            for j in range(pos, k):
                if _pattern(n).search(lines[j]):
                    fail("CHECK-NOT", n, f"found on line {j + 1}")
        nots = []
        last, col, pos = k, m.end(), k + 1
    for n in nots:
        for j in range(pos, len(lines)):
            if _pattern(n).search(lines[j]):
                fail("CHECK-NOT", n, f"found on line {j + 1}")
