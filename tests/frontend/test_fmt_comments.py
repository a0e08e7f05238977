"""`gir fmt` keeps comments: where each kind goes (golden text), blank lines, odd characters, idempotence and
IR equality over every sample and over randomly commented samples, and every sample in canonical form."""
from __future__ import annotations

import io
import random
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gir.cli import main
from gir.comments import format_source, scan_layout
from gir.errors import GirError
from gir.parser import parse_file, parse_text
from gir.printer import print_module

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(ROOT.glob("samples/**/*.gir"))


def _parses(path: Path) -> bool:
    try:
        parse_file(path)
    except GirError:
        return False
    return True


# and every other .gir file that parses (kernels of the simulator, codegen and analysis tests, fuzz cases)
CORPUS = SAMPLES + [p for p in sorted(ROOT.glob("tests/**/*.gir")) if "errors" not in p.parts and _parses(p)]


def gir(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def comments(text: str) -> list[str]:
    return [c.rstrip() for c in re.findall(r"#[^\n]*", text)]


def fmt_ok(source: str) -> str:
    """Format, and check what every formatting must satisfy."""
    out = format_source(source)
    assert format_source(out) == out, out            # a fixed point
    assert parse_text(out) == parse_text(source)     # same IR (locations take no part in equality)
    assert comments(out) == comments(source)          # no comment lost, none reordered
    return out


def dedent(text: str) -> str:
    lines = text.split("\n")[1:]
    return "\n".join(line[4:] for line in lines)


# ------------------------------------------------------------------ where comments go
def test_comments_before_functions_statements_and_at_file_end():
    src = dedent("""
    # about the file
    func f(x: f32[N]) -> (y: f32[N]) {
        # before a
      a[i]   =   x[i] * 2.0
    # before y (column 1 in the source)
      y[i] = a[i]
    }
    # about g
    func g(x: f32[N]) -> (y: f32[N]) {
      y[i] = x[i]
    }
    # the end
    """)
    assert fmt_ok(src) == dedent("""
    # about the file
    func f(x: f32[N]) -> (y: f32[N]) {
      # before a
      a[i] = x[i] * 2.0
      # before y (column 1 in the source)
      y[i] = a[i]
    }

    # about g
    func g(x: f32[N]) -> (y: f32[N]) {
      y[i] = x[i]
    }

    # the end
    """)


def test_trailing_comments_stay_on_their_line():
    src = ("func f(x: f32[N]) -> (y: f32[N]) {   # header\n"
           "  y[i] = x[i]      #   spaced   out \t \n"
           "}# closing\n")
    assert fmt_ok(src) == ("func f(x: f32[N]) -> (y: f32[N]) {  # header\n"
                           "  y[i] = x[i]  #   spaced   out\n"
                           "}  # closing\n")


EXPLICIT = """\
# explicit layer
func f(x: f32[M, 64]) -> (y: f32[M, 64]) {
  kernel k {  # one block per row
    # rows
    parallel b in 0..M @block {
      alloc r: f32[2] @reg  # registers
      parallel l in 0..32 @lane {
        for t in 0..2 {
          # load two
          load r[t:t + 1] <- x[b, l * 2 + t:l * 2 + t + 1]
          # end of for
        }
        if l == 0 {  # first lane
          r[0:1] = r[0:1] * 2.0
          # end of then
        } else {  # other lanes
          # start of else
          r[0:1] = r[0:1] + 1.0
          # end of else
        }  # after if
        for t in 0..2 {
          store y[b, l * 2 + t:l * 2 + t + 1] <- r[t:t + 1]
        }
        # end of lane
      }
      # end of block
    }
    # end of kernel
  }
  # end of func
}

# end of file
"""


def test_nested_blocks_of_the_explicit_layer_are_canonical():
    assert fmt_ok(EXPLICIT) == EXPLICIT


def test_comments_are_reindented_to_their_block():
    messy = "\n".join(line.strip() for line in EXPLICIT.split("\n"))
    assert fmt_ok(messy) == EXPLICIT


def test_comment_at_block_end_stays_inside_the_block():
    src = "func f() -> () {\n  kernel k {\n  for t in 0..2 {\n    y[t] = 1.0\n# inner end\n  }\n# kernel end\n}\n" \
          "# func end\n}\n"
    assert fmt_ok(src) == "func f() -> () {\n  kernel k {\n    for t in 0..2 {\n      y[t] = 1.0\n      # inner end\n" \
                          "    }\n    # kernel end\n  }\n  # func end\n}\n"
    empty = fmt_ok("func f() -> () {\n  kernel k {\n  for t in 0..2 {\n  # nothing yet\n  }\n  }\n}\n")
    assert empty == "func f() -> () {\n  kernel k {\n    for t in 0..2 {\n      # nothing yet\n    }\n  }\n}\n"


def test_comments_inside_a_statement_move_before_it():
    src = dedent("""
    func f(x: f32[N],  # the input
           w: f32[N]) -> (y: f32[N]) {
      y[i] = x[i] *  # first factor
        # between factors
        w[i]  # second factor
    }
    """)
    assert fmt_ok(src) == dedent("""
    # the input
    func f(x: f32[N], w: f32[N]) -> (y: f32[N]) {
      # first factor
      # between factors
      y[i] = x[i] * w[i]  # second factor
    }
    """)


def test_comments_between_close_and_else_and_in_a_dropped_else():
    src = dedent("""
    func f() -> () {
      kernel k {
        if 1 < 2 {
          y[] = 1.0
        }  # then done
        # still before else
        else {
          y[] = 2.0
        }
        if 1 < 2 {
          y[] = 3.0
        } else {  # an empty else is not printed
        }
      }
    }
    """)
    assert fmt_ok(src) == dedent("""
    func f() -> () {
      kernel k {
        if 1 < 2 {
          y[] = 1.0
          # then done
          # still before else
        } else {
          y[] = 2.0
        }
        if 1 < 2 {
          y[] = 3.0
          # an empty else is not printed
        }
      }
    }
    """)


# ------------------------------------------------------------------ blank lines
def test_blank_lines_one_kept_between_statements_none_at_block_edges():
    src = "\n\n# head\n\n\n\nfunc f() -> () {\n\n  a[] = 1.0\n\n\n  b[] = 2.0\n  # c\n\n  c[] = 3.0\n\n}\n\n\n\n" \
          "func g() -> () {\n  d[] = 1.0\n}\n\n\n# tail\n\n"
    assert fmt_ok(src) == "# head\n\nfunc f() -> () {\n  a[] = 1.0\n\n  b[] = 2.0\n  # c\n\n  c[] = 3.0\n}\n\n" \
                          "func g() -> () {\n  d[] = 1.0\n}\n\n# tail\n"


def test_functions_are_always_separated_by_one_blank_line():
    assert fmt_ok("func f() -> () {\n}\nfunc g() -> () {\n}\n# end\n") == \
        "func f() -> () {\n}\n\nfunc g() -> () {\n}\n\n# end\n"


def test_without_comments_or_blank_lines_fmt_is_print_module():
    for path in CORPUS:
        canonical = print_module(parse_file(path))
        assert format_source(canonical) == canonical, path


# ------------------------------------------------------------------ odd characters
@pytest.mark.parametrize("text", [
    "# a # inside ## twice", "#", "#no space", "# ünïcödé → ∑ 𝔁 中文", "# form\x0cfeed", "# tab\there",
    "# lone\rcarriage", "# line\u2028separator", "# {braces} } {", "# func g() -> () { }",
])
def test_odd_characters_are_kept_verbatim(text):
    src = f"{text}\nfunc f() -> () {{\n  y[] = 1.0 {text}\n  {text}\n}}\n{text}\n"
    assert fmt_ok(src) == f"{text}\nfunc f() -> () {{\n  y[] = 1.0  {text}\n  {text}\n}}\n\n{text}\n"


def test_whitespace_the_lexer_ignores():
    src = "\x0c\n# page 1\r\nfunc f() -> () {\r\n\ty[] = 1.0 # crlf \r\n\x0c\n\ty[] = 2.0\x0c\n}\r\n# end \x0c \n"
    assert fmt_ok(src) == "# page 1\nfunc f() -> () {\n  y[] = 1.0  # crlf\n\n  y[] = 2.0\n}\n\n# end\n"


def test_a_file_of_comments_only():
    assert fmt_ok("# one\n\n\n   # two  \n") == "# one\n\n# two\n"


def test_layout_scan_ignores_braces_in_comments():
    layout = scan_layout("func f() -> () { # { } }\n  y[] = 1.0\n}\n")
    assert [c.text for c in layout.comments] == ["# { } }"]
    assert list(layout.closing.items()) == [((1, 16), (3, 1))]


# ------------------------------------------------------------------ samples
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_idempotent_and_same_ir(path):
    fmt_ok(path.read_text())


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_sample_is_canonical(capsys, path):
    """A new sample must be committed in canonical form: run `gir fmt -i` on it."""
    rc, out, err = gir(capsys, "fmt", "--check", path)
    assert (rc, out, err) == (0, "", ""), f"{path} is not canonical: run `gir fmt -i {path}`"


def _sprinkle(text: str, rng: random.Random) -> str:
    """Comments and blank lines at random places: own lines, ends of lines, and inside statements (a space
    outside a comment becomes a line break with a comment line)."""
    out = []
    for n, line in enumerate(text.split("\n")):
        if line and "#" not in line and rng.random() < 0.3:
            spaces = [k for k, ch in enumerate(line) if ch == " " and line[:k].strip()]
            if spaces:
                k = rng.choice(spaces)
                line = f"{line[:k]}\n# inside {n}\n{line[k + 1:]}"
        if line and "#" not in line.split("\n")[-1] and rng.random() < 0.3:
            line += f"  # trailing {n} ü"
        out.append(line)
        if rng.random() < 0.3:
            out.append(" " * rng.randrange(8) + f"# own {n} # hash")
        if rng.random() < 0.2:
            out.append("")
    return "\n".join(out)


@pytest.mark.parametrize("seed", range(12))
def test_randomly_commented_samples(seed):
    rng = random.Random(seed)
    for path in rng.sample(CORPUS, 6):
        fmt_ok(_sprinkle(path.read_text(), rng))


def test_formatting_in_threads_is_the_same_as_alone():
    texts = [_sprinkle(p.read_text(), random.Random(k)) for k, p in enumerate(SAMPLES)]
    alone = [format_source(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(format_source, texts * 3)) == alone * 3


# ------------------------------------------------------------------ the command
def test_fmt_check_message_and_in_place(capsys, tmp_path):
    f = tmp_path / "c.gir"
    f.write_text("func f() -> () {\n  y[] = 1.0 # keep me\n}\n")
    assert gir(capsys, "fmt", "--check", f) == (1, "", f"{f}: not in canonical form\n")
    assert gir(capsys, "fmt", "-i", f)[0] == 0
    assert f.read_text() == "func f() -> () {\n  y[] = 1.0  # keep me\n}\n"
    assert gir(capsys, "fmt", "--check", f) == (0, "", "")


def test_fmt_in_place_writes_utf8(capsys, tmp_path):
    f = tmp_path / "u.gir"
    f.write_bytes("func f() -> () {\n  y[] = 1.0 # ∑ ü\n}\n".encode())
    assert gir(capsys, "fmt", "-i", f)[0] == 0
    assert f.read_bytes() == "func f() -> () {\n  y[] = 1.0  # ∑ ü\n}\n".encode()


def test_fmt_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"func f() -> () {\n y[] = 1.0 # hi\n}\n")))
    assert gir(capsys, "fmt", "-") == (0, "func f() -> () {\n  y[] = 1.0  # hi\n}\n", "")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"func f() -> () {\n y[] = 1.0\n}\n")))
    assert gir(capsys, "fmt", "--check", "-") == (1, "", "<stdin>: not in canonical form\n")


def test_fmt_in_place_on_stdin_is_a_usage_error(capsys, tmp_path):
    f = tmp_path / "c.gir"
    f.write_text("func f() -> () {\n y[] = 1.0\n}\n")
    rc, out, err = gir(capsys, "fmt", "-i", f, "-")
    assert rc == 2 and out == "" and "standard input" in err
    assert f.read_text() == "func f() -> () {\n y[] = 1.0\n}\n"  # refused before touching any file


def test_fmt_syntax_error_is_located(capsys, tmp_path):
    f = tmp_path / "bad.gir"
    f.write_text("# fine\nfunc f() -> () {\n  y[] = \n}\n")
    with pytest.raises(GirError):
        format_source(f.read_text())
    rc, out, err = gir(capsys, "fmt", f)
    assert rc == 1 and out == "" and err.startswith(f"{f}:4:1: error: syntax error")
