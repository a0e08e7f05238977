"""Compile generated kernels with nvcc in one invocation and parse ptxas's resource report."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gir.codegen import combined_source


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def ptxas_stats(kernels) -> dict[str, dict[str, int]]:
    """{kernel: {registers, stack, spill_stores, spill_loads}} for all `kernels` (KernelSource), one nvcc run."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernels.cu"
        src.write_text(combined_source(kernels))
        proc = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"),
                               str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    stats: dict[str, dict[str, int]] = {}
    current = None
    for line in proc.stderr.splitlines():
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            current = stats.setdefault(m.group(1), {})
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current is not None:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            current["registers"] = int(m.group(1))
    return stats
