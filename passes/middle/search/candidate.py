"""A point of the search: a decision record with its cost-model estimate and a way to emit it.

Recipes (rows, tiles, transpose, reference) turn a group into candidates; `rank` orders the candidates of one
group by one rule for every recipe and target (ranking.py): on the GPU, the fastest estimate wins, unless a
candidate that moves at most the traffic goal x the compulsory bytes is within the time slack of it (then the fastest
such lean one wins: passes/machines/ranking.json).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from gir.passes.middle.search.decision import Decision
from gir.passes.middle.search.ranking import RankPolicy, order, policy

GPU = policy("gpu")   # the traffic goal and the time slack below it


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


def rank(cands: list[Candidate], pol: RankPolicy = GPU) -> list[Candidate]:
    """Best first (ranking.order: the GPU policy unless told otherwise)."""
    if not cands:
        return []
    return order(cands, lambda c: c.seconds, pol, lambda c: c.traffic, min(c.compulsory for c in cands),
                 key=lambda c: -c.decision.vec)
