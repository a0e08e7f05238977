"""Software pipelining only where it keeps the loop's meaning (passes/schedule_mlu/swpipe.py `safe`), and the
other findings of the review of the pipelining pass: each kernel below gives the same values pipelined or not."""
from __future__ import annotations

import numpy as np
import pytest

from gir.parser import parse_text
from gir.passes.schedule_mlu.swpipe import pipeline_func
from gir.printer import print_module
from gir import ir
from gir.targets.mlu.run import run_func

HEAD = "func f(x: f32[40, 64]) -> (y: f32[40, 64]) {\n  kernel k with task_dim=1 {\n    parallel t in 0..1 @core {\n"
TAIL = "    }\n  }\n}\n"
CASES = {
    # b carries a running sum from one iteration into the next: its slots would split it
    "carried": """      alloc a: f32[8, 64] @nram
      alloc b: f32[8, 64] @nram
      b[0:8, 0:64] = 0.0
      for r in 0..5 {
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        b[0:8, 0:64] = b[0:8, 0:64] + a[0:8, 0:64]
        store y[r * 8:r * 8 + 8, 0:64] <- b[0:8, 0:64]
      }
""",
    # a is read after the loop: its last value would sit in slot (T - 1) % 2
    "live_out": """      alloc a: f32[8, 64] @nram
      alloc b: f32[8, 64] @nram
      for r in 0..5 {
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        b[0:8, 0:64] = a[0:8, 0:64] * 2.0
        store y[r * 8:r * 8 + 8, 0:64] <- b[0:8, 0:64]
      }
      store y[0:8, 0:64] <- a[0:8, 0:64]
""",
    # y is loaded and stored by the same loop: the load of iteration r + 1 would run before the store of r
    "gdram_raw": """      alloc a: f32[8, 64] @nram
      store y[0:40, 0:64] <- x[0:40, 0:64]
      for r in 0..4 {
        load a[0:8, 0:64] <- y[r * 8:r * 8 + 8, 0:64]
        a[0:8, 0:64] = a[0:8, 0:64] + 1.0
        store y[r * 8 + 8:r * 8 + 16, 0:64] <- a[0:8, 0:64]
      }
""",
    # a tile the user already slotted is not slotted again
    "preslotted": """      alloc a: f32[2, 8, 64] @nram with slots=2
      for r in 0..5 {
        load a[0, 0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        a[0, 0:8, 0:64] = a[0, 0:8, 0:64] * 2.0
        store y[r * 8:r * 8 + 8, 0:64] <- a[0, 0:8, 0:64]
      }
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unsafe_loops_keep_their_values(name):
    f = parse_text(HEAD + CASES[name] + TAIL).funcs[0]
    x = np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32)
    sync = run_func(f, {"x": x}, pipeline=False).outputs["y"]
    piped = run_func(f, {"x": x}).outputs["y"]
    np.testing.assert_array_equal(sync, piped)
    assert "with async" not in print_module(ir.Module((pipeline_func(f),)))


def test_a_stored_tile_the_loop_does_not_write_takes_no_slots():
    text = HEAD.replace("y: f32[40, 64]", "y: f32[40, 64], z: f32[8, 64]") + """      alloc a: f32[8, 64] @nram
      alloc c: f32[8, 64] @nram
      c[0:8, 0:64] = 3.0
      for r in 0..5 {
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        a[0:8, 0:64] = a[0:8, 0:64] * 2.0
        store y[r * 8:r * 8 + 8, 0:64] <- a[0:8, 0:64]
        store z[0:8, 0:64] <- c[0:8, 0:64]
      }
""" + TAIL
    f = parse_text(text).funcs[0]
    p = print_module(ir.Module((pipeline_func(f),)))
    assert "alloc c: f32[8, 64] @nram\n" in p and "with async" in p
    x = np.random.default_rng(1).standard_normal((40, 64)).astype(np.float32)
    out = run_func(f, {"x": x}).outputs
    np.testing.assert_array_equal(out["y"], x * 2)
    np.testing.assert_array_equal(out["z"], np.full((8, 64), 3.0, np.float32))


@pytest.mark.parametrize("cond, py", [("(r - 3) % 2 == 1", lambda r: (r - 3) % 2 == 1),
                                      ("(r - 3) // 2 < -1", lambda r: (r - 3) // 2 < -1)])
def test_if_conditions_floor_as_python(cond, py):
    text = HEAD.replace("40", "32") + f"""      alloc a: f32[8, 64] @nram
      for r in 0..4 {{
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        if {cond} {{
          a[0:8, 0:64] = a[0:8, 0:64] * 2.0
        }}
        store y[r * 8:r * 8 + 8, 0:64] <- a[0:8, 0:64]
      }}
""" + TAIL
    f = parse_text(text).funcs[0]
    y = run_func(f, {"x": np.ones((32, 64), np.float32)}).outputs["y"]
    assert [float(y[r * 8, 0]) for r in range(4)] == [2.0 if py(r) else 1.0 for r in range(4)]


def test_quasi_affine_slices_compile_for_the_gpu():
    from gir.codegen import emit_func
    from gir.targets.sim import run_func as sim_run
    text = """func g(x: f32[64]) -> (y: f32[64]) {
  kernel k {
    parallel b in 0..16 @block {
      alloc s: f32[4] @shared
      load s[0:4] <- x[(b // 1) * 4:(b // 1) * 4 + 4]
      store y[(b // 1) * 4:(b // 1) * 4 + 4] <- s[0:4]
    }
  }
}
"""
    f = parse_text(text).funcs[0]
    assert emit_func(f, "cuda", {})
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(sim_run(f, {"x": x}, {}).outputs["y"], x)


def test_select_with_zero_keeps_nan_and_inf_out():
    """`select(c, a, 0.0)` was `c * a` on the MLU: an infinite or NaN `a` where c is false gave NaN."""
    f = parse_text("func g(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = select(x[i, j] > 0.0, 1.0 / x[i, j] - 1.0 / x[i, j], 0.0)\n}").funcs[0]
    x = np.random.default_rng(2).standard_normal((37, 67)).astype(np.float32)
    x[::3, ::5] = 0.0   # 1 / 0 - 1 / 0 is NaN where the condition is false
    y = run_func(f, {"x": x}).outputs["y"]
    assert not np.isnan(y[x <= 0]).any() and (y[x <= 0] == 0).all()


def test_loop_variant_operands_are_not_hoisted():
    from gir.passes.schedule_mlu.vecprep import prepare_kernels
    text = HEAD.replace("(x: f32[40, 64])", "(x: f32[40, 64], c: f32[320])") + """      alloc a: f32[8, 64] @nram
      alloc cc: f32[64] @nram
      for r in 0..5 {
        load a[0:8, 0:64] <- x[r * 8:r * 8 + 8, 0:64]
        load cc[0:64] <- c[r * 64:r * 64 + 64]
        a[0:8, 0:64] = a[0:8, 0:64] > 0.0
        a[0:8, 0:64] = select(a[0:8, 0:64], cc[0:64], 2.0)
        store y[r * 8:r * 8 + 8, 0:64] <- a[0:8, 0:64]
      }
""" + TAIL
    f = parse_text(text).funcs[0]
    (k,) = prepare_kernels(list(f.body), 768 * 1024)
    g = ir.Func(f.name, f.params, f.results, (k,))
    printed = print_module(ir.Module((g,)))
    assert "cc[0:64], bc0_" in printed            # cc is loaded in the loop: not hoisted; the constant is
    x = np.random.default_rng(3).standard_normal((40, 64)).astype(np.float32)
    c = np.random.default_rng(4).standard_normal(320).astype(np.float32)
    want = np.where(x > 0, c.reshape(5, 1, 64).repeat(8, 1).reshape(40, 64), 2.0).astype(np.float32)
    np.testing.assert_array_equal(run_func(g, {"x": x, "c": c}).outputs["y"], want)
