"""Impossible shapes: bad --sizes, huge tensors, malformed --inputs files. Each must give a clear
diagnostic (located, or one of the documented command-line messages), never a traceback."""
from __future__ import annotations

import numpy as np
import pytest

from tests.fuzz.harness import invoke

SOFTMAX = "samples/softmax.gir"
EXPLICIT = "samples/explicit/softmax_rows.gir"
HUGE = str(2**40)


@pytest.mark.parametrize("argv, first", [
    (["eval", SOFTMAX, "--sizes", "M=-1,N=3"], "error: size M=-1 must be at least 0"),
    (["eval", SOFTMAX, "--sizes", "M=4"], "error: size N of input 'x' is not given"),
    (["eval", SOFTMAX, "--sizes", "M=4,N"], "error: bad --sizes entry 'N'"),
    (["eval", SOFTMAX, "--sizes", "M=99999999999999999999999,N=2"], "error: size M=99999999999999999999999 is too large"),
    (["run", SOFTMAX], "error: size M of input 'x' is not given"),
    (["eval", "does/not/exist.gir"], "error: cannot read does/not/exist.gir"),
])
def test_command_line_errors(argv, first):
    o = invoke(argv)
    assert o.ok, (o.problems, o.stderr, o.exc)
    usage = "cannot read" not in first  # a missing file is an input error (1); the rest are usage errors (2)
    assert o.status == (2 if usage else 1) and o.stderr.startswith(first), o.stderr


@pytest.mark.parametrize("sizes", ["M=0,N=3", "M=3,N=0", "M=0,N=0"])
def test_zero_sizes_run_and_compile_refuses_located(sizes):
    """A size bound to 0 is an empty dimension: eval and run (every simulator) give empty results and the
    reductions' identities (gir/empty.py); emitting kernels for it is a located error at the empty tensor."""
    for argv in (["eval", SOFTMAX], ["run", SOFTMAX, "--target", "sim"], ["run", SOFTMAX, "--target", "mlu-sim"]):
        o = invoke(argv + ["--sizes", sizes])
        assert o.ok and o.status == 0, (argv, o.problems, o.stderr, o.exc)
    o = invoke(["compile", SOFTMAX, "--target", "cuda", "--sizes", sizes])
    assert o.ok and o.status == 1 and o.stderr.startswith(f"{SOFTMAX}:2:14: error: 'x' has no elements at"), o.stderr


@pytest.mark.parametrize("argv", [
    ["eval", SOFTMAX, "--sizes", f"M={HUGE},N={HUGE}"],
    ["eval", SOFTMAX, "--sizes", "M=1048576,N=1048576"],
    ["run", SOFTMAX, "--sizes", "M=1048576,N=1048576", "--no-races"],
    ["run", SOFTMAX, "--sizes", f"M={HUGE},N=1", "--no-races"],
])
def test_huge_tensors_are_a_located_memory_error(argv):
    o = invoke(argv, timeout=30)
    assert o.ok, (o.problems, o.stderr, o.exc)
    assert o.status == 1
    assert ("would need" in o.stderr and "the limit is 2.00 GiB" in o.stderr  # beyond the memory budget
            or "more than 2^62" in o.stderr), o.stderr                         # beyond any address range
    assert o.stderr.startswith(f"{SOFTMAX}:2:"), o.stderr  # points at the declaration of x/y


def test_huge_explicit():
    o = invoke(["check", EXPLICIT, "--sizes", f"M={HUGE}"], timeout=60)
    assert o.ok and o.status == 1, (o.problems, o.stderr)
    assert "[overflow]" in o.stderr.splitlines()[0]
    o = invoke(["run", EXPLICIT, "--sizes", f"M={HUGE}", "--no-races"], timeout=60)
    assert o.ok and o.status == 1, (o.problems, o.stderr)
    assert o.stderr.startswith(f"{EXPLICIT}:3:") and "would need" in o.stderr, o.stderr


