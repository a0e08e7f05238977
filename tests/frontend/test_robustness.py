"""Hostile input at the front end and the CLI conventions: bytes that are not UTF-8, control characters,
stated limits, stdin, -o FILE, --version, exit codes, one set of target names, --sizes validation."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from gir import limits
from gir.cli import main
from gir.errors import GirError
from gir.parser import parse_file, parse_text
from gir.source import source_lines, visible

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "samples" / "softmax.gir"
GOOD = "func f(x: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i] * 2.0\n}\n"


def gir(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def write(tmp_path, data: bytes, name="f.gir") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------ bytes
def test_invalid_utf8_is_located(tmp_path, capsys):
    p = write(tmp_path, b"func f(x: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i] * 2.0  # caf\xe9\n}\n")
    rc, _, err = gir(capsys, "check", p)
    assert rc == 1
    assert f"{p}:2:27: error: invalid UTF-8 byte 0xe9" in err
    assert "\ufffd" in err and "^" in err


def test_utf16_is_named(tmp_path, capsys):
    p = write(tmp_path, GOOD.encode("utf-16"))
    rc, _, err = gir(capsys, "fmt", p)
    assert rc == 1 and "UTF-16" in err and f"{p}:1:1:" in err


def test_utf8_bom_is_accepted(tmp_path):
    p = write(tmp_path, b"\xef\xbb\xbf" + GOOD.encode())
    assert parse_file(p).funcs[0].name == "f"


@pytest.mark.parametrize("ch", ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_control_characters_keep_line_numbers(ch):
    """Python's splitlines() breaks at these; the lexer does not: the quoted line must be the lexer's."""
    src = f"# soft{ch}max\nfunc f(x: f32[M]) -> (y: f32[M]) {{\n  y[i] = z[i]\n}}\n"
    with pytest.raises(GirError) as exc:
        parse_and_verify(src)
    text = exc.value.format()
    assert "<t>:3:10: error: undefined tensor 'z'" in text
    assert "  y[i] = z[i]" in text


@pytest.mark.parametrize("ch", ["\v", "\x1c", "\x85", "\u2028", "\x00", "\x7f"])
def test_control_character_in_code_is_a_located_syntax_error(ch):
    src = "func f(x: f32[M]) -> (y: f32[M]) {\n" + ch + "  y[i] = x[i]\n}\n"
    with pytest.raises(GirError) as exc:
        parse_text(src, "<t>")
    text = exc.value.format()
    assert text.startswith("<t>:2:1: error: syntax error: unexpected character U+")
    quoted = text.splitlines()[1]
    assert ch not in quoted and quoted.endswith("y[i] = x[i]")  # shown as a visible picture


def parse_and_verify(src: str):
    from gir.verifier import verify_module
    verify_module(parse_text(src, "<t>"))


def test_source_lines_and_visible():
    assert source_lines("a\vb\nc\r\nd") == ["a\vb", "c", "d"]
    assert visible("a\tb\x0bc\x00") == "a\tb\u240bc\u2400"


# ----------------------------------------------------------------- limits
def test_deep_expressions_are_refused_with_the_limit():
    body = "abs(" * (limits.MAX_NESTING + 10) + "x[i]" + ")" * (limits.MAX_NESTING + 10)
    with pytest.raises(GirError) as exc:
        parse_text(f"func f(x: f32[M]) -> (y: f32[M]) {{\n  y[i] = {body}\n}}\n", "<t>")
    assert f"more than {limits.MAX_NESTING} levels" in exc.value.format()
    assert exc.value.loc.line == 2


def test_long_sum_below_the_limit_goes_through_every_stage(capsys, tmp_path):
    terms = " + ".join(f"x[i, j] * {k}.0" for k in range(200))
    p = write(tmp_path, f"func f(x: f32[M, N]) -> (y: f32[M, N]) {{\n  y[i, j] = {terms}\n}}\n".encode())
    assert gir(capsys, "check", p)[0] == 0
    assert gir(capsys, "fmt", "-i", p)[0] == 0 and gir(capsys, "fmt", "--check", p)[0] == 0
    assert gir(capsys, "run", p, "--sizes", "M=3,N=5")[0] == 0
    assert gir(capsys, "compile", p, "--sizes", "M=3,N=5")[0] == 0


def test_too_many_statements_and_functions():
    lines = ["func f(x: f32[M]) -> (y: f32[M]) {", "  t0[i] = x[i]"]
    lines += [f"  t{k}[i] = t{k - 1}[i] + 1.0" for k in range(1, limits.MAX_STATEMENTS + 5)]
    lines += ["  y[i] = t0[i]", "}"]
    with pytest.raises(GirError) as exc:
        parse_text("\n".join(lines) + "\n", "<t>")
    assert f"more than {limits.MAX_STATEMENTS}" in exc.value.message
    assert exc.value.loc.line == limits.MAX_STATEMENTS + 2
    funcs = "".join(f"func f{k}(x: f32[M]) -> (y: f32[M]) {{\n  y[i] = x[i]\n}}\n"
                    for k in range(limits.MAX_FUNCS + 1))
    with pytest.raises(GirError) as exc:
        parse_text(funcs, "<t>")
    assert f"the limit is {limits.MAX_FUNCS}" in exc.value.message


@pytest.mark.parametrize("literal, message", [
    ("9" * 5000 + ".0", "number literal too long"),
    ("1" * 30, "does not fit in 64 bits"),
    ("1e999", "overflows to infinity"),
])
def test_literal_limits(literal, message):
    with pytest.raises(GirError) as exc:
        parse_text(f"func f(x: f32[M]) -> (y: f32[M]) {{\n  y[i] = x[i] + {literal}\n}}\n", "<t>")
    assert message in exc.value.message and exc.value.loc.line == 2


def test_int_literal_overflowing_i32_is_refused_unless_i64():
    with pytest.raises(GirError) as exc:
        parse_and_verify("func f(x: i32[M]) -> (y: i32[M]) {\n  y[i] = x[i] + 3000000000\n}\n")
    assert "overflows i32" in exc.value.message and exc.value.loc.col == 17
    parse_and_verify("func f(x: i64[M]) -> (y: i64[M]) {\n  y[i] = x[i] + 3000000000\n}\n")
    parse_and_verify("func f(x: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i] + 3000000000\n}\n")


def test_zero_size_dimension_is_refused_where_code_is_generated(capsys, tmp_path):
    p = write(tmp_path, b"func f(x: f32[0, N]) -> (y: f32[0, N]) {\n  y[i, j] = x[i, j] + 1.0\n}\n")
    for argv in (["compile", p, "--sizes", "N=5"], ["compile", p, "--target", "mlu", "--sizes", "N=5"]):
        rc, _, err = gir(capsys, *argv)
        assert rc == 1 and f"{p}:1:8: error: " in err and "'x' has a zero-size dimension" in err


def test_huge_literal_shapes_compile_with_64_bit_indices(capsys, tmp_path):
    p = write(tmp_path, b"func f(x: f32[4294967296, 2]) -> (y: f32[4294967296]) {\n  y[i] = sum(x[i, j])\n}\n")
    rc, out, err = gir(capsys, "compile", p)
    assert rc == 0 and "long long" in out, err


# -------------------------------------------------------------------- CLI
def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("gir ")


def test_help_documents_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "exit status:" in out and "2  a usage error" in out


def test_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SOFTMAX.read_bytes())))
    rc, out, _ = gir(capsys, "check", "-")
    assert rc == 0 and out == "<stdin>: ok\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"func f(x: f32[M]) -> (y: f32[M]) {\n  y[i] = q\n}")))
    rc, _, err = gir(capsys, "check", "-")
    assert rc == 1 and err.startswith("<stdin>:2:")


def test_output_file_is_exactly_that_file(capsys, tmp_path):
    out = tmp_path / "k.cu"
    assert gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", out)[0] == 0
    assert out.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["k.cu"]
    bare = tmp_path / "kernel"
    assert gir(capsys, "compile", SOFTMAX, "--target", "mlu", "--sizes", "M=4,N=8", "-o", bare)[0] == 0
    assert bare.is_file() and "__mlu_global__" in bare.read_text()
    d = tmp_path / "dir"
    assert gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", f"{d}/", "--emit", "all")[0] == 0
    assert sorted(p.suffix for p in d.iterdir()) == [".cu", ".gir", ".json"]
    rc, _, err = gir(capsys, "compile", SOFTMAX, "-o", tmp_path / "x.cu", "--emit", "all")
    assert rc == 2 and "name a directory" in err and not (tmp_path / "x.cu").exists()


@pytest.mark.parametrize("sizes, message", [
    ("M=--4,N=5", "bad --sizes entry 'M=--4'"),
    ("M=3,,N=5", "bad --sizes entry ''"),
    ("M=\u0663,N=5", "bad --sizes entry"),
    ("M=3,M=4,N=5", "M is given twice"),
    ("M=-1,N=5", "must be at least 0"),
    ("M=3,N=5,Q=7", "--sizes binds 'Q', which"),
])
def test_bad_sizes_are_usage_errors(capsys, sizes, message):
    for sub in ("eval", "compile", "analyze"):
        rc, _, err = gir(capsys, sub, SOFTMAX, "--sizes", sizes)
        assert rc == 2 and message in err, (sub, err)


def test_one_set_of_target_names(capsys):
    for name in ("mlu", "mlu-sim"):
        assert gir(capsys, "compile", SOFTMAX, "--target", name, "--sizes", "M=4,N=8")[0] == 0
        assert gir(capsys, "run", SOFTMAX, "--target", name, "--sizes", "M=4,N=8")[0] == 0
        assert gir(capsys, "check", SOFTMAX, "--target", name)[0] == 0
    with pytest.raises(SystemExit) as exc:
        main(["compile", str(SOFTMAX), "--target", "bogus"])
    assert exc.value.code == 2 and "unknown target 'bogus'" in capsys.readouterr().err


def test_broken_pipe_is_quiet():
    cmd = f"{sys.executable} -m gir check {SOFTMAX} {SOFTMAX} {SOFTMAX} | head -c0"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stderr == ""


def test_overflow_warning_once_at_the_users_source(capsys):
    rc, _, err = gir(capsys, "compile", SOFTMAX)
    assert rc == 0 and err.count("[overflow]") == 1
    assert f"{SOFTMAX}:2:1: warning: [overflow]" in err and "<schedule" not in err
    rc, _, err = gir(capsys, "compile", SOFTMAX, "--index-type", "int64")
    assert rc == 0 and "[overflow]" not in err
    rc, _, err = gir(capsys, "compile", SOFTMAX, "--sizes", "M=64,N=64")
    assert rc == 0 and "[overflow]" not in err


# ------------------------------------------------------- review follow-ups
def test_unwritable_outputs_are_errors_and_write_nothing(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (f"{blocker}/k.cu", f"{blocker}/"):
        rc, _, err = gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", out)
        assert rc == 1 and err.startswith("error: cannot write "), err
    rc, _, err = gir(capsys, "opt", SOFTMAX, "-o", tmp_path)
    assert rc == 1 and "it is a directory" in err
    rc, _, err = gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", tmp_path / "a.cu",
                     "--meta", f"{blocker}/m.json")
    assert rc == 1 and not (tmp_path / "a.cu").exists()  # all files or none
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_output_dash_empty_and_meta(capsys, tmp_path):
    rc, out, _ = gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", "-")
    assert rc == 0 and "__global__" in out
    assert gir(capsys, "compile", SOFTMAX, "-o", "")[0] == 2
    meta = tmp_path / "m.json"
    rc, out, _ = gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "--meta", meta)
    assert rc == 0 and "__global__" in out and meta.is_file()
    same = tmp_path / "x.cu"
    assert gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", same, "--meta", same)[0] == 2


def test_stdin_into_a_directory_names_the_gir_file(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SOFTMAX.read_bytes())))
    d = tmp_path / "d"
    assert gir(capsys, "compile", "-", "--sizes", "M=4,N=8", "-o", f"{d}/", "--emit", "all")[0] == 0
    assert (d / "stdin.gir").is_file()


def test_check_sizes_over_several_files(capsys):
    rope, onehot = ROOT / "samples" / "rope.gir", ROOT / "samples" / "onehot.gir"
    assert gir(capsys, "check", "-q", SOFTMAX, rope, onehot, "--sizes", "M=64,N=64")[0] == 0
    rc, _, err = gir(capsys, "check", SOFTMAX, "--sizes", "K=3")
    assert rc == 2 and "which no file given uses" in err


def test_caret_under_tabs_and_long_lines(tmp_path, capsys):
    p = write(tmp_path, b"func f(x: f32[N]) -> (y: f32[N]) {\n\t\ty[i] = x[i] + @\n}\n")
    _, _, err = gir(capsys, "check", p)
    quoted, caret = err.splitlines()[1:3]
    assert quoted == "  \t\ty[i] = x[i] + @" and caret == "  \t\t" + " " * 14 + "^"
    p = write(tmp_path, ("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]" + " " * 100_000
                         + " + q[i]\n}\n").encode(), "long.gir")
    _, _, err = gir(capsys, "check", p)
    assert len(err) < 1000 and "q[i]" in err and "\u2026" in err


def test_tensor_bytes_limit(capsys, tmp_path):
    p = write(tmp_path, b"func f(x: f32[9223372036854775807]) -> (y: f32[9223372036854775807]) {\n"
                        b"  y[i] = x[i] * 2.0\n}\n")
    rc, _, err = gir(capsys, "compile", p)
    assert rc == 1 and f"{p}:1:8: error: 'x' would span" in err
    rc, _, err = gir(capsys, "compile", SOFTMAX, "--sizes", f"M={2**62},N={2**62}")
    assert rc == 1 and "more than 2^62" in err


def test_compiler_generated_text_is_not_held_to_the_source_limits(capsys, tmp_path):
    """A program at the nesting limit compiles: the scheduled kernel nests a few levels deeper."""
    terms = " + x[i]" * (limits.MAX_NESTING - 6)
    p = write(tmp_path, f"func f(x: f32[N]) -> (y: f32[N]) {{\n  y[i] = x[i]{terms}\n}}\n".encode())
    assert gir(capsys, "check", p)[0] == 0
    assert gir(capsys, "compile", p, "--sizes", "N=8")[0] == 0


def test_meta_in_directory_mode(capsys, tmp_path):
    meta = tmp_path / "m.json"
    assert gir(capsys, "compile", SOFTMAX, "--sizes", "M=4,N=8", "-o", f"{tmp_path / 'd'}/", "--meta", meta)[0] == 0
    assert meta.is_file() and (tmp_path / "d").is_dir()
