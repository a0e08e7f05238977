"""What a simulation returns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class CoreStats:
    """One task of the launch. Times in cycles; bytes are useful bytes of DMAs (GDRAM traffic in ``bytes``)."""

    task_id: int
    cluster_id: int
    core_id: int
    finish_cycles: float
    io_busy_cycles: float
    compute_busy_cycles: float
    scalar_cycles: float
    sync_wait_cycles: float
    dmas: int
    vector_ops: int
    bytes: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SimResult:
    """Outputs and timing of one launch.

    outputs    -- final contents of every pointer argument (same shapes and dtypes as passed in).
    cycles     -- makespan in machine cycles; ``seconds`` = cycles / clock.
    pipe_busy  -- cycles summed over tasks: "io" (DMA in progress on the IO pipe, latency included), "compute",
                  "scalar" (control thread).
    bytes      -- summed over tasks: gdram_read_bytes / gdram_write_bytes (useful), gdram_traffic_bytes (what the
                  GDRAM bus moved: 64-byte segments, read-modify-write reads included), gdram_rmw_bytes,
                  sram_/nram_/wram_ read/write bytes.
    per_core   -- one `CoreStats` per task.
    """

    outputs: dict[str, np.ndarray]
    cycles: float
    seconds: float
    pipe_busy: dict[str, float]
    bytes: dict[str, float]
    per_core: tuple[CoreStats, ...]
    task_dim: int

    @property
    def gdram_bandwidth(self) -> float:
        """Achieved GDRAM traffic in bytes per second."""
        return self.bytes.get("gdram_traffic_bytes", 0.0) / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        b = self.bytes
        lines = [
            f"tasks={self.task_dim} cycles={self.cycles:.0f} time={self.seconds * 1e6:.2f} us",
            f"GDRAM read={b.get('gdram_read_bytes', 0):.0f} B write={b.get('gdram_write_bytes', 0):.0f} B "
            f"traffic={b.get('gdram_traffic_bytes', 0):.0f} B ({self.gdram_bandwidth / 1e9:.1f} GB/s)",
            "busy (sum over tasks): " + ", ".join(f"{k}={v:.0f}" for k, v in self.pipe_busy.items()),
        ]
        return "\n".join(lines)
