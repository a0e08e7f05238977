"""Progress on stderr, one line per case: `[3/34] softmax f32 M=4096,N=1024 ... 1.020x ok (2.1 s, eta 70 s)`.

The case is named when it starts and its line completed when it ends, so a case of minutes shows what is
running. Shown when stderr is a terminal or the run is expected to take more than LONG_RUN_S seconds; never
with `gir bench -q`.
"""
from __future__ import annotations

import sys
import time

from gir.targets.bench.ratio import ratio_of

LONG_RUN_S = 3.0
# rough seconds per case (full sizes, --quick) on a 2-core CPU; only decides whether progress is worth showing
SECONDS_PER_CASE = {"sim": (0.6, 0.15), "mlu-sim": (6.0, 0.3), "cuda": (2.0, 1.0)}


def expected_seconds(cases, target: str, quick: bool) -> float:
    full, small = SECONDS_PER_CASE.get(target, (1.0, 1.0))
    return sum(small if quick and case.suite != "files" else full for case in cases)


def wanted(stream, quiet: bool, expected_s: float) -> bool:
    if quiet:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) or expected_s > LONG_RUN_S


def outcome(row: dict, target: str) -> str:
    """`1.020x ok`: the row's ratio to the target's bound (targets/bench/ratio.py) and its status."""
    ratio = ratio_of(row, target)
    status = row.get("status") or "?"
    return status if ratio is None else f"{ratio:.3f}x {status}"


class Progress:
    def __init__(self, total: int, stream=None, enabled: bool = True, clock=time.perf_counter):
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.clock = clock
        self.index = 0
        self.run_start = self.case_start = clock()

    def start(self, name: str) -> None:
        self.index += 1
        self.case_start = self.clock()
        self._write(f"[{self.index}/{self.total}] {name} ... ")

    def finish(self, result: str) -> None:
        now = self.clock()
        timing = duration(now - self.case_start)
        if self.index < self.total:
            timing += f", eta {duration((now - self.run_start) / self.index * (self.total - self.index))}"
        self._write(f"{result} ({timing})\n")

    def _write(self, text: str) -> None:
        if self.enabled:
            self.stream.write(text)
            self.stream.flush()


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"
