"""The `__bang_fusion` peephole of the MLU emitter (codegen/mlu/fuse.py): where it merges, where it must not, and
that merging never changes a value (fused and unfused programs give bit-identical outputs)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import gir.codegen.mlu as cm
from gir.codegen.mlu.emit import emit_func as real_emit
from gir.codegen import ast as C
from gir.codegen.mlu.fuse import fuse_stmts
from gir.codegen.mlu.printer import MluPrinter
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from gir.targets.mlu import parse_program, simulate
from gir.targets.mlu import syntax as S
from gir.targets.mlu.run import run_func

TYPES = {"t": "float", "u": "float", "a": "float", "b": "float", "g": "float", "y": "float", "iv": "int"}


def _expr(e) -> C.CExpr:
    """A parsed kernel-language expression (targets/mlu/syntax.py) as the emitter's AST (codegen/ast.py)."""
    if isinstance(e, S.IntLit):
        return C.Num(e.value)
    if isinstance(e, S.FloatLit):
        return C.Num(e.value, "f")
    if isinstance(e, S.Name):
        return C.Id(e.name)
    if isinstance(e, S.Index):
        return C.Index(e.name, _expr(e.index))
    if isinstance(e, S.Unary):
        return C.Un(e.op, _expr(e.operand))
    if isinstance(e, S.Binary):
        return C.Bin(e.op, _expr(e.left), _expr(e.right))
    if isinstance(e, S.Call):
        return C.Call(e.name, tuple(_expr(a) for a in e.args))
    raise TypeError(e)


def _stmt(text: str):
    m = re.fullmatch(r"__(\w+)\((.*)\);", text)
    assert m, text
    call = parse_program(f"__mlu_global__ void k_(float* p_) {{ {text} }}").kernels["k_"].body.stmts[0].call
    return C.Eval(C.Intrinsic(m.group(1), tuple(_expr(a) for a in call.args)))


def _ast(lines: list[str]) -> tuple:
    """The kernel AST of C-like test lines: MLU instructions, per-row one-line loops, `for` blocks, other lines."""
    stack: list[list] = [[]]
    heads = []
    for line in lines:
        text = line.strip()
        m = re.fullmatch(r"for \(int (\w+) = (\d+); \1 < (\d+); \1\+\+\) \{ (.*) \}", text)
        if m:
            stack[-1].append(C.For(m.group(1), C.Num(int(m.group(2))), C.Num(int(m.group(3))), (_stmt(m.group(4)),),
                                   inline=True))
        elif (m := re.fullmatch(r"for \(int (\w+) = (\d+); \1 < (\d+); \1\+\+\) \{", text)):
            heads.append(m)
            stack.append([])
        elif text == "}":
            m, body = heads.pop(), stack.pop()
            stack[-1].append(C.For(m.group(1), C.Num(int(m.group(2))), C.Num(int(m.group(3))), tuple(body)))
        else:
            stack[-1].append(_stmt(text))
    return tuple(stack[0])


def _print(stmts) -> list[str]:
    return MluPrinter().block(stmts, 0)


def fuse_lines(lines: list[str], types: dict, sizes: dict | None = None) -> tuple[list[str], int]:
    """The peephole on the AST of `lines` (`sizes`: declared element counts), printed back."""
    out, n = fuse_stmts(_ast(lines), types, MluPrinter(), sizes)
    return _print(out), n


def same(lines: list[str]) -> list[str]:
    """`lines` as the printer spells them (unmerged)."""
    return _print(_ast(lines))


def fuse(*lines: str) -> list[str]:
    out, _ = fuse_lines(list(lines), TYPES)
    return [x.strip() for x in out]


def test_mul_add_into_fma():
    assert fuse("__bang_mul(t, a, b, 256);", "__bang_add(y, t, g, 256);", "__bang_write_value(t, 256, 0.0f);") == [
        "__bang_fusion(FUSION_FMA, y, a, b, g, 256);", "__bang_write_value(t, 256, 0.0f);"]
    assert fuse("__bang_mul_scalar(t, a, 0.5f, 256);", "__bang_add(t, g, t, 256);") == [
        "__bang_fusion(FUSION_FMA, t, a, 0.5f, g, 256);"]


