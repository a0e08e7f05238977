"""`gir --help`, `gir check`, `gir fmt` (--check, -i) and `gir eval` exit codes and messages."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gir.cli import main

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "samples" / "softmax.gir"
EXPLICIT = ROOT / "samples" / "explicit" / "softmax_rows.gir"
MESSY = "func f(x: f32[N])->(y:f32[N]){\n   y[i]=((x[i]*2.0))+  -1.0   # comment\n}\n"


def gir(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_help_shows_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "gir check" in out and "gir eval" in out
    for cmd in ("check", "fmt", "eval"):
        assert cmd in out


def test_check_exit_codes(capsys, tmp_path):
    assert gir(capsys, "check", SOFTMAX, EXPLICIT)[0] == 0
    bad = tmp_path / "bad.gir"
    bad.write_text("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = q[i]\n}\n")
    rc, out, err = gir(capsys, "check", SOFTMAX, bad)
    assert rc == 1 and f"{SOFTMAX}: ok" in out
    assert err.startswith(f"{bad}:2:10: error: undefined tensor 'q'")
    rc, out, err = gir(capsys, "check", "-q", SOFTMAX)
    assert rc == 0 and out == ""


def test_missing_file_is_a_clean_error(capsys, tmp_path):
    missing = tmp_path / "nope.gir"
    for cmd in ("check", "fmt", "eval"):
        rc, _, err = gir(capsys, cmd, missing)
        assert rc == 1
        assert err.strip().splitlines() == [f"error: cannot read {missing}: No such file or directory"]


def test_fmt_prints_canonical_and_is_idempotent(capsys, tmp_path):
    f = tmp_path / "messy.gir"
    f.write_text(MESSY)
    rc, out, _ = gir(capsys, "fmt", f)
    assert rc == 0
    assert out == "func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] * 2.0 + -1.0  # comment\n}\n"
    f2 = tmp_path / "canon.gir"
    f2.write_text(out)
    assert gir(capsys, "fmt", f2)[1] == out
    assert gir(capsys, "fmt", "--check", f2)[0] == 0


def test_fmt_check_and_in_place(capsys, tmp_path):
    f = tmp_path / "messy.gir"
    f.write_text(MESSY)
    rc, _, err = gir(capsys, "fmt", "--check", f)
    assert rc == 1 and "not in canonical form" in err
    assert f.read_text() == MESSY  # --check never writes
    assert gir(capsys, "fmt", "-i", f)[0] == 0
    assert f.read_text() != MESSY
    assert gir(capsys, "fmt", "--check", f)[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["messy.gir"]  # no temporary left behind


@pytest.mark.parametrize("sample", [SOFTMAX, EXPLICIT])
def test_fmt_in_place_keeps_meaning(capsys, tmp_path, sample):
    from gir.parser import parse_file

    f = tmp_path / sample.name
    shutil.copy(sample, f)
    assert gir(capsys, "fmt", "-i", f)[0] == 0
    assert parse_file(f) == parse_file(sample)
    assert gir(capsys, "fmt", "--check", f)[0] == 0


def test_fmt_syntax_error(capsys, tmp_path):
    f = tmp_path / "bad.gir"
    f.write_text("func f( -> {\n")
    rc, _, err = gir(capsys, "fmt", "-i", f)
    assert rc == 1 and f"{f}:1:9: error: syntax error" in err
    assert f.read_text() == "func f( -> {\n"


def test_eval_prints_summary(capsys):
    rc, out, _ = gir(capsys, "eval", SOFTMAX, "--sizes", "M=3,N=5")
    assert rc == 0 and out.startswith("y: float32[3, 5]") and "sum=3" in out  # softmax rows sum to 1


@pytest.mark.parametrize("sizes, message", [
    ("M=3", "error: size N of input 'x' is not given (use --sizes N=...)"),
    ("M3,N=4", "error: bad --sizes entry 'M3': expected NAME=INT (e.g. M=4,N=7)"),
    ("M=3,N=x", "error: bad --sizes entry 'N=x': expected NAME=INT (e.g. M=4,N=7)"),
    ("M=-2,N=2", "error: size M=-2 must be at least 0"),
])
def test_eval_size_errors_are_one_liners(capsys, tmp_path, sizes, message):
    out_file = tmp_path / "out.npz"
    rc, _, err = gir(capsys, "eval", SOFTMAX, "--sizes", sizes, "-o", out_file)
    assert rc == 2  # a usage error
    assert err.strip().splitlines() == [message]
    assert not out_file.exists()


def test_eval_output_npz_atomic(capsys, tmp_path):
    out_file = tmp_path / "res" / "out.npz"
    rc, _, _ = gir(capsys, "eval", SOFTMAX, "--sizes", "M=2,N=7", "-o", out_file, "--precision", "f32")
    assert rc == 0
    with np.load(out_file) as data:
        assert data.files == ["y"] and data["y"].shape == (2, 7)
        np.testing.assert_allclose(data["y"].sum(1), 1.0, rtol=1e-5)
    # a failing run (index out of bounds at evaluation time) leaves the old file untouched and no temporaries
    bad = tmp_path / "oob.gir"
    bad.write_text("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i + 1]\n}\n")
    before = out_file.read_bytes()
    rc, _, err = gir(capsys, "eval", bad, "--sizes", "N=4", "-o", out_file)
    assert rc == 1 and "out of bounds" in err and "Traceback" not in err
    assert out_file.read_bytes() == before
    assert sorted(p.name for p in out_file.parent.iterdir()) == ["out.npz"]


def test_eval_inputs_npz(capsys, tmp_path):
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    inp, out_file = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inp, x=x)
    assert gir(capsys, "eval", SOFTMAX, "--inputs", inp, "-o", out_file)[0] == 0
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    with np.load(out_file) as data:
        np.testing.assert_allclose(data["y"], e / e.sum(1, keepdims=True), rtol=1e-6)
    rc, _, err = gir(capsys, "eval", SOFTMAX, "--inputs", tmp_path / "missing.npz")
    assert rc == 1 and err.startswith("error: cannot read inputs")


def test_eval_inputs_are_checked_as_run_checks_them(capsys, tmp_path):
    """`gir eval --inputs` shares `gir run`'s loader (gir.cli.inputs): no traceback on a damaged archive, no
    silent conversion of float64 to f32, no ignored names, and --sizes must agree with the arrays."""
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    ok = tmp_path / "ok.npz"
    np.savez(ok, x=x)
    trunc = tmp_path / "trunc.npz"
    trunc.write_bytes(ok.read_bytes()[:100])
    cases = [
        (["--inputs", trunc], f"error: cannot read inputs from {trunc}: "),
        (["--inputs", tmp_path], f"error: cannot read inputs from {tmp_path}: it is a directory"),
        (["--inputs", _npz(tmp_path, "f64.npz", x=x.astype(np.float64))],
         f"{SOFTMAX}:2:14: error: input 'x': expected f32[4, 8], got float64[4, 8]"),
        (["--inputs", _npz(tmp_path, "z.npz", x=x, z=x)],
         "holds 'z', which is not an input of 'softmax' (inputs: x)"),
        (["--inputs", ok, "--sizes", "M=5"],
         f"{SOFTMAX}:2:14: error: input 'x': expected f32[5, 8], got float32[4, 8]"),
    ]
    for args, message in cases:
        rc, out, err = gir(capsys, "eval", SOFTMAX, *args)
        assert rc == 1 and out == "" and "Traceback" not in err, (args, err)
        assert message in err.splitlines()[0], (args, err)
    rc, out, _ = gir(capsys, "eval", SOFTMAX, "--inputs", ok, "--sizes", "M=4,N=8")
    assert rc == 0 and out.startswith("y: float32[4, 8]")


def test_eval_missing_inputs_are_random(capsys, tmp_path):
    two = tmp_path / "two.gir"
    two.write_text("func f(a: f32[N], b: f32[N]) -> (y: f32[N]) {\n  y[i] = a[i] - b[i]\n}\n")
    a = np.arange(1, 6, dtype=np.float32)
    out_file = tmp_path / "y.npz"
    rc, _, err = gir(capsys, "eval", two, "--inputs", _npz(tmp_path, "a.npz", a=a), "--seed", "3", "-o", out_file)
    assert rc == 0, err
    with np.load(out_file) as data:
        b = a - data["y"]
    assert b.shape == (5,) and np.all(b != 0)  # N=5 bound from 'a'; 'b' drawn from --seed (never zeros)


def test_eval_bf16_inputs_from_npz(capsys, tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    src = tmp_path / "b.gir"
    src.write_text("func f(x: bf16[N]) -> (y: bf16[N]) {\n  y[i] = x[i] * 2.0\n}\n")
    x = np.array([1.5, -2.0, 0.25], ml_dtypes.bfloat16)  # numpy.savez stores it as V2
    rc, out, err = gir(capsys, "eval", src, "--inputs", _npz(tmp_path, "x.npz", x=x), "--print")
    assert rc == 0 and "min=-4 max=3 mean=-0.166667" in out and "[3 -4 0.5]" in out, out + err


def _npz(tmp_path, name, **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_eval_explicit_function_is_refused(capsys):
    rc, _, err = gir(capsys, "eval", EXPLICIT, "--sizes", "M=2")
    assert rc == 1 and "holds kernels" in err and "Traceback" not in err


def test_subprocess_entry_point(tmp_path):
    bad = tmp_path / "bad.gir"
    bad.write_text("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n")
    proc = subprocess.run([sys.executable, "-m", "gir.cli", "check", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{bad}:2:14: error: syntax error: unexpected end of input" in proc.stderr
    assert "missing '}'" in proc.stderr
