"""Fixtures for pass tests: fake installed distributions (a `.dist-info` directory on sys.path), so plugins
are discovered through real `importlib.metadata` entry points without pip, offline and fast."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from gir.passes.registry import reset_registry

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "samples" / "plugins" / "gir-plugin-example"
SAMPLES = sorted((REPO / "samples").glob("*.gir"))


def make_dist(root: Path, name: str, version: str, entry_points: dict[str, str]) -> Path:
    """Write `<root>/<name>-<version>.dist-info` with METADATA and a `gir.passes` entry_points.txt."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = ["[gir.passes]"] + [f"{k} = {v}" for k, v in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return info


@pytest.fixture
def fake_dists(tmp_path, monkeypatch):
    """`install(name, entry_points, version="1.0")` makes a fake distribution visible; undone after the test."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    reset_registry()

    def install(name: str, entry_points: dict[str, str], version: str = "1.0") -> Path:
        return make_dist(root, name, version, entry_points)

    yield install
    reset_registry()


def plugin_metadata() -> tuple[str, str, dict[str, str]]:
    """Name, version and `gir.passes` entry points, read from the example plugin's own pyproject.toml."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((PLUGIN_DIR / "pyproject.toml").read_text())["project"]
    return project["name"], project["version"], project["entry-points"]["gir.passes"]


@pytest.fixture
def plugin(fake_dists, monkeypatch):
    """The example plugin from samples/plugins, 'installed' from the metadata of its pyproject.toml: its
    source directory goes on sys.path, and a .dist-info carries its entry points."""
    name, version, entry_points = plugin_metadata()
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    fake_dists(name, entry_points, version)
    yield
    for mod in [m for m in sys.modules if m.startswith("gir_plugin_example")]:
        monkeypatch.delitem(sys.modules, mod)


def _sample_refs():
    spec = importlib.util.spec_from_file_location("_gir_sample_refs", REPO / "tests" / "sample_refs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE_REFS = _sample_refs()


def sample_sizes(func) -> dict[str, int]:
    """The first size binding tests/sample_refs.py lists for a sample (small, non-powers of two)."""
    entry = SAMPLE_REFS.REFERENCES.get(func.name)
    if entry:
        return dict(entry[1][0])
    return {s: 5 + k for k, s in enumerate(func.size_symbols())}


def random_inputs(func, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh random inputs, never zeros; constrained inputs (class indices) come from sample_refs."""
    from gir.evaluate import random_inputs as base

    inputs = base(func, sizes, rng)
    makers = SAMPLE_REFS.INPUT_MAKERS.get(func.name, {})
    for p in func.params:
        if p.name in makers:
            value = makers[p.name](inputs[p.name].shape, sizes, rng)
            inputs[p.name] = np.asarray(value).astype(p.type.dtype.numpy)
        elif p.type.dtype.is_float:
            inputs[p.name][inputs[p.name] == 0] = 0.5
    return inputs


TOLERANCE = {"f32": 1e-6, "f16": 2e-3, "bf16": 1e-2}


def assert_same_semantics(before, after, seed: int = 0, sizes: dict[str, int] | None = None) -> None:
    """Evaluate two versions of a function (float64) on the same random inputs; results must agree to the
    rounding of their declared types."""
    from gir.evaluate import evaluate

    sizes = sizes if sizes is not None else sample_sizes(before)
    inputs = random_inputs(before, sizes, np.random.default_rng(seed))
    want = evaluate(before, {k: v.copy() for k, v in inputs.items()}, sizes, compute_dtype=np.float64)
    got = evaluate(after, {k: v.copy() for k, v in inputs.items()}, sizes, compute_dtype=np.float64)
    assert want.keys() == got.keys()
    for r in before.results:
        rtol = TOLERANCE.get(r.type.dtype.value, 0.0)
        np.testing.assert_allclose(np.asarray(got[r.name], np.float64), np.asarray(want[r.name], np.float64),
                                   rtol=rtol, atol=rtol * 1e-3, equal_nan=True, err_msg=f"result {r.name}")
