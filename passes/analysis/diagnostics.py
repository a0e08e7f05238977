"""Check diagnostics: a located Diagnostic that names its check and carries a counterexample."""
from __future__ import annotations

from dataclasses import dataclass

from gir.errors import Diagnostic


@dataclass(frozen=True)
class CheckDiagnostic(Diagnostic):
    check: str = ""
    counterexample: tuple[tuple[str, int], ...] = ()

    @property
    def cex(self) -> dict[str, int]:
        return dict(self.counterexample)


def make(check: str, message: str, ins_or_loc, cex: dict | None = None, notes=(), severity="error",
         names: list[str] | None = None) -> CheckDiagnostic:
    """A diagnostic for `check`; `cex` maps z3 names (`t@1`) or sizes to values; only `names`
    (and sizes) are shown when given, as `name=value` in a note."""
    loc = getattr(ins_or_loc, "loc", ins_or_loc)
    items = tuple(sorted((cex or {}).items(), key=lambda kv: (("@" in kv[0]), kv[0])))
    if names is not None:
        items = tuple((k, v) for k, v in items if k in names or k.split("@")[0] in names)
    all_notes = list(notes)
    if items:
        all_notes.append("counterexample: " + ", ".join(f"{k}={v}" for k, v in items))
    if hasattr(ins_or_loc, "kind") and hasattr(ins_or_loc, "name"):
        all_notes.append(f"instruction {ins_or_loc.name} ({ins_or_loc.kind})")
    return CheckDiagnostic(f"[{check}] {message}", loc, tuple(all_notes), severity, check, items)
