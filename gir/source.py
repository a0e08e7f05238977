"""Reading GIR source text: bytes → str with located decoding errors, lines as the lexer counts them.

The lexer (Lark) counts lines by "\\n" only, so every place that quotes a source line must split the same
way: `str.splitlines()` also breaks at \\v, \\f, \\x1c-\\x1e, U+0085, U+2028 and U+2029, and would quote
the wrong line after one of them. Quoted lines show control characters as visible pictures (U+2400...).
"""
from __future__ import annotations

import sys
from pathlib import Path

from gir.errors import GirError, Loc

STDIN = "-"
STDIN_NAME = "<stdin>"

_BOMS = {b"\xff\xfe": "UTF-16 (little-endian)", b"\xfe\xff": "UTF-16 (big-endian)"}


def source_lines(text: str) -> list[str]:
    """Lines split at "\\n" only (a trailing "\\r" dropped), as the lexer numbers them."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def visible(line: str) -> str:
    """A source line safe to print under a caret: control characters become one visible character each
    (tabs stay, so that the caret below lines up)."""
    out = []
    for ch in line:
        code = ord(ch)
        if ch == "\t":
            out.append(ch)
        elif code < 0x20:
            out.append(chr(0x2400 + code))
        elif code == 0x7F:
            out.append("\u2421")
        elif 0x80 <= code < 0xA0 or code in (0x2028, 0x2029, 0xFEFF):
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


QUOTE_WIDTH = 160  # longest quoted source line; longer ones are cut around the caret


def caret_lines(line: str, col: int, end_col: int | None = None) -> list[str]:
    """The quoted line and its caret (`^~~~` up to end_col), indented by two spaces. Tabs in the line stay
    tabs under it, so the caret lines up in a terminal; a very long line is cut around the caret."""
    width = end_col - col if end_col and end_col > col else 1
    start = 0
    if len(line) > QUOTE_WIDTH:
        start = max(0, min(col - 1 - QUOTE_WIDTH // 2, len(line) - QUOTE_WIDTH))
    shown = visible(line[start:start + QUOTE_WIDTH])
    pad = "".join(ch if ch == "\t" else " " for ch in shown[:max(col - 1 - start, 0)])
    width = max(1, min(width, len(shown) - len(pad) + 1))
    head = "\u2026" if start else ""
    tail = "\u2026" if start + QUOTE_WIDTH < len(line) else ""
    return [f"  {head}{shown}{tail}", "  " + " " * len(head) + pad + "^" + "~" * (width - 1)]


def describe_char(ch: str) -> str:
    """`'x'` for a printable character, `U+000B` for anything else."""
    if ch.isprintable() and not ch.isspace():
        return f"'{ch}'"
    return f"U+{ord(ch):04X}"


def display_name(path: str | Path) -> str:
    return STDIN_NAME if str(path) == STDIN else str(path)


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a file, or of standard input for "-"; GirError when it cannot be read."""
    if str(path) == STDIN:
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except IsADirectoryError:
        raise GirError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise GirError(f"cannot read {path}: {exc.strerror or exc}") from None


def decode(data: bytes, name: str) -> str:
    """UTF-8 text (a leading BOM dropped); a located GirError at the first byte that is not UTF-8."""
    for bom, what in _BOMS.items():
        if data.startswith(bom):
            raise GirError(f"{name} is encoded as {what}; GIR source must be UTF-8",
                           Loc(name, 1, 1, None, None), ("convert it, e.g. `iconv -f UTF-16 -t UTF-8`",))
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        line_start = data.rfind(b"\n", 0, start) + 1
        col = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
        shown = data.decode("utf-8", errors="replace")
        raise GirError(f"invalid UTF-8 byte 0x{data[start]:02x}; GIR source must be UTF-8",
                       Loc(name, line, col, None, shown)) from None


def read_source(path: str | Path) -> tuple[str, str]:
    """(text, the name diagnostics use) of a file or of standard input ("-")."""
    name = display_name(path)
    return decode(read_bytes(path), name), name
