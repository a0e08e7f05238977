"""Every crash the fuzzer found, fixed: the mutated input under cases/ with its expectations.

A case file carries lines `# fuzz-run: ARGV => STATUS [STDERR-REGEX]`; `{file}` is the case itself and
`{out}` a fresh output directory. The run must pass the fuzz oracle (harness.invoke), exit with STATUS,
and (if given) the first stderr line must contain a match of STDERR-REGEX after the file name.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.fuzz.harness import invoke

CASES = sorted((Path(__file__).parent / "cases").glob("*.gir"))
RUN = re.compile(r"#\s*fuzz-run:\s*(.*?)\s*=>\s*(\d+)\s*(.*)$")


def runs(path: Path) -> list[tuple[str, int, str]]:
    return [(m.group(1), int(m.group(2)), m.group(3)) for line in path.read_text().splitlines()
            if (m := RUN.match(line))]


def test_every_case_has_expectations():
    assert len(CASES) >= 5
    for path in CASES:
        assert runs(path), f"{path.name} has no '# fuzz-run:' line"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path, tmp_path: Path):
    for k, (cmd, status, pattern) in enumerate(runs(path)):
        out = tmp_path / f"out{k}"
        argv = [a.replace("{file}", str(path)).replace("{out}", str(out)) for a in shlex.split(cmd)]
        o = invoke(argv, out if "-o" in argv else None, timeout=60)
        assert o.ok, f"{cmd}: {o.problems}\n{o.stderr}\n{o.exc}"
        assert o.status == status, f"{cmd}: exit {o.status}\n{o.stdout}\n{o.stderr}"
        if pattern:
            first = o.stderr.splitlines()[0]
            assert first.startswith(str(path)) and re.search(pattern, first[len(str(path)):]), \
                f"{cmd}: {first!r} !~ {pattern!r}"
        if status != 0 and "-o" in argv:
            assert not out.exists() or not any(out.iterdir())
