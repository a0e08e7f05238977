"""passes/ sits below codegen/: no module under passes/ imports gir.codegen (issue 12, item 1).

KNOWN lists exceptions with their reasons (none left: the MLU's software pipelining is a pass,
passes/schedule_mlu/swpipe.py, and the NRAM a tile needs is counted from the IR, tiles_nram.py); the test fails on
any import not listed, and on a KNOWN entry that is gone (so that the list only shrinks)."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

KNOWN: set[str] = set()   # module files allowed to import gir.codegen, each with its reason


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _codegen_imports() -> set[tuple[str, str]]:
    found = set()
    for path in sorted((REPO / "passes").rglob("*.py")):
        for name in _imports(path):
            if name == "gir.codegen" or name.startswith("gir.codegen."):
                found.add((path.relative_to(REPO).as_posix(), name))
    return found


def test_passes_do_not_import_codegen():
    found = _codegen_imports()
    new = sorted((p, m) for p, m in found if p not in KNOWN)
    assert not new, "modules under passes/ import gir.codegen: " + ", ".join(f"{p} imports {m}" for p, m in new)
    gone = KNOWN - {p for p, _ in found}
    assert not gone, f"no longer importing gir.codegen, drop from KNOWN: {sorted(gone)}"


def test_the_scan_sees_function_level_imports(tmp_path):
    """The scan finds imports inside functions and `from gir import codegen` spelled as a from-import."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from gir.codegen.mlu import emit_func\n    from gir import codegen\n")
    names = _imports(f)
    assert "gir.codegen.mlu" in names and "gir.codegen" in names
