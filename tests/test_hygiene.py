"""The suite itself: seeded randomness only, no wall-clock assertions (timings belong in benchmarks)."""
from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
UNSEEDED = re.compile(r"default_rng\(\s*\)|np\.random\.(rand|randn|random|normal|uniform|standard_normal)\(")
WALL_CLOCK = re.compile(r"^\s*assert\b.*(perf_counter|time\.time\(|monotonic\(|elapsed\b)", re.MULTILINE)


def _sources():
    return [p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name]


def test_no_unseeded_random_generators():
    bad = [f"{p.relative_to(TESTS)}:{n}" for p in _sources()
           for n, line in enumerate(p.read_text().splitlines(), 1) if UNSEEDED.search(line)]
    assert not bad, f"unseeded random inputs: {bad}"


def test_no_wall_clock_assertions():
    bad = [f"{p.relative_to(TESTS)}: {m.group(0).strip()}" for p in _sources()
           for m in WALL_CLOCK.finditer(p.read_text())]
    assert not bad, f"wall-clock assertions: {bad}"
