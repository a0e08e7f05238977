"""Every complete program in docs/gir.md parses, verifies and round-trips; the documented dtype rules hold."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate
from gir.parser import parse_text
from gir.printer import print_module
from gir.shapes import func_info
from gir.verifier import verify_module

DOC = Path(__file__).resolve().parents[2] / "docs" / "gir.md"
BLOCKS = [b for b in re.findall(r"```\n(.*?)```", DOC.read_text(), re.S) if b.lstrip().startswith(("#", "func"))
          and "func " in b and "..." not in b]


def test_doc_has_programs():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=range(len(BLOCKS)))
def test_doc_program_verifies(block):
    m = parse_text(block, "docs/gir.md")
    verify_module(m)
    assert parse_text(print_module(m)) == m


def test_doc_reduction_examples():
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    src = ("func f(x: f32[M, N]) -> (a: f32[M], b: f32[M], c: f32[], d: f32[M]) {\n"
           "  a[i] = sum(x[i, j] * max(x[i, k]))\n  b[i] = sum(x[i, j]) + max(x[i, j])\n"
           "  c[] = max(sum(x[i, j]) * x[i, 0])\n  d[i] = log(sum(exp(x[i, j] - b[i])))\n}\n")
    out = evaluate(parse_text(src).funcs[0], {"x": x})
    x = x.astype(np.float64)
    np.testing.assert_allclose(out["a"], x.sum(1) * x.max(1), rtol=1e-5)
    np.testing.assert_allclose(out["b"], x.sum(1) + x.max(1), rtol=1e-5)
    np.testing.assert_allclose(out["c"], (x.sum(1) * x[:, 0]).max(), rtol=1e-5)
    b = x.sum(1) + x.max(1)
    np.testing.assert_allclose(out["d"], np.log(np.exp(x - b[:, None]).sum(1)), rtol=1e-5)


def test_doc_intermediate_types():
    src = ("func f(h: f16[N], k: i64[N], m: bool[N]) -> (y: f32[N]) {\n  t[i] = h[i] * 2.0\n  u[i] = k[i] + 1\n"
           "  v[i] = i32(h[i])\n  w[i] = m[i] == (h[i] > 0.0)\n  y[i] = t[i]\n}\n")
    types = func_info(parse_text(src).funcs[0]).types
    assert [types[n].dtype for n in "tuvw"] == [ir.DType.f32, ir.DType.i64, ir.DType.i32, ir.DType.bool]
