"""Options of the search shared by its passes: size hints and the machine."""
from __future__ import annotations

from gir.errors import GirError


def parse_hints(items) -> dict[str, int]:
    """("M=4096", "N=1024") or "M=4096,N=1024" -> {"M": 4096, "N": 1024}."""
    if isinstance(items, str):
        items = [p for p in items.split(",") if p.strip()]
    out: dict[str, int] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        try:
            if not sep:
                raise ValueError
            out[key.strip()] = int(value)
            if out[key.strip()] < 0:
                raise ValueError
        except ValueError:
            raise GirError(f"bad size hint '{item}': expected NAME=INT with INT >= 0") from None
    return out


def format_hints(hints: dict[str, int]) -> tuple[str, ...]:
    return tuple(f"{k}={v}" for k, v in hints.items())


def hint(d, hints: dict[str, int]) -> int:
    return d if isinstance(d, int) else int(hints.get(d, 4096))
