"""The HIP target: compile generated HIP source with hipcc (no AMD GPU is needed to compile)."""
from gir.targets.hip.compile import Hipcc, compile_source, hipcc_available

__all__ = ["compile_source", "hipcc_available", "Hipcc"]
