"""`parse(print(ir)) == ir` and canonical printing, for the samples and for random IR (hypothesis)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from gir import ir
from gir.parser import parse_file, parse_text
from gir.printer import format_expr, print_module

from . import strategies as S

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(ROOT.glob("samples/*.gir")) + sorted(ROOT.glob("samples/explicit/*.gir"))
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BIG = settings(FAST, max_examples=60)  # whole modules/kernels: fewer, larger examples


def roundtrip(m: ir.Module) -> None:
    text = print_module(m)
    again = parse_text(text)
    assert again == m, text
    assert print_module(again) == text  # canonical: printing is idempotent


def test_samples_exist():
    assert len(SAMPLES) >= 10 and any("explicit" in str(p) for p in SAMPLES)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_sample_roundtrip(path):
    roundtrip(parse_file(path))


def _wrap(e: ir.Expr) -> ir.Module:
    return ir.Module((ir.Func("f", (), (), (ir.Assign(ir.Ref("y", ()), e),)),))


@FAST
@given(S.exprs)
def test_expr_roundtrip(e):
    roundtrip(_wrap(e))


@BIG
@given(S.modules)
def test_module_roundtrip(m):
    roundtrip(m)


@BIG
@given(S.kernels)
def test_kernel_roundtrip(k):
    roundtrip(ir.Module((ir.Func("f", (), (), (k,)),)))


@pytest.mark.parametrize("expr, text", [
    (ir.Const(-1.0), "-1.0"),
    (ir.UnOp("-", ir.Const(1.0)), "-(1.0)"),
    (ir.UnOp("-", ir.Const(-1.0)), "-(-1.0)"),
    (ir.Const(float("-inf")), "-inf"),
    (ir.BinOp("-", ir.Var("a"), ir.BinOp("-", ir.Var("b"), ir.Var("c"))), "a - (b - c)"),
    (ir.BinOp("-", ir.BinOp("-", ir.Var("a"), ir.Var("b")), ir.Var("c")), "a - b - c"),
    (ir.BinOp("<", ir.BinOp("<", ir.Var("a"), ir.Var("b")), ir.Var("c")), "(a < b) < c"),
    (ir.UnOp("not", ir.BinOp("and", ir.Var("a"), ir.Var("b"))), "not (a and b)"),
    (ir.BinOp("*", ir.UnOp("-", ir.Var("a")), ir.Const(-2)), "-a * -2"),
    (ir.Reduce("sum", ir.Var("a"), (0, 2)), "sum(a, axis=[0, 2])"),
])
def test_expr_text(expr, text):
    """Corner cases of the printer, and that they parse back to the same tree."""
    assert format_expr(expr) == text
    assert parse_text(f"func f() -> () {{\n  y[] = {text}\n}}\n").funcs[0].body[0].value == expr


def test_negative_literal_vs_negation():
    a = parse_text("func f() -> () {\n  y[] = -1.0\n  z[] = - 1.0\n  w[] = -(1.0)\n}\n").funcs[0].body
    assert a[0].value == ir.Const(-1.0)
    assert a[1].value == ir.UnOp("-", ir.Const(1.0)) == a[2].value
