"""A dependency-free progress bar on stderr (redrawn in place on a terminal, one line per step otherwise)."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, stream=None, width: int = 28):
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream or sys.stderr
        self.width = width
        self.start = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def step(self, label: str) -> None:
        self.done += 1
        frac = self.done / self.total
        filled = int(frac * self.width)
        elapsed = time.perf_counter() - self.start
        eta = elapsed / frac - elapsed if frac else 0.0
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} "
                f"{elapsed:6.1f}s eta {eta:6.1f}s  {label}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