def test_sub_forms():
    assert fuse("__bang_mul(t, a, b, 256);", "__bang_sub_scalar(t, t, 1.0f, 256);") == [
        "__bang_fusion(FUSION_FMS, t, a, b, 1.0f, 256);"]
    assert fuse("__bang_mul_scalar(t, a, 2.0f, 256);", "__bang_sub(t, g, t, 256);") == [   # g - 2a = a*(-2) + g
        "__bang_fusion(FUSION_FMA, t, a, -2.0f, g, 256);"]
    kept = ["__bang_mul(t, a, b, 256);", "__bang_sub(t, g, t, 256);"]                        # g - a*b: no form
    assert fuse(*kept) == kept


def test_add_mul_into_fam_fsm():
    assert fuse("__bang_add_scalar(t, a, 1.0f, 256);", "__bang_mul(t, b, t, 256);") == [
        "__bang_fusion(FUSION_FAM, t, a, 1.0f, b, 256);"]
    assert fuse("__bang_cycle_sub(t, a, g, 256, 64);", "__bang_cycle_mul(t, t, b, 256, 64);") == [
        "__bang_fusion(FUSION_FSM, t, a, g, b, 256, 64);"]


def test_cycle_lengths_must_agree():
    kept = ["__bang_mul(t, a, b, 256);", "__bang_cycle_add(t, t, g, 256, 64);"]
    assert fuse(*kept) == kept
    kept = ["__bang_cycle_mul(t, a, b, 256, 32);", "__bang_cycle_add(t, t, g, 256, 64);"]
    assert fuse(*kept) == kept
    assert fuse("__bang_cycle_mul(t, a, b, 256, 64);", "__bang_add_scalar(t, t, 1.0f, 256);") == [
        "__bang_fusion(FUSION_FMA, t, a, b, 1.0f, 256, 64);"]


@pytest.mark.parametrize("lines", [
    ["__bang_mul(t, a, b, 256);", "__bang_add(y, t, g, 256);", "__bang_add(u, t, g, 256);"],   # t read later
    ["__bang_mul(t, a, b, 256);", "__bang_write_value(a, 256, 1.0f);", "__bang_add(t, t, g, 256);"],  # input changed
    ["__bang_mul(t, a, b, 256);", "__bang_add(y, t, g, 128);"],                                 # other length
    ["__bang_mul(t, a, b, 256);", "__bang_add(y, t, t, 256);"],                                 # t twice
    ["__bang_mul(iv, iv, iv, 256);", "__bang_add(iv, iv, iv, 256);"],                           # int
    ["__bang_mul(t, a, b, 256);", "__bang_add(t + 64, t, g, 128);"],
    ["__bang_mul(t, a, b, 256);", "__bang_add(a, t, a + 32, 224);"],
    ["__bang_mul(t, a, b, 128);", "__bang_add(y, t, t + 64, 128);"],                           # reads t's buffer
    ["__bang_add(t, a, b, 256);", "__bang_mul(y, t, g, 256);", "__bang_write_value(t + 32, 32, 0.0f);"],  # partial
])
def test_not_merged(lines):
    assert fuse(*lines) == lines


def test_liveness_outside_the_run():
    run = ["  __bang_mul(t, a, b, 256);", "  __bang_add(y, t, g, 256);"]
    stored = ["for (int i = 0; i < 4; i++) {", *run, "  __memcpy(x, t, 1024, NRAM2GDRAM);", "}"]
    assert fuse_lines(stored, TYPES) == (same(stored), 0)
    # around the loop: the run reads t before writing it, so the next iteration would see the product
    wrap = ["for (int i = 0; i < 4; i++) {", "  __bang_add(u, t, g, 256);", *run, "}"]
    assert fuse_lines(wrap, TYPES)[1] == 0
    # the run overwrites t before reading it: the product is dead
    dead = ["for (int i = 0; i < 4; i++) {", "  __bang_write_value(t, 256, 0.0f);", *run, "}"]
    assert fuse_lines(dead, TYPES)[1] == 1
    # a per-row line that writes all of t counts as an overwrite
    rows = ["for (int i = 0; i < 4; i++) {",
            "  for (int r_ = 0; r_ < 4; r_++) { __bang_sub_scalar(t + r_ * 64, a + r_ * 64, b[r_], 64); }", *run, "}"]
    assert fuse_lines(rows, TYPES)[1] == 1
    partial = rows[:1] + [rows[1].replace("r_ < 4", "r_ < 3")] + rows[2:]
    assert fuse_lines(partial, TYPES)[1] == 0


