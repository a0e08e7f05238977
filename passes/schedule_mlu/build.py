"""Small constructors for explicit-layer IR nodes (used by the MLU scheduler)."""
from __future__ import annotations

from gir import ir


def c(v) -> ir.Const:
    return ir.Const(v)


def v(name: str) -> ir.Var:
    return ir.Var(name)


def add(a, b):
    if isinstance(b, int):
        if b == 0:
            return a
        b = c(b)
    return ir.BinOp("+", a, b)


def mul(a, b):
    if isinstance(b, int):
        if b == 1:
            return a
        b = c(b)
    return ir.BinOp("*", a, b)


def sl(start, length: int) -> ir.Slice:
    start = c(start) if isinstance(start, int) else start
    stop = c(start.value + length) if isinstance(start, ir.Const) else add(start, length)
    return ir.Slice(start, stop)


def ref(name: str, *index) -> ir.Ref:
    return ir.Ref(name, tuple(c(i) if isinstance(i, int) else i for i in index))


def alloc(name: str, dtype: ir.DType, shape, level: str) -> ir.Alloc:
    return ir.Alloc(name, ir.TensorType(dtype, tuple(shape)), ir.Level(level))


def move(kind: str, dst: ir.Ref, src: ir.Ref, mask: bool = False) -> ir.Move:
    return ir.Move(kind, dst, src, mask=mask)
