"""Where the tiles of the MLU scan's unit kernel (scan.py) lie along the scan axis: one tile per unit, or a walk
of whole tiles whose last one overlaps the one before (instead of a tail tile), and the rows the carries come
from."""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B


def single_tile(p) -> bool:
    """Whether every unit is one tile: the scan axis within R (no tile loop, nothing carried between tiles)."""
    return p.S <= p.R


def overlaps(p) -> bool:
    """Whether the walk ends with a whole tile overlapping the one before instead of its tail (module docstring):
    the transposed layout, a tail of 3/4 of a tile or more."""
    return p.layout == "rows" and p.S >= p.R and 4 * (p.S % p.R) >= 3 * p.R


def overlap_walk(p, k: ir.Var) -> tuple:
    """(tile k's scan offset, the row tile k's carry comes from) of the walk of S // R + 1 whole tiles, the last
    moved back to end at the row's end (overlapping the tile before by R - tail positions, recomputed equal and
    stored again): tile full - 1 hands on its carry at the position before the last tile, the others their last."""
    full, tail, last = p.S // p.R, p.S % p.R, B.c(p.S - p.R)
    s0 = ir.Call("max", (ir.BinOp("-", last, B.mul(k, p.R)), B.c(0))) if p.scan.reverse else \
        ir.Call("min", (B.mul(k, p.R), last))
    if p.scan.reverse:   # the inclusive value at position R: row R - tail of tile full - 1
        return s0, B.mul(from_tile(k, full - 1), p.R - tail)
    return s0, forward_carry(p, k)


def from_tile(k, at: int):
    """1 from tile `k` = `at` on, 0 before (an index expression of k)."""
    return ir.Call("min", (B.c(1), ir.Call("max", (B.c(0), B.add(k, 1 - at)))))


def forward_carry(p, k):
    """The row tile k of overlap_walk's forward walk hands on its carry from (tail - 1 from tile full - 1 on)."""
    full, tail = p.S // p.R, p.S % p.R
    return ir.BinOp("-", B.c(p.R - 1), B.mul(from_tile(k, full - 1), p.R - tail))
