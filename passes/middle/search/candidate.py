"""A point of the search: a decision record with its cost-model estimate and a way to emit it.

Recipes (rows, tiles, transpose, reference) turn a group into candidates; `rank` orders the candidates of one
group by one rule for every recipe: the fastest estimate wins, unless a candidate that moves at most
TRAFFIC_GOAL x the compulsory bytes is within TIME_SLACK of it (then the fastest such lean one wins).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from gir.passes.middle.search.decision import Decision

TRAFFIC_GOAL = 1.05   # total global bytes / compulsory bytes we aim for
TIME_SLACK = 1.6      # ... when the lean candidate's estimate is within this factor of the best


@dataclass
class Emitted:
    kernels: list[str]                      # kernel texts (explicit GIR)
    allocs: list[str] = field(default_factory=list)   # function-level @global temporaries they need
    names: list[str] = field(default_factory=list)    # kernel names, in order


@dataclass
class Candidate:
    decision: Decision
    strategy: str                           # row-block | row-warp | row-split | tiles | transpose | reference ...
    seconds: float
    dram_bytes: float
    l2_bytes: float
    compulsory: float
    emit: Callable[[str], Emitted]
    config: object = None                   # the recipe's own configuration (RowConfig, TileConfig, ...)
    estimate: dict = field(default_factory=dict)
    condemned_by: Callable | None = None    # (check errors of self, self, other) -> also drop other?

    @property
    def traffic(self) -> float:
        return self.dram_bytes + self.l2_bytes


def rank(cands: list[Candidate]) -> list[Candidate]:
    """Best first (see the module docstring)."""
    ests = sorted(cands, key=lambda c: (c.seconds, -c.decision.vec))
    if not ests:
        return ests
    compulsory = min(c.compulsory for c in ests)
    near = [c for c in ests if c.seconds <= TIME_SLACK * ests[0].seconds]
    lean = [c for c in near if c.traffic <= TRAFFIC_GOAL * compulsory]
    pick = lean[0] if lean else min(near, key=lambda c: (c.traffic, c.seconds))
    if pick is not ests[0]:
        ests.remove(pick)
        ests.insert(0, pick)
    return ests