SIZES = {"t": 256, "u": 256, "a": 256, "b": 256, "g": 64, "y": 256}


def test_liveness_across_runs():
    """A temporary several runs compute in (a loop's tiles and its tail): the product is dead after its run when
    every other run overwrites the whole buffer before reading it, and nothing but runs mention it."""
    run = ["for (int i = 0; i < 4; i++) {", "  __bang_mul(t, a, b, 256);", "  __bang_add(y, t, g, 256);", "}"]
    tail = ["__bang_mul(t, b, b, 256);", "__bang_add(u, t, g, 256);"]
    assert fuse_lines(run + tail, TYPES, SIZES)[1] == 2
    assert fuse_lines(run + tail, TYPES)[1] == 0                     # whole buffer unknown: refused
    reads = ["__bang_add(u, t, g, 256);"] + tail                      # the tail reads the loop's last product
    assert fuse_lines(run + reads, TYPES, SIZES)[0][1:3] == same(run)[1:3]
    part = ["__bang_mul(t, b, b, 128);", "__bang_add(u, t, g, 256);"]  # half of t written, all of it read
    assert fuse_lines(run + part, TYPES, SIZES)[1] == 0
    moved = run + ["__memcpy(x, t, 1024, NRAM2GDRAM);"] + tail        # a DMA reads t
    assert fuse_lines(moved, TYPES, SIZES)[0][1:3] == same(run)[1:3]


_FORMS = ["__bang_mul({d}, {x}, {y}, 256);", "__bang_add({d}, {x}, {y}, 256);", "__bang_sub({d}, {x}, {y}, 256);",
          "__bang_mul_scalar({d}, {x}, {s}, 256);", "__bang_add_scalar({d}, {x}, {s}, 256);",
          "__bang_sub_scalar({d}, {x}, {s}, 256);", "__bang_cycle_mul({d}, {x}, g, 256, 64);",
          "__bang_cycle_add({d}, {x}, g, 256, 64);", "__bang_active_abs({d}, {x}, 256);"]
_DECLS = """
__mlu_global__ void k(float* x, float* out) {
  __nram__ float a[256];
  __nram__ float b[256];
  __nram__ float t[256];
  __nram__ float u[256];
  __nram__ float g[64];
"""
_BODY = """  __memcpy(a, x, 1024, GDRAM2NRAM);
  __memcpy(b, x + 256, 1024, GDRAM2NRAM);
  __memcpy(t, x + 512, 1024, GDRAM2NRAM);
  __memcpy(u, x + 768, 1024, GDRAM2NRAM);
  __memcpy(g, x + 1024, 256, GDRAM2NRAM);
  for (int i = 0; i < 2; i++) {
BODY
  }
  __memcpy(out, a, 1024, NRAM2GDRAM);
  __memcpy(out + 256, b, 1024, NRAM2GDRAM);
}
"""


def test_random_programs_keep_their_values():
    """Random op sequences over four buffers in a loop (a, b live out, t, u temporaries): every merge the peephole
    makes leaves the outputs bit-identical."""
    rng = np.random.default_rng(7)
    merged = 0
    for _ in range(40):
        body = _BODY.replace("BODY", "\n".join(_random_ops(rng, 4, 10))).splitlines()   # the whole body, as
        fused, n = fuse_lines(body[:-1], TYPES)                                         # emit.py passes it
        fused.append("}")
        merged += n
        _same_outputs(body, fused)
    assert merged >= 10   # the generator does exercise merges


def _random_ops(rng, least: int, most: int) -> list[str]:
    """Lines of random vector ops over the four buffers."""
    lines = []
    for _ in range(int(rng.integers(least, most))):
        d, x, y = (str(rng.choice(["a", "b", "t", "u"])) for _ in range(3))
        s = f"{rng.choice([0.5, -1.25, 3.0])}f"
        lines.append("    " + str(rng.choice(_FORMS)).format(d=d, x=x, y=y, s=s))
    return lines


