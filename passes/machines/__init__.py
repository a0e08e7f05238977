"""Machine descriptions: data at the bottom of the compiler.

Every target machine is one JSON file in this folder (`h200.json`, `h100.json`, `a100.json`, `mi250x.json`,
`mi300x.json`, `mlu370.json`; `ranking.json` holds the search's ranking policy per target family); the
dataclasses in `gpu.py` and `mlu.py` document the fields and are built from those files.
Passes, cost models, checks, printers and simulators all read a machine from here; nothing else repeats a
capacity or a core count.

    from gir.passes.machines import machine_for, GpuMachine, MluMachine, MLU370
    machine_for("cuda")          # the H200 description
    machine_for("hip", "mi250x")
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from gir.errors import GirError

_DIR = Path(__file__).resolve().parent


NOT_MACHINES = ("ranking",)   # the search's ranking policy per target family (passes/middle/search/ranking.py)


class MachineError(GirError):
    """A machine description or override that is not valid."""


@lru_cache(maxsize=None)
def machine_data(name: str) -> dict:
    """The fields of machine `name` (the stem of a JSON file in this folder)."""
    path = _DIR / f"{name.lower()}.json"
    if not path.is_file() or path.stem in NOT_MACHINES:
        known = ", ".join(sorted(p.stem for p in _DIR.glob("*.json") if p.stem not in NOT_MACHINES))
        raise MachineError(f"unknown machine '{name}' (known: {known})")
    return json.loads(path.read_text())


from gir.passes.machines.gpu import DEFAULT_FOR_TARGET, GPU_MACHINES, GpuMachine, gpu_machine, machine_for  # noqa: E402
from gir.passes.machines.mlu import MLU370, MluMachine  # noqa: E402

__all__ = ["MachineError", "machine_data", "GpuMachine", "gpu_machine", "machine_for", "GPU_MACHINES",
           "DEFAULT_FOR_TARGET", "MluMachine", "MLU370"]
