"""The targets `gir run` knows: name → family, warp size and the runner that executes explicit GIR.

A runner is `run_func(func, inputs, sizes=None, *, warp_size=..., check_races=...) -> SimRun`-like: it returns
an object with `outputs` (result name → array) and, where it measures them, `stats`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from gir.errors import GirError, UsageError


@dataclass(frozen=True)
class Target:
    name: str
    family: str                  # "gpu" or "mlu"
    warp_size: int               # 1 on the MLU (no warps)
    runner: str | None           # "module:function" that runs an explicit function, or None
    description: str = ""

    def load_runner(self):
        """The runner function; GirError if this target cannot run programs in this installation."""
        if self.runner is None:
            raise GirError(f"target '{self.name}' has no runner (compile only)")
        module, _, fn = self.runner.partition(":")
        try:
            return getattr(importlib.import_module(module), fn)
        except (ImportError, AttributeError) as exc:
            raise GirError(f"the runner of target '{self.name}' ({self.runner}) is unavailable: {exc}") from None


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("sim", "gpu", 32, "gir.targets.sim:run_func", "SIMT simulator on the CPU (numpy)"),
    Target("cuda", "gpu", 32, "gir.targets.cuda.runner:run_func", "NVIDIA GPU through cupy"),
    Target("hip", "gpu", 64, None, "AMD GPU (source through hipcc; no runner here)"),
    Target("mlu-sim", "mlu", 1, "gir.targets.mlu.run:run_func", "MLU-like machine simulator"),
)}


NAMES = tuple(TARGETS)            # the one set of target names, for every subcommand and gir.compile
ALIASES = {"mlu": "mlu-sim"}      # there is no real MLU here: `mlu` is the simulated one


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def get_target(name: str) -> Target:
    """The target of a name (`mlu` is an alias of `mlu-sim`, as on every subcommand)."""
    try:
        return TARGETS[canonical(name)]
    except KeyError:
        raise UsageError(f"unknown target '{name}'", None,
                       [f"known targets: {', '.join(TARGETS)}"]) from None


__all__ = ["Target", "TARGETS", "NAMES", "ALIASES", "canonical", "get_target"]
