"""What a result was measured with: exact package versions, machine and device."""
from __future__ import annotations

import datetime
import importlib.metadata as md
import os
import platform
import sys

PACKAGES = ("gir-compiler", "numpy", "islpy", "z3-solver", "lark", "ml_dtypes", "cupy-cuda12x", "cupy-cuda13x",
            "torch", "triton", "matplotlib")


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
            "versions": versions(), "machine": machine()}
