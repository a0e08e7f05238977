"""Negative tests: each tests/frontend/errors/*.gir carries `# expect-error@L:C: TEXT` annotations and
`gir check` must report exactly those diagnostics (see README.md)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gir.cli import main
from .expect import Expected, diagnostics, expectations, mismatches

ERRORS = Path(__file__).parent / "errors"
FILES = sorted(ERRORS.glob("*.gir"))


def test_enough_cases():
    assert len(FILES) >= 30
    layers = {"kernel" in f.read_text() for f in FILES}
    assert layers == {True, False}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_expected_errors(path, capsys):
    expected = expectations(path)
    assert expected, f"{path.name} has no expect-error annotation"
    rc = main(["check", str(path)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "Traceback" not in err
    problems = mismatches(expected, diagnostics(err, str(path)))
    assert not problems, "\n".join(problems) + "\n--- output:\n" + err
    # every diagnostic shows the source line and a caret under the reported column
    lines = err.splitlines()
    for k, line in enumerate(lines):
        if line.startswith(str(path) + ":") and ": error: " in line:
            col = int(line.split(":")[2])
            assert k + 2 < len(lines) and lines[k + 2].startswith("  " + " " * (col - 1) + "^"), err


@pytest.mark.parametrize("name", ["syntax_unexpected_char", "kernel_vec_16_bytes", "undefined_tensor"])
def test_subprocess_exit_code_and_no_traceback(name):
    path = ERRORS / f"{name}.gir"
    proc = subprocess.run([sys.executable, "-m", "gir.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert not mismatches(expectations(path), diagnostics(proc.stderr, str(path))), proc.stderr


def test_harness_detects_missing_and_unexpected(tmp_path):
    """The matcher itself must fail on a wrong column, a wrong text and an extra diagnostic."""
    exp = [Expected(2, 5, "undefined tensor", 3)]
    assert not mismatches(exp, [(2, 5, "undefined tensor 'z'")])
    assert mismatches(exp, [(2, 6, "undefined tensor 'z'")])
    assert mismatches(exp, [(2, 5, "unknown name 'z'")])
    assert mismatches(exp, [(2, 5, "undefined tensor 'z'"), (3, 1, "other")])
    f = tmp_path / "a.gir"
    f.write_text("x\n# expect-error@-1:1: a\n# expect-error@+1:2: b\n\n# expect-error@7:3: c\n")
    assert [(e.line, e.col, e.text) for e in expectations(f)] == [(1, 1, "a"), (4, 2, "b"), (7, 3, "c")]


def test_valid_file_checks_clean(tmp_path, capsys):
    f = tmp_path / "ok.gir"
    f.write_text("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}\n")
    assert main(["check", str(f)]) == 0
    assert capsys.readouterr().err == ""
