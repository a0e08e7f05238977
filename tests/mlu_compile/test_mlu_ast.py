"""The MLU emitter builds its kernels as the kernel AST of codegen/ast.py all the way down: no operand, pointer
expression or scalar compute is spelled as text (`Verbatim`), for every sample and for seeded random programs
(element-wise chains, broadcasts, reductions over any axes, casts, scans), and the printed text is what the
simulator parses back to the same tree."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gir.codegen import ast as C
from gir.codegen.cstyle import _walk
from gir.codegen.mlu import emit_func
from gir.codegen.mlu.instr import call
from gir.errors import GirError
from gir.parser import parse_file, parse_text
from gir.passes.middle import lower_module
from gir.targets.mlu import parse_program
from gir.verifier import verify_module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "differential"))
sys.path.insert(0, str(ROOT / "tests"))
import diffprog  # noqa: E402
import scanprog  # noqa: E402
from sample_refs import REFERENCES  # noqa: E402


def _kernels(module, sizes):
    verify_module(module)
    low = lower_module(module, "mlu-sim", {"sizes": sizes})
    return [k for f in low.funcs for k in emit_func(f, pipeline=False)]


def _check(kernels) -> None:
    assert kernels
    for k in kernels:
        assert k.kernel is not None
        text = [n for n in _walk(k.kernel.body) if isinstance(n, C.Verbatim)]
        assert not text, f"{k.name}: text in the kernel AST: {text[:3]}"
        parse_program(k.source, k.name)   # the printed AST is valid kernel-language text


SAMPLES = sorted(n for n in REFERENCES if (ROOT / "samples" / f"{n}.gir").exists())


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_kernels_are_ast(name):
    sizes = REFERENCES[name][1][0]
    try:
        kernels = _kernels(parse_file(str(ROOT / "samples" / f"{name}.gir")), sizes)
    except GirError as e:   # a located refusal (f64 on the MLU, a view's derived sizes) is not this test's concern
        pytest.skip(f"refused on the MLU: {str(e).splitlines()[0]}")
    _check(kernels)


@pytest.mark.parametrize("seed", range(0, 40))
def test_random_program_kernels_are_ast(seed):
    for make in (diffprog.program, scanprog.program):
        text, sizes = make(5000 + seed)
        try:
            kernels = _kernels(parse_text(text, f"<random {seed}>"), sizes)
        except GirError:
            continue
        _check(kernels)


def test_text_operands_are_refused():
    with pytest.raises(TypeError, match="not text"):
        call("bang_add", "t + 1", C.Id("a"), C.Id("b"), 64)


def test_integer_literals_have_no_64_bit_suffix():
    """The MLU language's integers are 32-bit: an i32 cummax's identity prints `-2147483648`, not C's `...LL`."""
    from gir.targets.mlu.run import run_func
    f = parse_text("func f(x: i32[N]) -> (y: i32[N]) {\n  y[i] = cummax(x[i], i, exclusive=1)\n}\n").funcs[0]
    src = run_func(f, None, {"N": 300007}, values=False).source   # a long scan: the partial chunk's identity
    assert "= -2147483648;" in src and "LL" not in src
