"""The SIMT simulator: the executable meaning of explicit-layer GIR kernels on the CPU (docs/simulator.md).

Every instruction runs for all instances of its parallel scopes at once (numpy, lockstep), counting the
32-byte sectors a GPU moves and detecting data races and barrier divergence.
"""
from gir.targets.sim.run import RaceReport, SimRun, run_func
from gir.targets.sim.stats import InstrStats, KernelStats, SimStats, count_sectors

__all__ = ["run_func", "SimRun", "RaceReport", "SimStats", "KernelStats", "InstrStats", "count_sectors"]
