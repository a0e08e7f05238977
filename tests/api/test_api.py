"""gir.compile on the host targets (sim, mlu-sim): sources, argument conventions, size binding, errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gir
from gir.errors import GirError
from gir.evaluate import evaluate

from .common import SOFTMAX, TWO, assert_matches, normal

HOST_TARGETS = ["sim", "mlu-sim"]


@pytest.mark.parametrize("target", HOST_TARGETS)
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (16, 100)])
def test_softmax_from_path_matches_reference(target, shape):
    k = gir.compile(SOFTMAX, target=target)
    x = normal(shape, seed=shape[1])
    assert_matches(k, {"x": x}, k(x))


@pytest.mark.parametrize("target", HOST_TARGETS)
def test_text_and_str_path_compile_the_same_program(target):
    from_text = gir.compile(SOFTMAX.read_text(), target=target, sizes={"M": 5, "N": 9})
    from_path = gir.compile(str(SOFTMAX), target=target, sizes={"M": 5, "N": 9})
    assert from_text.filename == "<string>" and from_path.filename == str(SOFTMAX)
    x = normal((5, 9), seed=1)
    np.testing.assert_array_equal(from_text(x), from_path(x))
    assert from_text.programs and from_path.programs  # every size given: compiled at gir.compile


@pytest.mark.parametrize("target", HOST_TARGETS)
def test_keyword_arguments_and_several_results(target):
    k = gir.compile(TWO, target=target)
    assert k.params == ("x", "b") and k.results == ("y", "s")
    x, b = normal((6, 11), seed=2), normal((11,), seed=3)
    got = k(b=b, x=x)
    assert isinstance(got, tuple) and len(got) == 2
    assert_matches(k, {"x": x, "b": b}, got)
    mixed = k(x, b=b)
    for a, c in zip(got, mixed):
        np.testing.assert_array_equal(a, c)


def test_sizes_bound_from_shapes_and_recompiled_per_binding():
    k = gir.compile(SOFTMAX, target="sim")
    assert k.programs == {}  # sizes unknown until the first call
    for shape in [(3, 5), (4, 70), (3, 5)]:
        x = normal(shape, seed=shape[1])
        assert_matches(k, {"x": x}, k(x))
    assert sorted(k.programs) == [(("M", 3), ("N", 5)), (("M", 4), ("N", 70))]


def test_out_receives_the_results():
    k = gir.compile(TWO, target="sim")
    x, b = normal((3, 4), seed=4), normal((4,), seed=5)
    y, s = np.empty((3, 4), np.float32), np.empty(3, np.float32)
    got = k(x, b, out=(y, s))
    assert got[0] is y and got[1] is s
    assert_matches(k, {"x": x, "b": b}, (y, s))
    single = gir.compile(SOFTMAX, target="sim")
    dest = np.empty((3, 4), np.float32)
    assert single(x, out=dest) is dest


def test_empty_arguments_give_empty_results():
    """A zero-size dimension binds its size to 0: the results are empty (docs/gir.md, "Zero-size dimensions")."""
    k = gir.compile(TWO, target="sim")
    outs = k(np.empty((0, 7), np.float32), normal((7,)))
    ref = evaluate(k.func, {"x": np.empty((0, 7), np.float32), "b": normal((7,))})
    assert [o.shape for o in outs] == [ref[p].shape for p in k.results] and all(o.size == 0 for o in outs)


def test_fixed_sizes_constrain_the_arguments():
    k = gir.compile(SOFTMAX, target="sim", sizes={"N": 8})
    with pytest.raises(GirError, match=r"argument 'x': expected f32\[3, 8\], got float32\[3, 9\]"):
        k(normal((3, 9)))
    assert_matches(k, {"x": normal((3, 8))}, k(normal((3, 8))))


@pytest.mark.parametrize("call, message", [
    (lambda k: k(normal((4, 7), dtype=np.float64), normal((7,))),
     r"^error: argument 'x': expected f32\[4, 7\], got float64\[4, 7\]$"),
    (lambda k: k(normal((4, 7)), normal((8,))), r"argument 'b': expected f32\[7\], got float32\[8\]"),
    (lambda k: k(normal((4,)), normal((7,))), r"argument 'x': expected f32\[M, 7\], got float32\[4\]"),
    (lambda k: k(normal((4, 7)), normal((7,)).astype(np.int32)), r"argument 'b': expected f32\[7\], got int32\[7\]"),
    (lambda k: k(normal((4, 7))), r"missing argument 'b' of 'two'"),
    (lambda k: k(normal((4, 7)), normal((7,)), normal((7,))), r"'two' takes 2 arguments \(x, b\), got 3"),
    (lambda k: k(normal((4, 7)), normal((7,)), z=1), r"unknown argument 'z': 'two' takes x, b"),
    (lambda k: k(normal((4, 7)), x=normal((4, 7))), r"argument 'x' given twice"),
    (lambda k: k(normal((4, 7)), [1.0] * 7), r"argument 'b': expected a numpy array, got a list"),
    (lambda k: k(normal((4, 7)), normal((7,)), out=np.empty((4, 7), np.float32)),
     r"out= needs 2 array\(s\), one per result \(y, s\), got 1"),
    (lambda k: k(normal((4, 7)), normal((7,)), out=(np.empty((4, 7), np.float32), np.empty(4, np.float64))),
     r"out 's': expected f32\[4\], got float64\[4\]"),
])
def test_argument_errors_name_the_argument(call, message):
    k = gir.compile(TWO, target="sim")
    with pytest.raises(GirError, match=message):
        call(k)
    assert k.programs == {}  # nothing compiled for a bad call


@pytest.mark.parametrize("kwargs, message", [
    ({"target": "hip"}, r"non-runnable target 'hip'.*gir compile --target hip"),
    ({"target": "tpu"}, r"unknown or non-runnable target 'tpu'"),
    ({"sizes": {"K": 4}}, r"sizes binds 'K', which 'softmax' .* does not use \(its sizes: M, N\)"),
    ({"sizes": {"M": -1}}, r"size M=-1 must be an integer from 0 to 2\^62"),
    ({"sizes": {"M": 2.5}}, r"size M=2.5 must be an integer"),
    ({"func": "nope"}, r"no function 'nope' .*\(functions: softmax\)"),
    ({"index_type": "int16", "target": "cuda"}, r"index_type must be auto, int32 or int64"),
    ({"target": "mlu", "machine": "a100"}, r"machine= selects a GPU description"),
    ({"machine": "z80"}, r"unknown GPU machine 'z80'"),
])
def test_compile_errors(kwargs, message):
    with pytest.raises(GirError, match=message):
        gir.compile(SOFTMAX, **{"sizes": {"M": 2, "N": 3}, **kwargs})


def test_source_errors_are_located():
    with pytest.raises(GirError) as e:
        gir.compile("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[j]\n}\n")
    assert e.value.loc is not None and e.value.loc.file == "<string>" and e.value.loc.line == 2
    with pytest.raises(GirError, match="cannot read"):
        gir.compile("no/such/file.gir")


def test_mlu_alias_and_repr():
    k = gir.compile(SOFTMAX, target="mlu")
    assert k.target == "mlu-sim"
    assert repr(k) == "<gir.Kernel softmax(x: f32[M, N]) -> (y: f32[M, N]) on mlu-sim>"


def test_cuda_compiles_without_a_gpu():
    """Compiling for cuda needs no device (NVRTC runs at the first call); the kernels and their launch
    metadata are in the program."""
    k = gir.compile(SOFTMAX, target="cuda", sizes={"M": 64, "N": 1000})
    (program,) = k.programs.values()
    assert program.kernels and all(ks.meta["grid"] and "__global__" in ks.source for ks in program.kernels)
    from gir.targets.cuda import available

    if not available():
        with pytest.raises(GirError, match="target 'cuda' cannot run here"):
            k(normal((64, 1000)))


def test_python_dash_m_gir_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "gir", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("gir ")
