"""Programs the simulator must reject, each with its error annotated on the offending line."""
from __future__ import annotations

import numpy as np
import pytest

from mlu_testutil import expect_error
from gir.targets.mlu import MluError, parse_program, simulate

X = np.arange(1, 257, dtype=np.float32)


def test_parse_error_has_line_col_and_caret():
    text = "__mlu_global__ void k(float* x) {\n  int a = 3\n  int b = 4;\n}\n"
    with pytest.raises(MluError) as info:
        parse_program(text, filename="bad.mlu")
    rendered = str(info.value)
    assert rendered.startswith("bad.mlu:3:3: error: unexpected 'int'")
    assert "  int b = 4;\n    ^" in rendered
    assert (info.value.span.line, info.value.span.col) == (3, 3)


def test_unexpected_character():
    with pytest.raises(MluError, match=r"k.mlu:1:34: error: unexpected character '@'"):
        parse_program("__mlu_global__ void k(float* x) {@}", filename="k.mlu")


def test_nram_overflow():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[131072];
  __nram__ float b[65600];   // expected-error {{NRAM overflow}}
  __memcpy(a, x, 4, GDRAM2NRAM);
}""", args=dict(x=X))


def test_sram_overflow():
    expect_error("""
__mlu_global__ void k(float* x) {
  __mlu_shared__ half s[2 * 1024 * 1024 + 64];   // expected-error {{SRAM overflow}}
}""", args=dict(x=X))


def test_misaligned_vector_operand():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __memcpy(a, x, 1024, GDRAM2NRAM);
  __bang_add(a, a + 1, a, 64);   // expected-error {{operand 'a' (a + 4 bytes) is not 128-byte aligned}}
}""", args=dict(x=X))


def test_vector_length_not_whole_units():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[256];
  __memcpy(a, x, 1024, GDRAM2NRAM);
  __bang_active_exp(a, a, 100);   // expected-error {{spans 400 bytes (100 x float), not a multiple}}
}""", args=dict(x=X))


def test_out_of_bounds_gdram_memcpy():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[512];
  __memcpy(a, x + 4, 1024, GDRAM2NRAM);   // expected-error {{source accesses bytes [16, 1040) of GDRAM argument 'x'}}
}""", args=dict(x=X))


def test_out_of_bounds_nram_strided_memcpy():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[128];
  __memcpy(a, x, 64, GDRAM2NRAM, 128, 64, 3);   // 4 segments of 64 bytes, 128 apart: bytes [0, 448)
  __memcpy(a, x, 64, GDRAM2NRAM, 128, 64, 4);   // expected-error {{destination accesses bytes [0, 576) of NRAM buffer 'a'}}
}""", args=dict(x=X))


def test_out_of_bounds_vector_operand():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __nram__ float b[64];
  __bang_write_value(a, 64, 1.0);
  __bang_add(b, a, a + 32, 64);   // expected-error {{out of bounds}}
}""", args=dict(x=X))


def test_wrong_copy_direction():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __memcpy(a, x, 256, NRAM2GDRAM);   // expected-error {{destination must point to GDRAM, but 'a' is in NRAM}}
}""", args=dict(x=X))


def test_reading_async_destination_before_sync_is_a_race():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __memcpy_async(a, x, 256, GDRAM2NRAM);
  __bang_active_exp(a, a, 64);   // expected-error {{race between pipes: __bang_active_exp reads bytes [0, 256)}}
}""", args=dict(x=X))


def test_storing_before_compute_sync_is_a_race():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __bang_write_value(a, 64, 2.0);
  __memcpy_async(x, a, 256, NRAM2GDRAM);   // expected-error {{insert __sync_compute()}}
}""", args=dict(x=X))


def test_scalar_read_of_in_flight_dma_is_a_race():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __memcpy_async(a, x, 256, GDRAM2NRAM);
  float v = a[3];   // expected-error {{race between pipes: scalar read}}
}""", args=dict(x=X))


def test_barrier_under_divergent_condition_deadlocks():
    expect_error("""
__mlu_global__ void k(float* x) {
  if (coreId == 0) {
    __sync_cluster();   // expected-error {{deadlock: task 0 waits at __sync_cluster()}}
  }
}""", args=dict(x=X), task_dim=4)


def test_type_errors_are_located():
    expect_error("""
__mlu_global__ void k(float* x, half* h) {
  __nram__ float a[64];
  __bang_add(a, a, 2, 64);   // expected-error {{argument 3 must be a pointer, got int}}
}""", args=dict(x=X))
    expect_error("""
__mlu_global__ void k(float* x, half* h) {
  float* p = h + 4;   // expected-error {{cannot convert half* to float*}}
}""", args=dict(x=X))
    expect_error("""
__mlu_global__ void k(float* x) {
  __bang_ad(x, x, x, 64);   // expected-error {{did you mean '__bang_add'}}
}""", args=dict(x=X))
    expect_error("""
__mlu_global__ void k(float* x) {
  int y = z + 1;   // expected-error {{use of undeclared name 'z'}}
}""", args=dict(x=X))


def test_mixed_element_types():
    expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __nram__ half b[128];
  __bang_write_value(a, 64, 1.0);
  __bang_write_value(b, 128, 1.0);
  __bang_add(a, a, (float*)b, 64);
  __bang_add(a, a, b, 64);   // expected-error {{different element types (float and half)}}
}""", args=dict(x=X))


def test_int_overflow_and_division_by_zero():
    expect_error("""
__mlu_global__ void k(float* x, int n) {
  int big = n * n;   // expected-error {{overflows int}}
}""", args=dict(x=X, n=1 << 20))
    expect_error("""
__mlu_global__ void k(float* x, int n) {
  int q = 7 / (n - n);   // expected-error {{integer division by zero}}
}""", args=dict(x=X, n=3))


def test_runtime_errors_name_the_task():
    err = expect_error("""
__mlu_global__ void k(float* x) {
  __nram__ float a[64];
  __memcpy(a, x + taskId * 64, 256, GDRAM2NRAM);   // expected-error {{out of bounds}}
}""", args=dict(x=X), task_dim=8)
    assert "in task 4 (cluster 1, core 0)" in str(err)


def test_bad_arguments():
    program = parse_program("__mlu_global__ void k(float* x, int n) { }")
    with pytest.raises(MluError, match="has dtype float64 but the parameter is float"):
        simulate(program, "k", dict(x=np.ones(4), n=1), 1)
    with pytest.raises(MluError, match="missing argument for parameter 'n'"):
        simulate(program, "k", dict(x=X), 1)
    with pytest.raises(MluError, match="no kernel named 'q'"):
        simulate(program, "q", dict(x=X, n=1), 1)
    with pytest.raises(MluError, match="must be at most 4 or a multiple of 4"):
        simulate(program, "k", dict(x=X, n=1), 6)
