"""`__bang_fusion`: values (two separate float32 roundings, not a fused multiply-add), forms, cost, rejections."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mlu_testutil import expect_error, rand
from gir.targets.mlu import MLU370, ShapeOnly, parse_program, simulate

N = 256
KERNEL = """
__mlu_global__ void k(T* a, T* b, T* c, T* out) {
  __nram__ T va[256];
  __nram__ T vb[256];
  __nram__ T vc[256];
  __nram__ T vo[256];
  __memcpy(va, a, 256 * sizeof(T), GDRAM2NRAM);
  __memcpy(vb, b, 256 * sizeof(T), GDRAM2NRAM);
  __memcpy(vc, c, 256 * sizeof(T), GDRAM2NRAM);
  CALL
  __memcpy(out, vo, 256 * sizeof(T), NRAM2GDRAM);
}
"""
F32 = np.float32
TWO_OPS = {   # op -> the two separately rounded float32 ops
    "FUSION_FMA": lambda a, b, c: (a * b) + c, "FUSION_FMS": lambda a, b, c: (a * b) - c,
    "FUSION_FAM": lambda a, b, c: (a + b) * c, "FUSION_FSM": lambda a, b, c: (a - b) * c,
}


def run(call: str, a, b, c, ctype="float", values=True):
    text = KERNEL.replace("CALL", call).replace("T*", f"{ctype}*").replace("T ", f"{ctype} ").replace(
        "sizeof(T)", f"sizeof({ctype})")
    args = {"a": a, "b": b, "c": c, "out": np.zeros_like(a) if values else a}
    return simulate(parse_program(text, "fusion.mlu"), "k", args, 1, values=values)


@pytest.fixture
def abc():
    rng = np.random.default_rng(0)
    return [rand(rng, N) for _ in range(3)]


@pytest.mark.parametrize("op", list(TWO_OPS))
def test_vector_forms_equal_two_rounded_ops(op, abc):
    a, b, c = abc
    out = run(f"__bang_fusion({op}, vo, va, vb, vc, 256);", a, b, c).outputs["out"]
    assert np.array_equal(out, TWO_OPS[op](a, b, c))


def test_two_roundings_not_a_fused_fma():
    """c = -round(a*b): two roundings give exactly 0, a fused FMA would give the rounding error of a*b."""
    rng = np.random.default_rng(0)
    a, b = rand(rng, N), rand(rng, N)
    c = -(a * b)
    out = run("__bang_fusion(FUSION_FMA, vo, va, vb, vc, 256);", a, b, c).outputs["out"]
    assert np.all(out == 0)
    fused = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    assert np.count_nonzero(fused) > N // 2   # most products are inexact in float32


def test_half_intermediate_is_float32():
    """16-bit operands: the intermediate stays float32, the result is rounded once to half."""
    rng = np.random.default_rng(0)
    a, b, c = (rand(rng, N).astype(np.float16) for _ in range(3))
    out = run("__bang_fusion(FUSION_FAM, vo, va, vb, vc, 256);", a, b, c, "half").outputs["out"]
    want = ((a.astype(F32) + b.astype(F32)) * c.astype(F32)).astype(np.float16)
    assert np.array_equal(out, want)


def test_bfloat16():
    rng = np.random.default_rng(0)
    a, b, c = (rand(rng, N).astype(ml_dtypes.bfloat16) for _ in range(3))
    out = run("__bang_fusion(FUSION_FMS, vo, va, vb, vc, 256);", a, b, c, "bfloat16_t").outputs["out"]
    want = ((a.astype(F32) * b.astype(F32)) - c.astype(F32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))


def test_scalar_operands_are_rounded_to_the_element_type(abc):
    a, b, c = abc
    out = run("__bang_fusion(FUSION_FMA, vo, va, 0.1, vc, 256);", a, b, c).outputs["out"]
    assert np.array_equal(out, (a * F32(0.1)) + c)
    out = run("__bang_fusion(FUSION_FSM, vo, va, vb, -2.5f, 256);", a, b, c).outputs["out"]
    assert np.array_equal(out, (a - b) * F32(-2.5))
    out = run("__bang_fusion(FUSION_FAM, vo, va, 3, 0.5, 256);", a, b, c).outputs["out"]
    assert np.array_equal(out, (a + F32(3)) * F32(0.5))
    h = [x.astype(np.float16) for x in abc]
    out = run("__bang_fusion(FUSION_FMS, vo, va, vb, 0.1, 256);", *h, "half").outputs["out"]
    want = ((h[0].astype(F32) * h[1].astype(F32)) - F32(np.float16(0.1))).astype(np.float16)
    assert np.array_equal(out, want)


def test_cycled_operands(abc):
    a, b, c = abc
    out = run("__bang_fusion(FUSION_FMA, vo, va, vb, vc + 64, 256, 64);", a, b, c).outputs["out"]
    want = ((a.reshape(-1, 64) * b[:64]) + c[64:128]).ravel()
    assert np.array_equal(out, want)
    out = run("__bang_fusion(FUSION_FSM, vo, va, 2.0f, vc, 256, 32);", a, b, c).outputs["out"]
    assert np.array_equal(out, ((a.reshape(-1, 32) - F32(2)) * c[:32]).ravel())


def test_in_place(abc):
    a, b, c = abc
    out = run("__bang_fusion(FUSION_FMA, va, va, vb, va, 256); __bang_mul_scalar(vo, va, 1.0f, 256);",
              a, b, c).outputs["out"]
    assert np.array_equal(out, (a * b) + a)


@pytest.mark.parametrize("n", [256, 4096])
def test_costs_one_simple_op(n):
    """One fusion = one simple-class op: vector_op_cycles + units x cycles_simple, half of a mul plus an add."""
    text = """
