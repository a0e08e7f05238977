"""The decision record of one fused group: every choice the search makes about it, for every recipe.

One record type covers the whole search space: which canonical axes map to blocks, which to consecutive lanes
(coalescing) and which are split across warps, which each thread walks serially, the vector width, the team
shape (thread, warp, block, persistent), tile sizes (Roller's rTile: the extent a block covers per axis), the
reduction strategy (serial, warp shuffle, shared memory, multi-block), the memory level of every buffer
(intermediates from `promote`; input caches: `reg`, or `stream` to re-read), and the pipeline depth. A recipe
is a way to emit a record as a kernel; today's good schedules (vectorised rows, register-cached rows, shifted
lanes, split rows, 32x33 shared transposes, column tiles) are points of this space.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Decision:
    recipe: str                                  # rows | tiles | transpose | reference
    blocks: tuple[str, ...] = ()                 # axes on the grid
    lanes: str | None = None                     # axis on consecutive lanes
    warps: str | None = None                     # axis split across the warps of a team
    loops: tuple[str, ...] = ()                  # axes walked serially by each thread
    vec: int = 1                                 # elements per lane access
    team: str = "thread"                         # thread | warp | block | persistent
    threads: int = 1                             # threads per team
    tile: tuple[tuple[str, int], ...] = ()       # elements a block covers per axis
    reduction: str = "none"                      # none | serial | shuffle | shared | multi-block
    levels: tuple[tuple[str, str], ...] = ()     # buffer -> reg | shared | recompute | global | stream
    pipeline: int = 1                            # buffering depth of the tile loop (GPU: 1)
    notes: dict = field(default_factory=dict, compare=False, hash=False)

    def text(self) -> str:
        """One line for remarks and reports."""
        parts = [self.recipe, f"team={self.team}x{self.threads}"]
        if self.blocks:
            parts.append(f"blocks=({', '.join(self.blocks)})")
        if self.lanes:
            parts.append(f"lanes={self.lanes}" + (f"x{self.vec}" if self.vec > 1 else ""))
        if self.warps:
            parts.append(f"warps={self.warps}")
        if self.loops:
            parts.append(f"loops=({', '.join(self.loops)})")
        if self.tile:
            parts.append("tile=" + "x".join(f"{a}:{n}" for a, n in self.tile))
        if self.reduction != "none":
            parts.append(f"reduce={self.reduction}")
        if self.levels:
            parts.append("levels=" + ",".join(f"{b}:{lv}" for b, lv in self.levels))
        return " ".join(parts)
