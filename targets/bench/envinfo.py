"""What a result was measured with: the git commit of the source tree, exact package versions, machine and
device."""
from __future__ import annotations

import datetime
import importlib.metadata as md
import os
import platform
import subprocess
import sys
from pathlib import Path

PACKAGES = ("gir-compiler", "numpy", "islpy", "z3-solver", "lark", "ml_dtypes", "cupy-cuda12x", "cupy-cuda13x",
            "torch", "triton", "matplotlib")
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the checkout holding gir/, passes/, codegen/, targets/


def git_state(root: Path | None = None) -> dict[str, object]:
    """`commit` (HEAD) and `dirty` (uncommitted changes or untracked files) of the checkout whose top is `root`
    (default: SOURCE_ROOT); both None when root is not the top of a git checkout (an installed package) or git
    is missing."""
    root = SOURCE_ROOT if root is None else root
    top = _git(root, "rev-parse", "--show-toplevel")
    commit = _git(root, "rev-parse", "HEAD") if top and Path(top).resolve() == root.resolve() else None
    status = _git(root, "status", "--porcelain") if commit else None
    if commit is None or status is None:
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(status)}


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):  # no git, or it hangs
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return out


def machine() -> dict[str, object]:
    info: dict[str, object] = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                               "cpus": os.cpu_count()}
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            props = cupy.cuda.runtime.getDeviceProperties(0)
            info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            info["gpu_memory_bytes"] = int(props["totalGlobalMem"])
            info["gpu_sms"] = int(props["multiProcessorCount"])
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    except Exception:  # no cupy, or no device: CPU-only machine
        pass
    return info


def environment(argv: list[str], seed: int) -> dict[str, object]:
    return {"command": "gir bench " + " ".join(argv), "seed": seed,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **git_state(), "versions": versions(), "machine": machine()}
