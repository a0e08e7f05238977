"""Compile HIP source for an AMD GPU with hipcc (device code only, to assembly) and read resource usage.

    if hipcc_available():
        res = compile_source(source, arch="gfx90a")
        res.kernels["softmax_0"]  # {"vgpr": 32, "sgpr": 20, "vgpr_spill": 0, "sgpr_spill": 0, "scratch": 0}
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gir.errors import GirError


def hipcc_available() -> bool:
    return shutil.which("hipcc") is not None


@dataclass
class Hipcc:
    assembly: str
    kernels: dict[str, dict[str, int]] = field(default_factory=dict)


_FIELDS = {"vgpr": r"\.vgpr_count:\s+(\d+)", "sgpr": r"\.sgpr_count:\s+(\d+)",
           "vgpr_spill": r"\.vgpr_spill_count:\s+(\d+)", "sgpr_spill": r"\.sgpr_spill_count:\s+(\d+)",
           "scratch": r"\.private_segment_fixed_size:\s+(\d+)"}


def parse_metadata(asm: str) -> dict[str, dict[str, int]]:
    """Per-kernel resource usage from the AMDGPU metadata block of the assembly."""
    out: dict[str, dict[str, int]] = {}
    for block in re.split(r"\n  - \.", asm.split("amdhsa.kernels:", 1)[-1])[1:]:
        m = re.search(r"\.name:\s+(\w+)", block)
        if not m:
            continue
        out[m.group(1)] = {k: int(v.group(1)) for k, pat in _FIELDS.items() if (v := re.search(pat, block))}
    return out


def compile_source(source: str, arch: str = "gfx90a", timeout: float = 300) -> Hipcc:
    if not hipcc_available():
        raise GirError("hipcc is not installed (apt-get install hipcc)")
    with tempfile.TemporaryDirectory() as tmp:
        src, asm = Path(tmp) / "kernels.hip", Path(tmp) / "kernels.s"
        src.write_text(source)
        env = dict(os.environ, HIP_PLATFORM="amd")
        proc = subprocess.run(["hipcc", f"--offload-arch={arch}", "--cuda-device-only", "-S", "-o", str(asm),
                               str(src)], capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            raise GirError(f"hipcc failed:\n{proc.stderr[-4000:]}")
        text = asm.read_text()
    return Hipcc(text, parse_metadata(text))
