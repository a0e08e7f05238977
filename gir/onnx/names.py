"""GIR identifiers for ONNX names: sanitising, reserved words, uniqueness within one function."""
from __future__ import annotations

import re

from gir import ir

RESERVED = frozenset(
    "func kernel alloc load store copy allreduce over sync parallel in step for if else with and or not "
    "inf nan true false select".split()) | frozenset(ir.REDUCTIONS + ir.UNARY_FUNCS + ir.BINARY_FUNCS + ir.TERNARY_FUNCS + ir.CASTS)

# index variables, in the order statements use them
INDEX_VARS = tuple("ijklmnpqrstuvwabcdefgh")


def sanitize(name: str, fallback: str = "t") -> str:
    """A valid GIR identifier close to `name`: other characters become '_', a leading digit gets a prefix."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")
    text = re.sub(r"_+", "_", text)
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}{text}"
    if text in RESERVED:
        text = f"{text}_"
    return text


class Namer:
    """Distinct identifiers within one function. Single letters are kept for index variables."""

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set(taken or ())

    def fresh(self, hint: str) -> str:
        base = sanitize(hint)
        if len(base) == 1:
            base = f"{base}_"
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


def index_vars(count: int, avoid: set[str] = frozenset()) -> list[str]:
    """`count` distinct index variable names, none in `avoid`."""
    pool = [v for v in INDEX_VARS if v not in avoid]
    k = 0
    while len(pool) < count:
        if f"i{k}" not in avoid:
            pool.append(f"i{k}")
        k += 1
    return pool[:count]
