"""Recipe `tiles` (placeholder until written)."""
from __future__ import annotations


def candidates(g, unit, m, hints):
    return []


def why_not(g, unit) -> str:
    return "the tile recipe does not map this group yet"