def _same_outputs(body: list[str], fused: list[str]) -> None:
    """The kernel body before and after the peephole give bit-identical outputs on the simulator."""
    data = np.random.default_rng(0).uniform(-2, 2, 1088).astype(np.float32)
    outs = []
    for text in (body, fused):
        prog = parse_program(_DECLS + "\n".join(text))
        outs.append(simulate(prog, "k", {"x": data, "out": np.zeros(512, np.float32)}, 1).outputs["out"])
    assert np.array_equal(outs[0], outs[1], equal_nan=True), "\n".join(body + ["->"] + fused)


def test_random_runs_sharing_temporaries_keep_their_values():
    """Random op sequences in three loops (three runs over the same buffers), fused with the
    declared sizes: every merge across the runs' shared temporaries leaves the outputs bit-identical."""
    rng = np.random.default_rng(11)
    merged = across = 0
    for _ in range(80):
        parts = []
        for _ in range(3):
            lines = _random_ops(rng, 2, 6)
            if rng.random() < 0.3:   # the run reads a temporary first: the product of a run before must survive
                lines.insert(0, f"    __bang_add(a, a, {rng.choice(['t', 'u'])}, 256);")
            elif rng.random() < 0.6:   # the run starts by overwriting a temporary (what makes sharing safe)
                lines.insert(0, "    " + _FORMS[int(rng.integers(0, 6))].format(d=str(rng.choice(["t", "u"])),
                                                                            x="a", y="b", s="2.0f"))
            parts.append(lines)
        body = _BODY.replace("BODY", "\n".join(parts[0] + ["  }", "  for (int j = 0; j < 2; j++) {"] + parts[1] +
                                               ["  }", "  for (int k = 0; k < 1; k++) {"] + parts[2])).splitlines()
        body = [x for x in body if "__memcpy(t" not in x and "__memcpy(u" not in x]   # temporaries: runs only
        at = body.index("  for (int i = 0; i < 2; i++) {")
        body[at:at] = ["  __bang_write_value(t, 256, 0.75f);", "  __bang_write_value(u, 256, -0.5f);"]
        fused, n = fuse_lines(body[:-1], TYPES, SIZES)
        fused.append("}")
        merged += n
        across += n - fuse_lines(body[:-1], TYPES)[1]   # (without sizes: only merges inside one run)
        _same_outputs(body, fused)
    assert merged >= 20 and across >= 4, (merged, across)   # (seeded: 80 programs)


def _run(f, x, sizes, fuse_on, monkeypatch):
    monkeypatch.setattr(cm, "emit_func", lambda fn, pipeline=True: real_emit(fn, pipeline=pipeline, fuse=fuse_on))
    return run_func(f, x, sizes)


@pytest.mark.parametrize("name, expected", [
    # (4-row tiles of 256: 1,024 elements; the row recipe's heights are ranked by the cost model, recipes.py)
    ("elementwise_chain", ["FUSION_FMA, b1 + it_ % 2 * 1024, x_t + it_ % 2 * 1024, a_t, bias_t, 1024, 256",
                           "FUSION_FMS"]),
    ("layernorm", ["FUSION_FMA, x_t + it_ % 3 * 2048, x_t + it_ % 3 * 2048, gamma_t, beta_t, 2048, 256"]),
    ("bias_gelu_tanh", ["FUSION_FMA"]),
])
def test_samples_use_fusion_and_keep_their_values(name, expected, monkeypatch):
    sizes = {"M": 256, "N": 256}
    f = parse_file(f"samples/{name}.gir").funcs[0]
    x = random_inputs(f, sizes, np.random.default_rng(0))
    fused, plain = (_run(f, x, sizes, on, monkeypatch) for on in (True, False))
    for text in expected:
        assert f"__bang_fusion({text}" in fused.source
    assert "__bang_fusion" not in plain.source
    ref = evaluate(f, x, sizes)
    for k, want in ref.items():
        np.testing.assert_allclose(fused.outputs[k], want, rtol=2e-5, atol=2e-6)
        assert np.array_equal(fused.outputs[k], plain.outputs[k])
