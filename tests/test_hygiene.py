"""The suite itself: seeded randomness only, no wall-clock assertions (timings belong in benchmarks)."""
from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
UNSEEDED = re.compile(r"default_rng\(\s*\)|random\.Random\(\s*\)|np\.random\.(rand|randn|random|normal|uniform|standard_normal|randint|choice|seed)\(")
WALL_CLOCK = re.compile(r"^\s*assert\b.*(perf_counter|time\.time\(|monotonic\(|elapsed\b)", re.MULTILINE)
TIMER_VAR = re.compile(r"^\s*(\w+)\s*=.*(perf_counter|time\.time\(|monotonic\()", re.MULTILINE)


def _sources():
    return [p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name]


def test_no_unseeded_random_generators():
    bad = [f"{p.relative_to(TESTS)}:{n}" for p in _sources()
           for n, line in enumerate(p.read_text().splitlines(), 1) if UNSEEDED.search(line)]
    assert not bad, f"unseeded random inputs: {bad}"


def _timer_assertions(text: str) -> list[str]:
    """Assertions on a timer call, or on a variable assigned from one (`t0 = perf_counter()` ... `assert t0`)."""
    found = [m.group(0).strip() for m in WALL_CLOCK.finditer(text)]
    for var in {m.group(1) for m in TIMER_VAR.finditer(text)}:
        found += [m.group(0).strip() for m in re.finditer(rf"^\s*assert\b.*\b{var}\b.*$", text, re.MULTILINE)]
    return found


def test_no_wall_clock_assertions():
    bad = [f"{p.relative_to(TESTS)}: {line}" for p in _sources() for line in _timer_assertions(p.read_text())]
    assert not bad, f"wall-clock assertions: {bad}"


def test_no_test_defined_twice():
    """A module-level test defined twice silently replaces the first (pytest collects the last one)."""
    import ast
    bad = []
    for p in _sources():
        seen: set[str] = set()
        for node in ast.parse(p.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name in seen and node.name.startswith(("test", "Test")):
                    bad.append(f"{p.relative_to(TESTS)}:{node.lineno} {node.name}")
                seen.add(node.name)
    assert not bad, f"tests defined twice: {bad}"


CHECKOUT_PATH = re.compile(r"[\"'](/work/|/home/|/root/)\w")


def test_no_absolute_checkout_paths():
    """Tests find the repository's files relative to themselves: a path into one checkout (`/work/main/samples`)
    reads another copy's files when the suite runs from a fresh clone."""
    bad = [f"{p.relative_to(TESTS)}:{n}" for p in _sources()
           for n, line in enumerate(p.read_text().splitlines(), 1) if CHECKOUT_PATH.search(line)]
    assert not bad, f"absolute paths into a checkout: {bad}"
