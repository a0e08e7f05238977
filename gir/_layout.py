"""`gir.passes`, `gir.codegen` and `gir.targets` live in the repository's top-level folders passes/, codegen/ and
targets/ (the project layout), but are subpackages of `gir`. An installed wheel puts them under gir/ (setup.py's
package-dir mapping) and an editable install maps them with setuptools' finder; this finder covers a source
checkout used without installing (PYTHONPATH=. or `python -m` from the repository root). It maps only those three
names, and only when the folder is not already under gir/."""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

SUBPACKAGES = ("passes", "codegen", "targets")


class _SiblingFinder(importlib.abc.MetaPathFinder):
    def __init__(self, folders: dict[str, Path]):
        self.folders = folders

    def find_spec(self, fullname, path=None, target=None):
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])


def install() -> None:
    here = Path(__file__).resolve().parent
    folders = {f"gir.{name}": here.parent / name for name in SUBPACKAGES
               if not (here / name).is_dir() and (here.parent / name / "__init__.py").is_file()}
    if folders and not any(isinstance(f, _SiblingFinder) for f in sys.meta_path):
        sys.meta_path.append(_SiblingFinder(folders))
