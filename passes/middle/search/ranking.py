"""One rule for ordering the candidates of a search, on every target; its numbers are data per target family
(passes/machines/ranking.json: the GPU search trades a little estimated time for less traffic, the MLU search
keeps the recipe order within the cost model's noise).

`order(items, ...)` puts the best first:

1. with `tie` > 0, the items' own order (the recipes' preference) decides among estimates closer than `tie`: a
   later item takes the lead only when estimated more than `tie` faster than the current leader; the rest follow
   by estimate. With `tie` = 0 the fastest leads (ties broken by `key`, then by the items' order);
2. with a `traffic_goal`, among the items within `time_slack` of the leader's estimate, the fastest that moves
   at most `traffic_goal` x the compulsory bytes leads instead; when none does, the one moving the fewest bytes.

`candidate.rank` (the GPU groups' candidates), the row schedule's configurations, the scheduled variants of a
function, and the MLU recipes, tile plans and group splits all use it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RankPolicy:
    traffic_goal: float | None   # bytes moved / compulsory bytes a candidate should stay within (None: no goal)
    time_slack: float            # ... when its estimate is within this factor of the leader's
    tie: float                   # estimates closer than this fraction are ties: the earlier item wins

    def beats(self, seconds: float, leader: float) -> bool:
        """Whether an item estimated `seconds` takes the lead from an earlier one estimated `leader`."""
        return seconds < (1.0 - self.tie) * leader


@lru_cache(maxsize=None)
def policy(family: str) -> RankPolicy:
    """The policy of target family `family` ("gpu" or "mlu")."""
    d = _data()[family]
    return RankPolicy(d["traffic_goal"], d["time_slack"], d["tie"])


@lru_cache(maxsize=None)
def _data() -> dict:
    from gir.passes import machines
    return json.loads((Path(machines.__file__).resolve().parent / "ranking.json").read_text())


def order(items: Sequence[T], seconds: Callable[[T], float], pol: RankPolicy,
          traffic: Callable[[T], float] | None = None, compulsory: float | None = None,
          key: Callable[[T], object] | None = None) -> list[T]:
    """`items` best first (module docstring). `traffic(item)` and `compulsory` (bytes) for the traffic goal;
    `key(item)`: the tie-break among equal estimates when `tie` is 0."""
    if not items:
        return []
    cache = {id(it): seconds(it) for it in items}   # (an estimate may be costly: once per item)
    seconds = lambda it: cache[id(it)]   # noqa: E731
    if pol.tie > 0:
        lead = None
        for it in items:
            if lead is None or pol.beats(seconds(it), seconds(lead)):
                lead = it
        ests = [lead] + sorted((it for it in items if it is not lead), key=seconds)
    else:
        ests = sorted(items, key=(lambda it: (seconds(it), key(it))) if key else seconds)
    if pol.traffic_goal is None or traffic is None or compulsory is None:
        return ests
    near = [it for it in ests if seconds(it) <= pol.time_slack * seconds(ests[0])]
    lean = [it for it in near if traffic(it) <= pol.traffic_goal * compulsory]
    pick = lean[0] if lean else min(near, key=lambda it: (traffic(it), seconds(it)))
    if pick is not ests[0]:
        ests.remove(pick)
        ests.insert(0, pick)
    return ests
