"""One import namespace: passes/, codegen/ and targets/ install and import as gir.passes, gir.codegen and
gir.targets (setup.py's package-dir mapping); nothing named `passes`, `codegen` or `targets` is installed at the
top level, and nothing in the repository imports those names any more."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OLD = re.compile(r"^\s*(from|import)\s+(passes|codegen|targets)\b", re.M)

SMOKE = r"""
import sys
sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__name__", "") != "_EditableFinder"]
import numpy as np
import gir
import gir.passes, gir.codegen, gir.targets
root = sys.argv[1]
for mod in (gir, gir.passes, gir.codegen, gir.targets):
    assert mod.__file__.startswith(root), (mod.__name__, mod.__file__, root)
kernel = gir.compile("func neg(x: f32[N]) -> (y: f32[N]) { y[i] = -x[i] }", target="sim")
x = np.arange(7, dtype=np.float32)
assert np.array_equal(kernel(x), -x)
top = sorted({m.split(".")[0] for m in sys.modules} & {"passes", "codegen", "targets"})
assert not top, top
print("ok")
"""


def _smoke(root: Path, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", SMOKE, str(root)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.slow
def test_built_packages_are_one_namespace(tmp_path):
    """setup.py's build step (what a wheel holds): one top-level package, data files under it, and it imports
    and compiles from a directory outside the repository."""
    out = tmp_path / "build"
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    subprocess.run(["rm", "-rf", str(REPO / "build")], check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["gir"]
    for data in ("grammar.lark", "passes/machines/h100.json", "passes/machines/mlu370.json",
                 "targets/mlu/grammar.lark"):
        assert (out / "gir" / data).is_file(), data
    _smoke(out, tmp_path)


def test_source_checkout_imports_without_install(tmp_path):
    """From a source checkout on PYTHONPATH (setuptools' editable finder removed), gir.passes & co. resolve to
    the repository's top-level folders (gir/_layout.py)."""
    _smoke(REPO, tmp_path)


def test_nothing_imports_the_old_top_level_names():
    offenders = []
    for path in REPO.rglob("*.py"):
        if any(part in (".git", "build", "__pycache__") or part.endswith(".egg-info") for part in path.parts):
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(REPO)}: {m.group(0).strip()}" for m in OLD.finditer(text)]
    assert not offenders, offenders
