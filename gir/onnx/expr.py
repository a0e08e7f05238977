"""Small constructors for GIR expressions, so that lowerings read like the formulas they implement."""
from __future__ import annotations

from gir import ir


def f(value: float) -> ir.Const:
    return ir.Const(float(value))


def add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp("+", a, b)


def sub(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp("-", a, b)


def mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp("*", a, b)


def div(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp("/", a, b)


def cmp(op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp(op, a, b)


def neg(a: ir.Expr) -> ir.Expr:
    return ir.UnOp("-", a)


def call(fn: str, *args: ir.Expr) -> ir.Expr:
    return ir.Call(fn, tuple(args))


def select(c: ir.Expr, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Call("select", (c, a, b))


def maximum(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Call("max", (a, b))


def minimum(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Call("min", (a, b))
