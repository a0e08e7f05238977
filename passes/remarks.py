"""Optimisation remarks (LLVM's -Rpass / -Rpass-missed / -Rpass-analysis): what a pass did, what it could not
do and why, located at the user's source.

`gir compile -R` prints every remark; a *missed* remark that leaves a kernel unfused or scalar is printed on
stderr even without -R, so a user never learns about a slow kernel from a benchmark first.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir.errors import Diagnostic, Loc

KINDS = ("passed", "missed", "analysis")
_FLAG = {"passed": "-Rpass", "missed": "-Rpass-missed", "analysis": "-Rpass-analysis"}


@dataclass(frozen=True)
class Remark:
    pass_name: str
    kind: str                    # passed | missed | analysis
    message: str
    loc: Loc | None = None
    notes: tuple[str, ...] = ()

    def format(self) -> str:
        """`file:line:col: remark: message [-Rpass-missed=fuse]`, the source line and a caret."""
        d = Diagnostic(f"{self.message} [{_FLAG[self.kind]}={self.pass_name}]", self.loc, self.notes, "remark")
        return d.format()


def select(remarks, all_: bool) -> list[Remark]:
    """The remarks to show: all of them with -R, otherwise only the missed ones (always shown)."""
    return [r for r in remarks if all_ or r.kind == "missed"]
