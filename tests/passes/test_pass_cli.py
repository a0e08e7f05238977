"""`gir passes` and `gir opt`: listing, the default pipeline, instruments on the command line, errors."""
from __future__ import annotations

import re

import pytest

import gir
from conftest import REPO
from gir.cli import main
from gir.passes.pipeline import DEFAULT_PIPELINE

SOFTMAX = REPO / "samples" / "softmax.gir"
LAYERNORM = REPO / "samples" / "layernorm.gir"


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_passes_lists_builtins_with_options_and_origin(capsys):
    code, out, _ = _run(capsys, "passes")
    assert code == 0
    lines = out.splitlines()
    for name in ("canonicalize", "cse", "dce", "inline-elementwise"):
        assert any(re.fullmatch(rf"{name} \[gir-compiler \S+\]", line) for line in lines), name
    k = lines.index(next(line for line in lines if line.startswith("inline-elementwise [")))
    assert lines[k + 1].startswith("    Inline element-wise intermediates")
    assert lines[k + 2] == "    max_uses: int = 1"


def test_passes_default_and_details(capsys):
    assert _run(capsys, "passes", "--default") == (0, DEFAULT_PIPELINE + "\n", "")
    code, out, _ = _run(capsys, "passes", "cse")
    assert code == 0 and "entry point: gir.passes.builtin.cse:CommonSubexpressionElimination" in out
    assert "Results are never merged" in out  # the full docstring, not only its first line
    code, _, err = _run(capsys, "passes", "csee")
    assert code == 1 and "unknown pass 'csee'" in err and "did you mean 'cse'?" in err


def test_opt_prints_the_result(capsys):
    code, out, err = _run(capsys, "opt", LAYERNORM, "--passes", "inline-elementwise")
    assert code == 0 and err == ""
    assert "y[i, j] = d[i, j] * rsqrt(vr[i] + 1e-05) * gamma[j] + beta[j]" in out
    assert gir.parse_text(out) != gir.parse_file(LAYERNORM)


def test_opt_default_pipeline_and_output_file(capsys, tmp_path):
    target = tmp_path / "sub" / "out.gir"
    code, out, _ = _run(capsys, "opt", LAYERNORM, "-o", target)
    assert code == 0 and out == ""
    from gir.passes.manager import PassManager
    assert gir.parse_file(target) == PassManager(DEFAULT_PIPELINE).run(gir.parse_file(LAYERNORM))
    assert [p.name for p in target.parent.iterdir()] == ["out.gir"]  # no temporary file left behind


def test_opt_instruments(capsys, tmp_path):
    code, out, err = _run(capsys, "opt", SOFTMAX, "--passes", "canonicalize,inline-elementwise{max_uses=2},dce",
                          "--print-ir-after=dce", "--print-ir-before", "canonicalize", "--time-passes",
                          "--dump-ir", tmp_path / "dump")
    assert code == 0
    assert re.findall(r"^# ----- IR .*$", err, flags=re.M) == [
        "# ----- IR before 'canonicalize' (pass 1 of 3) -----", "# ----- IR after 'dce' (pass 3 of 3) -----"]
    assert "# pass timing report (wall clock)" in err and re.search(r"inline-elementwise\{max_uses=2\}\n", err)
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == [
        "00-input.gir", "01-canonicalize.gir", "02-inline-elementwise.gir", "03-dce.gir"]
    assert (tmp_path / "dump" / "03-dce.gir").read_text() == out


def test_opt_pipeline_syntax_error(capsys):
    code, out, err = _run(capsys, "opt", SOFTMAX, "--passes", "canonicalize,inline-elementwise{max_uses=x}")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "<pipeline>:1:42: error: option 'max_uses' expects an int, got 'x' (pass 'inline-elementwise')",
        "  canonicalize,inline-elementwise{max_uses=x}",
        " " * (2 + 41) + "^"]


def test_opt_unknown_pass_and_bad_flag_name(capsys):
    code, _, err = _run(capsys, "opt", SOFTMAX, "--passes", "cannonicalize")
    assert code == 1 and "unknown pass 'cannonicalize'" in err and "did you mean 'canonicalize'?" in err
    code, _, err = _run(capsys, "opt", SOFTMAX, "--passes", "dce", "--print-ir-after=inline")
    assert code == 1 and "unknown pass 'inline'" in err


def test_opt_invalid_input_file(capsys, tmp_path):
    bad = tmp_path / "bad.gir"
    bad.write_text("func f(x: f32[M]) -> (y: f32[M]) {\n  y[i] = z[i]\n}\n")
    code, _, err = _run(capsys, "opt", bad, "--passes", "dce")
    assert code == 1 and f"{bad}:2:" in err and "undefined tensor 'z'" in err


@pytest.fixture
def test_passes(fake_dists):
    fake_dists("gir-test-passes", {"break-ir": "gir_test_passes:BreakIR", "crash": "gir_test_passes:Crash"})


def test_opt_names_the_breaking_pass(capsys, test_passes):
    code, out, err = _run(capsys, "opt", SOFTMAX, "--passes", "canonicalize,break-ir,dce")
    assert code == 1 and out == ""
    assert err.splitlines()[0] == "error: pass 'break-ir' produced invalid IR: undefined tensor 'undefined_tensor'"
    assert f"  note: reproduce: gir opt {SOFTMAX} --passes 'canonicalize,break-ir'" in err.splitlines()
    code, out, err = _run(capsys, "opt", SOFTMAX, "--passes", "crash")
    assert code == 1 and "error: pass 'crash' failed with an internal error: RuntimeError: boom" in err


def test_opt_no_verify_each(capsys, test_passes):
    code, out, _ = _run(capsys, "opt", SOFTMAX, "--passes", "break-ir", "--no-verify-each")
    assert code == 0 and "undefined_tensor" in out
