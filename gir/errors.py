"""Diagnostics with source locations: `file:line:col: error: message`, the line, a caret."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int
    end_col: int | None = None
    source: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self) -> str | None:
        if self.source is None:
            return None
        from gir.source import source_lines  # lines as the lexer counts them ("\n" only)
        lines = source_lines(self.source)
        return lines[self.line - 1] if 0 < self.line <= len(lines) else None


@dataclass(frozen=True)
class Diagnostic:
    message: str
    loc: Loc | None = None
    notes: tuple[str, ...] = ()
    severity: str = "error"

    def format(self) -> str:
        head = f"{self.loc}: " if self.loc else ""
        out = [f"{head}{self.severity}: {self.message}"]
        line = self.loc.source_line() if self.loc else None
        if line is not None:
            from gir.source import caret_lines
            out.extend(caret_lines(line, self.loc.col, self.loc.end_col))
        out.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(out)


class GirError(Exception):
    """A user-facing error: one or more diagnostics. Never shown as a traceback."""

    def __init__(self, message: str | None = None, loc: Loc | None = None,
                 notes: tuple[str, ...] | list[str] = (),
                 diagnostics: list[Diagnostic] | None = None):
        if diagnostics is None:
            diagnostics = [Diagnostic(message or "error", loc, tuple(notes))]
        self.diagnostics = list(diagnostics)
        super().__init__(self.format())

    @property
    def message(self) -> str:
        return self.diagnostics[0].message

    @property
    def loc(self) -> Loc | None:
        return self.diagnostics[0].loc

    def format(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)


class DiagnosticCollector:
    """Gathers diagnostics; `raise_if_any()` raises them together as one GirError."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, loc: Loc | None, *notes: str) -> None:
        self.diagnostics.append(Diagnostic(message, loc, tuple(notes)))

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise GirError(diagnostics=self.diagnostics)


class UsageError(GirError):
    """A mistake on the command line (a flag, a size binding, a target name): exit status 2, no location."""
