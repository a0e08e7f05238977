"""Comments and blank lines through `gir fmt`: the canonical text of a file, keeping what the parser drops.

`format_source(text)` parses the text, lexes it once more with the ignored terminals kept (`gir.parser.lex_all`)
and prints the module with `gir.printer`, putting every comment back. Each printed line comes from a stretch of
source tokens: a simple statement, a block's header up to its `{`, a `} else {`, a closing `}`. A comment goes

- at the end of a printed line when it follows that line's last token on the same source line (a trailing
  comment): two spaces, then the comment;
- otherwise on a line of its own before the printed line whose first token follows it, indented as that line;
  before a `}` or `} else {` it stays inside the block, indented as the block's body; after the last function
  it stays at the end of the file;
- a comment between two tokens of one printed line (inside a statement or header written over several source
  lines, between `}` and `else`) moves to a line of its own before that printed line, in source order.

The comment's text runs from `#` to the end of its line and is kept verbatim, trailing whitespace removed.

Blank lines: one blank line separates a function from whatever follows it (as `print_module` prints). Elsewhere,
one blank line stands between two printed lines (statements, headers, comments) where the source had one or more
blank lines between them; never at the start of a block (after `{`), never before a `}` or `} else {`, never at
the start of the file. A line holding only spaces, tabs, form feeds or a carriage return counts as blank.

The result is a fixed point (`format_source(format_source(x)) == format_source(x)`) and parses to the same IR
as `x`. Without comments and blank lines it is exactly `print_module(parse_text(x))`.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from gir import ir
from gir.parser import lex_all, parse_text
from gir.printer import INDENT, Line, func_lines
from gir.source import source_lines

Pos = tuple[int, int]  # (line, column), both 1-based, as the lexer counts them

_BLANK = " \t\f\r"  # the whitespace the grammar ignores (common.WS), newline aside


@dataclass(frozen=True)
class Comment:
    line: int
    col: int
    text: str  # from '#' to the end of the line, trailing whitespace removed

    @property
    def pos(self) -> Pos:
        return (self.line, self.col)


@dataclass(frozen=True)
class SourceLayout:
    """What the printer needs of a source text beyond its IR: comments, token starts, braces, blank lines."""
    comments: tuple[Comment, ...]
    tokens: tuple[Pos, ...]        # starts of the significant tokens (not comments, not whitespace), in order
    opening: tuple[Pos, ...]       # starts of the `{` tokens, in order
    closing: dict[Pos, Pos]        # `{` → its matching `}`
    blank: tuple[int, ...]         # numbers of the lines that hold only whitespace, ascending

    def blank_between(self, after: int, before: int) -> bool:
        """Whether a blank line lies strictly between source lines `after` and `before`."""
        i = bisect.bisect_right(self.blank, after)
        return i < len(self.blank) and self.blank[i] < before

    def block_ends(self, node) -> list[Pos]:
        """The `}` of each block of a function or block statement, in source order (an `if` with an
        `else` block has two)."""
        lb = self._opening_from(_loc_pos(node))
        ends = [self.closing[lb]]
        if isinstance(node, ir.If) and node.orelse:
            ends.append(self.closing[self._opening_from((ends[0][0], ends[0][1] + 1))])
        return ends

    def _opening_from(self, pos: Pos) -> Pos:
        i = bisect.bisect_left(self.opening, pos)
        if i == len(self.opening):
            raise ValueError(f"no '{{' after line {pos[0]}, column {pos[1]}: the IR does not come from this text")
        return self.opening[i]


def scan_layout(source: str) -> SourceLayout:
    """Comments, token starts, matching braces and blank lines of a text that parses."""
    comments, tokens, opening, closing, stack = [], [], [], {}, []
    for tok in lex_all(source):
        pos = (tok.line, tok.column)
        if tok.type == "COMMENT":
            comments.append(Comment(tok.line, tok.column, str(tok).rstrip()))
            continue
        if tok.type == "WS":
            continue
        tokens.append(pos)
        if tok.type == "LBRACE":
            opening.append(pos)
            stack.append(pos)
        elif tok.type == "RBRACE" and stack:
            closing[stack.pop()] = pos
    blank = tuple(n for n, text in enumerate(source_lines(source), 1) if not text.strip(_BLANK))
    return SourceLayout(tuple(comments), tuple(tokens), tuple(opening), closing, blank)


def format_source(source: str, filename: str = "<string>") -> str:
    """The canonical text of `source`, comments kept (GirError if it does not parse)."""
    module = parse_text(source, filename)
    return format_module(module, scan_layout(source))


def format_module(module: ir.Module, layout: SourceLayout) -> str:
    """`print_module(module)` with the comments and blank lines of the text `module` was parsed from."""
    lines = [line for f in module.funcs for line in func_lines(f)]
    starts = [_start(line, layout) for line in lines]
    if any(a >= b for a, b in zip(starts, starts[1:])):
        raise ValueError("printed lines out of source order: the IR does not come from this text")
    before, trailing, at_end = _attach(layout, starts)
    last_lines = _last_lines(layout, starts)

    out: list[str] = []
    prev: tuple[str, int] | None = None  # (kind, last source line) of the unit printed last

    def emit(text: str, kind: str, first: int, last: int, may_blank: bool = True) -> None:
        nonlocal prev
        if prev is not None and may_blank:
            if prev[0] == "func_end" or (prev[0] != "open" and layout.blank_between(prev[1], first)):
                out.append("")
        out.append(text)
        prev = (kind, last)

    for i, line in enumerate(lines):
        closes = line.role in ("else", "close")
        pad = INDENT * (line.depth + 1 if closes else line.depth)
        for c in before[i]:
            emit(pad + c.text, "comment", c.line, c.line)
        text = line.render() + (f"  {trailing[i].text}" if trailing[i] else "")
        if line.role in ("open", "else"):
            kind = "open"
        elif line.role == "close" and isinstance(line.node, ir.Func):
            kind = "func_end"
        else:
            kind = "line"
        emit(text, kind, starts[i][0], last_lines[i], may_blank=not closes)
    for c in at_end:
        emit(c.text, "comment", c.line, c.line)
    return "\n".join(out) + "\n" if out else ""


def _attach(layout: SourceLayout, starts: list[Pos]):
    """Each comment's place: (comments before printed line i, the trailing comment of line i, comments at the
    end of the file)."""
    before: list[list[Comment]] = [[] for _ in starts]
    inside: list[list[Comment]] = [[] for _ in starts]
    trailing: list[Comment | None] = [None] * len(starts)
    at_end: list[Comment] = []
    tokens = layout.tokens
    for c in layout.comments:
        k = bisect.bisect_left(tokens, c.pos)
        prev = tokens[k - 1] if k > 0 else None
        nxt = tokens[k] if k < len(tokens) else None
        j = bisect.bisect_left(starts, nxt) if nxt is not None else len(starts)
        if nxt is not None and (j == len(starts) or starts[j] != nxt):
            inside[bisect.bisect_right(starts, nxt) - 1].append(c)  # within a printed line's tokens
        elif prev is not None and prev[0] == c.line:
            trailing[j - 1] = c                                      # after the last token of line j - 1
        elif nxt is None:
            at_end.append(c)
        else:
            before[j].append(c)                                      # on its own line before line j
    for i, found in enumerate(inside):
        before[i].extend(found)
    return before, trailing, at_end


def _last_lines(layout: SourceLayout, starts: list[Pos]) -> list[int]:
    """The source line of each printed line's last token (the token before the next printed line's first)."""
    if not starts:
        return []
    ends = [bisect.bisect_left(layout.tokens, start) - 1 for start in starts[1:]] + [len(layout.tokens) - 1]
    return [layout.tokens[k][0] for k in ends]


def _start(line: Line, layout: SourceLayout) -> Pos:
    """The source position of the first token of a printed line."""
    if line.role in ("stmt", "open"):
        return _loc_pos(line.node)
    ends = layout.block_ends(line.node)
    if line.role == "else":
        return ends[0]
    return ends[-1]


def _loc_pos(node) -> Pos:
    if node.loc is None:
        raise ValueError(f"{type(node).__name__} has no source location: the IR does not come from a text")
    return (node.loc.line, node.loc.col)