__mlu_global__ void k(float* x) {
  __nram__ float a[NN];
  __nram__ float b[NN];
  BODY
}"""
    def busy(body):
        prog = parse_program(text.replace("NN", str(n)).replace("BODY", body))
        return simulate(prog, "k", {"x": ShapeOnly((4,), F32)}, 1, values=False).pipe_busy["compute"]
    units = n * 4 / MLU370.vector_unit_bytes
    fused = busy(f"__bang_fusion(FUSION_FMA, a, a, b, 1.5f, {n});")
    assert fused == pytest.approx(MLU370.vector_op_cycles + units * MLU370.cycles_simple)
    assert fused == busy(f"__bang_add(a, a, b, {n});")
    assert 2 * fused == busy(f"__bang_mul(a, a, b, {n}); __bang_add_scalar(a, a, 1.5f, {n});")


def test_timing_only_mode(abc):
    a = ShapeOnly((N,), F32)
    res = run("__bang_fusion(FUSION_FMS, vo, va, vb, vc, 256);", a, a, a, values=False)
    assert res.outputs == {} and res.cycles > 0


HEAD = """
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __nram__ float b[256];
  __nram__ int iv[256];
  __nram__ half h[256];
"""


@pytest.mark.parametrize("line, message", [
    ("__bang_fusion(FUSION_FOO, a, a, b, b, 256);", "argument 1 must be a fusion operation, one of FUSION_FMA"),
    ("__bang_fusion(1, a, a, b, b, 256);", "argument 1 must be a fusion operation"),
    ("__bang_fusion(FUSION_FMA, a, a, b, 256);", "takes 6 or 7 arguments, got 5"),
    ("__bang_fusion(FUSION_FMA, a, a, b, b, 256, 64, 1);", "takes 6 or 7 arguments, got 8"),
    ("__bang_fusion(FUSION_FMA, 1.0f, a, b, b, 256);", "argument 2 must be a pointer"),
    ("__bang_fusion(FUSION_FMA, a, 2, b, b, 256);", "argument 3 must be a pointer"),
    ("__bang_fusion(FUSION_FMA, a, a, b, b, 2.5f);", "argument 6 must be an int"),
    ("__bang_fusion(FUSION_FMA, iv, iv, iv, iv, 256);", "not supported for int operands"),
    ("__bang_fusion(FUSION_FMA, a, a, h, b, 256);", "operands have different element types"),
    ("__bang_fusion(FUSION_FMA, a, a, b, b, 256, 96);", "n=256 is not a multiple of m=96"),
    ("__bang_fusion(FUSION_FMA, a, a, 1.0f, 2.0f, 256, 64);", "m is given but src1 and src2 are both scalars"),
    ("__bang_fusion(FUSION_FMA, a, a, b, b, 256, 16);", "operand 'src1' spans 64 bytes"),
    ("__bang_fusion(FUSION_FMA, a, a, b, b, 16);", "not a multiple of the 128-byte vector unit"),
    ("__bang_fusion(FUSION_FMA, a, a + 1, b, b, 32);", "operand 'src0' (a + 4 bytes) is not 128-byte aligned"),
    ("__bang_fusion(FUSION_FMA, a, a, b + 64, b, 256);", "out of bounds"),
    ("int f = FUSION_FMA;", "'FUSION_FMA' can only be the first argument of __bang_fusion"),
    ("int FUSION_FMS = 2;", "'FUSION_FMS' is a built-in name and cannot be redeclared"),
])
def test_rejected(line, message):
    expect_error(HEAD + f"  {line}   // expected-error {{{{{message}}}}}\n}}", args={"x": np.zeros(4, F32)})
