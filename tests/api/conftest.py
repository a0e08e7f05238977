"""Every test here gets its own empty compile cache: gir.compile never touches the user's cache from the suite."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "gir-cache"
    monkeypatch.setenv("GIR_CACHE_DIR", str(path))
    return path