def test_outer_product_result_too_large(tmp_path):
    """Small inputs, huge result: caught before evaluation allocates it."""
    src = tmp_path / "outer.gir"
    src.write_text("func outer(a: f32[M], b: f32[N]) -> (y: f32[M, N]) {\n  y[i, j] = a[i] * b[j]\n}\n")
    npz = tmp_path / "in.npz"
    np.savez(npz, a=np.ones(300_000, np.float32), b=np.ones(300_000, np.float32))
    o = invoke(["eval", str(src), "--inputs", str(npz)], timeout=30)
    assert o.ok and o.status == 1, (o.problems, o.stderr, o.exc)
    assert "would need" in o.stderr and f"{src}:1:" in o.stderr.splitlines()[0]


def _npz(tmp_path, name, **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return str(path)


def test_bad_inputs_files(tmp_path):
    """--inputs arrays are checked as `gir run` checks them (gir.cli.inputs): exactly the declared type and
    shape, no unknown names; the error points at the parameter (or at the function for a name)."""
    rng = np.random.default_rng(1)
    f32 = np.float32
    cases = {
        ("2:1", "b.npz holds 'y', which is not an input of 'softmax' (inputs: x)"):
            _npz(tmp_path, "b.npz", y=rng.standard_normal((3, 4)).astype(f32)),
        ("2:14", "input 'x': expected f32[M, N], got float32[3]"): _npz(tmp_path, "c.npz", x=np.ones(3, f32)),
        ("2:14", "input 'x': expected f32[3, 4], got complex64[3, 4]"):
            _npz(tmp_path, "d.npz", x=np.ones((3, 4), np.complex64)),
        ("2:14", "input 'x': expected f32[1, 2], got <U1[1, 2]"): _npz(tmp_path, "e.npz", x=np.array([["a", "b"]])),
        ("2:14", "input 'x': expected f32[M, 4], got float32[0, 4]"): _npz(tmp_path, "f.npz", x=np.ones((0, 4), f32)),
        ("2:14", "input 'x': expected f32[3, 4], got float64[3, 4]"): _npz(tmp_path, "g.npz", x=np.ones((3, 4))),
    }
    for (where, expected), path in cases.items():
        o = invoke(["eval", SOFTMAX, "--inputs", path])
        assert o.ok and o.status == 1, (expected, o.problems, o.stderr, o.exc)
        assert o.stderr.startswith(f"{SOFTMAX}:{where}: error: {expected.replace('b.npz', path)}"), o.stderr
    npy = tmp_path / "x.npy"
    np.save(npy, rng.standard_normal((3, 4)))
    garbage = tmp_path / "g.npz"
    garbage.write_text("garbage")
    for path in (npy, garbage, tmp_path / "none.npz"):
        o = invoke(["eval", SOFTMAX, "--inputs", str(path)])
        assert o.ok and o.status == 1 and o.stderr.startswith(f"error: cannot read inputs from {path}"), o.stderr


def test_mismatched_sizes_across_inputs(tmp_path):
    src = tmp_path / "add.gir"
    src.write_text("func add(a: f32[N], b: f32[N]) -> (y: f32[N]) {\n  y[i] = a[i] + b[i]\n}\n")
    path = _npz(tmp_path, "ab.npz", a=np.ones(5, np.float32), b=np.ones(7, np.float32))
    o = invoke(["eval", str(src), "--inputs", path])
    assert o.ok and o.status == 1, (o.problems, o.stderr)
    assert "input 'b': expected f32[5], got float32[7]" in o.stderr.splitlines()[0]
    o = invoke(["eval", str(src), "--inputs", path, "--sizes", "N=7"])  # --sizes must agree with every array
    assert o.ok and o.status == 1 and "input 'a': expected f32[7], got float32[5]" in o.stderr.splitlines()[0]
    good = _npz(tmp_path, "ok.npz", a=np.arange(1, 6, dtype=np.float32), b=np.arange(2, 7, dtype=np.float32))
    o = invoke(["eval", str(src), "--inputs", good, "--print"])
    assert o.status == 0 and "[ 3.  5.  7.  9. 11.]" in o.stdout, o.stdout
