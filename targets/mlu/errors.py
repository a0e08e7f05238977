"""Diagnostics of the MLU simulator: every error names a place in the program text.

Format (MLIR-style): ``file:line:col: error: message``, the source line, a caret under the column, then notes.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A place in a program text: 1-based line and column, plus the text of that line."""

    filename: str
    line: int
    col: int
    source_line: str = ""

    def render(self, message: str, notes: tuple[str, ...] = ()) -> str:
        out = [f"{self.filename}:{self.line}:{self.col}: error: {message}"]
        if self.source_line:
            out.append("  " + self.source_line.rstrip("\n"))
            out.append("  " + " " * (self.col - 1) + "^")
        out.extend(f"note: {note}" for note in notes)
        return "\n".join(out)


class MluError(Exception):
    """A rejected program: a parse error, a type error, or a violation found while simulating.

    ``message`` is the bare reason, ``span`` where it happened (None until a statement attaches it), ``notes`` extra
    lines (e.g. which task was running). ``str(err)`` is the full rendered diagnostic.
    """

    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()):
        self.message = message
        self.span = span
        self.notes = tuple(notes)
        super().__init__(self._render())

    def _render(self) -> str:
        if self.span is None:
            text = f"error: {self.message}"
            return "\n".join([text, *(f"note: {note}" for note in self.notes)])
        return self.span.render(self.message, self.notes)

    def located(self, span: Span) -> "MluError":
        """This error with a location attached (no-op when it already has one)."""
        if self.span is not None:
            return self
        err = MluError(self.message, span, self.notes)
        err.__traceback__ = self.__traceback__
        return err

    def with_note(self, note: str) -> "MluError":
        err = MluError(self.message, self.span, self.notes + (note,))
        err.__traceback__ = self.__traceback__
        return err

    def __str__(self) -> str:
        return self._render()
