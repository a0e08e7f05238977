"""Textual pass pipelines (MLIR syntax): `canonicalize,cse,inline-elementwise{max_uses=2}`.

    pipeline := [pass ("," pass)*]
    pass     := NAME ["{" [option (sep option)*] "}"]      sep: whitespace or ","
    option   := KEY "=" value                                KEY: the field name ('-' may stand for '_')
    value    := atom ("," atom)* | "[" [atom ("," atom)*] "]"
    atom     := bare word (no whitespace and none of , { } [ ] = " \\) | "double-quoted" (\\" and \\\\ escapes)

Inside a value, a comma followed by `KEY=` starts the next option; any other comma continues a list, so
`tile{sizes=32,32 unroll=true}` and `tile{sizes=[32,32],unroll=true}` mean the same. `str(pipeline)` prints the
canonical form: options separated by one space, lists without brackets (`[]` when empty), only options that
differ from their defaults, and `parse_pipeline(str(p)) == p`.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from gir.errors import GirError, Loc
from gir.passes.base import ModulePass, OptionError
from gir.passes.registry import Registry, registry, unknown_pass_message

# The default optimisation pipeline of `gir opt` / `gir compile`: extend it here, in this one place.
DEFAULT_PIPELINE = "canonicalize,cse,hoist-reductions,inline-elementwise,canonicalize,dce"

PIPELINE_SOURCE = "<pipeline>"
_DELIMS = set(',{}[]="\\')


@dataclass(frozen=True)
class PassPipeline:
    """An ordered tuple of configured pass instances (with where each was written, for located errors)."""
    passes: tuple[ModulePass, ...] = ()
    spans: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)
    text: str | None = field(default=None, compare=False, repr=False)

    def error_at(self, k: int, message: str, notes: Iterable[str] = ()) -> GirError:
        """An error about pass k, with a caret under it in the pipeline text when it came from text."""
        if self.text is None or k >= len(self.spans):
            return GirError(message, None, list(notes) + [f"pipeline: {self}"])
        start, end = self.spans[k]
        line = self.text.count("\n", 0, start) + 1
        col = start - (self.text.rfind("\n", 0, start) + 1) + 1
        return GirError(message, Loc(PIPELINE_SOURCE, line, col, col + max(1, end - start), self.text), list(notes))

    def __str__(self) -> str:
        return ",".join(p.pipeline_text() for p in self.passes)

    def __iter__(self) -> Iterator[ModulePass]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    def prefix(self, n: int) -> "PassPipeline":
        """The first `n` passes (used for reproducer commands)."""
        return PassPipeline(self.passes[:n], self.spans[:n], self.text)

    def __add__(self, other: "PassPipeline") -> "PassPipeline":
        return PassPipeline(self.passes + tuple(other.passes))


def default_pipeline(reg: Registry | None = None) -> PassPipeline:
    return parse_pipeline(DEFAULT_PIPELINE, reg)


def parse_pipeline(text: str, reg: Registry | None = None, source: str = PIPELINE_SOURCE) -> PassPipeline:
    """Parse pipeline text; errors are GirErrors with a caret under the offending column of `text`."""
    return _Parser(text, reg if reg is not None else registry(), source).pipeline()


class _Parser:
    def __init__(self, text: str, reg: Registry, source: str):
        self.text, self.reg, self.source, self.pos = text, reg, source, 0

    # ---------------------------------------------------------------- helpers
    def error(self, message: str, start: int, end: int | None = None, notes: Iterable[str] = ()) -> GirError:
        line = self.text.count("\n", 0, start) + 1
        line_start = self.text.rfind("\n", 0, start) + 1
        col = start - line_start + 1
        end_col = col + (end - start) if end is not None and end > start else None
        return GirError(message, Loc(self.source, line, col, end_col, self.text), list(notes))

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self) -> bool:
        start = self.pos
        while self.peek().isspace():
            self.pos += 1
        return self.pos > start

    def expect(self, ch: str, what: str) -> None:
        if self.peek() != ch:
            raise self.unexpected(what)
        self.pos += 1

    def unexpected(self, expected: str) -> GirError:
        found = f"'{self.peek()}'" if self.peek() else "end of pipeline"
        return self.error(f"pipeline syntax error: expected {expected}, found {found}", self.pos, self.pos + 1)

    def word(self) -> tuple[str, int]:
        start = self.pos
        while self.peek() and not self.peek().isspace() and self.peek() not in _DELIMS:
            self.pos += 1
        return self.text[start:self.pos], start

    # ---------------------------------------------------------------- grammar
    def pipeline(self) -> PassPipeline:
        passes: list[ModulePass] = []
        spans: list[tuple[int, int]] = []
        self.skip_ws()
        if not self.peek():
            return PassPipeline((), (), self.text)
        while True:
            start = self.pos
            passes.append(self.one_pass())
            spans.append((start, self.pos))
            self.skip_ws()
            if not self.peek():
                return PassPipeline(tuple(passes), tuple(spans), self.text)
            self.expect(",", "',' between passes or '{' for options")
            self.skip_ws()

    def one_pass(self) -> ModulePass:
        name, start = self.word()
        if not name:
            raise self.unexpected("a pass name")
        if name not in self.reg:
            raise self.error(unknown_pass_message(name), start, self.pos, self.reg.suggestions(name))
        cls = self.reg.get(name).cls
        values = self.options(cls, name) if self._at_brace() else {}
        missing = [s.name for s in cls.options() if s.required and s.name not in values]
        if missing:
            raise self.error(f"pass '{name}' requires option '{missing[0]}'", start, self.pos,
                             [f"e.g. {name}{{{missing[0]}=...}}"])
        try:
            return cls.from_options(values)
        except OptionError as exc:
            raise self.error(f"invalid options for pass '{name}': {exc}", start, self.pos) from None

    def _at_brace(self) -> bool:
        save = self.pos
        self.skip_ws()
        if self.peek() == "{":
            return True
        self.pos = save
        return False

    def options(self, cls: type[ModulePass], pass_name: str) -> dict:
        specs = {s.name: s for s in cls.options()}
        values: dict = {}
        brace = self.pos
        self.pos += 1  # '{'
        self.skip_ws()
        while self.peek() != "}":
            if not self.peek():
                raise self.error(f"pipeline syntax error: missing '}}' after the options of pass '{pass_name}'",
                                 self.pos, None, [f"the options begin at column {brace + 1}"])
            key, start = self.word()
            if not key:
                raise self.unexpected("an option name or '}'")
            field = key.replace("-", "_")
            if field not in specs:
                known = ", ".join(specs) or "none"
                raise self.error(f"pass '{pass_name}' has no option '{key}'", start, self.pos,
                                 _close(field, list(specs)) + [f"options of '{pass_name}': {known}"])
            if field in values:
                raise self.error(f"option '{key}' given twice", start, self.pos)
            self.skip_ws()
            self.expect("=", f"'=' after option '{key}'")
            self.skip_ws()
            value_start = self.pos
            tokens = self.value()
            try:
                values[field] = specs[field].convert(tokens)
            except OptionError as exc:
                raise self.error(f"{exc} (pass '{pass_name}')", value_start, self.pos) from None
            spaced = self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                self.skip_ws()
            elif self.peek() and self.peek() != "}" and not spaced:
                raise self.unexpected("',', whitespace or '}' after an option value")
        self.pos += 1  # '}'
        return values

    def value(self) -> list[str]:
        if self.peek() == "[":
            self.pos += 1
            self.skip_ws()
            tokens = []
            while self.peek() != "]":
                if tokens:
                    self.expect(",", "',' or ']' in a list")
                    self.skip_ws()
                tokens.append(self.atom())
                self.skip_ws()
            self.pos += 1
            return tokens
        tokens = [self.atom()]
        while self.peek() == "," and not self._next_is_key():
            self.pos += 1
            tokens.append(self.atom())
        return tokens

    def _next_is_key(self) -> bool:
        """After a ',' in a value: does `KEY =` follow (a new option) rather than a list element?"""
        save = self.pos
        self.pos += 1
        self.skip_ws()
        key, _ = self.word()
        self.skip_ws()
        is_key = bool(key) and self.peek() == "="
        self.pos = save
        return is_key

    def atom(self) -> str:
        self.skip_ws()
        if self.peek() == '"':
            return self.quoted()
        text, _ = self.word()
        if not text:
            raise self.unexpected("an option value")
        return text

    def quoted(self) -> str:
        start = self.pos
        self.pos += 1
        out = []
        while self.peek() != '"':
            ch = self.peek()
            if not ch:
                raise self.error("pipeline syntax error: unterminated string", start, start + 1)
            if ch == "\\" and self.pos + 1 < len(self.text) and self.text[self.pos + 1] in '"\\':
                self.pos += 1
                ch = self.peek()
            out.append(ch)
            self.pos += 1
        self.pos += 1
        return "".join(out)


def _close(name: str, known: list[str]) -> list[str]:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return [f"did you mean '{close[0]}'?"] if close else []
