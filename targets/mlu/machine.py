"""The simulated MLU's machine description lives with the other machines in `passes/machines/` (data at the
bottom of the compiler); this module re-exports it for the simulator."""
from gir.passes.machines import MLU370, MachineError, MluMachine

__all__ = ["MLU370", "MluMachine", "MachineError"]
