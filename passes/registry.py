"""Pass discovery through the entry-point group `gir.passes` (built-ins register the same way).

Each entry point is `pass-name = package.module:PassClass`. The registry loads every entry point, checks the
class (`passes.base.check_pass_class`), checks that the entry-point name equals the class's `name`, and records
where the pass came from (distribution, version, entry point). Two entry points with one name are an error
naming both origins.
"""
from __future__ import annotations

import difflib
import functools
import importlib.metadata as md
from dataclasses import dataclass
from typing import Iterable, Iterator

from gir.errors import GirError
from gir.passes.base import ModulePass, check_pass_class

GROUP = "gir.passes"


@dataclass(frozen=True)
class PassInfo:
    """A registered pass and where it came from."""
    name: str
    cls: type[ModulePass]
    distribution: str | None = None  # e.g. "gir-compiler"
    version: str | None = None
    entry_point: str | None = None  # e.g. "gir.passes.builtin.cse:CommonSubexpressionElimination"

    @property
    def origin(self) -> str:
        """`gir-compiler 0.1.0`, or the module for passes registered without a distribution."""
        if self.distribution:
            return f"{self.distribution} {self.version}" if self.version else self.distribution
        return self.entry_point or f"{self.cls.__module__}:{self.cls.__qualname__}"

    def describe(self) -> str:
        where = f" (entry point {self.name} = {self.entry_point})" if self.entry_point else ""
        return f"{self.origin}{where}"


class Registry:
    """Passes by name. `Registry.discover()` reads entry points; `register` adds a class directly (tests)."""

    def __init__(self, infos: Iterable[PassInfo] = ()):
        self._infos: dict[str, PassInfo] = {}
        for info in infos:
            self.add(info)

    @classmethod
    def discover(cls, group: str = GROUP) -> "Registry":
        entry_points = _unique(md.entry_points(group=group))
        _check_duplicates(entry_points)
        return cls(_load(ep) for ep in entry_points)

    def add(self, info: PassInfo) -> PassInfo:
        old = self._infos.get(info.name)
        if old is not None and old != info:
            raise duplicate_error(info.name, [old.describe(), info.describe()])
        self._infos[info.name] = info
        return info

    def register(self, cls: type[ModulePass], distribution: str | None = None) -> PassInfo:
        origin = f"{cls.__module__}:{cls.__qualname__}"
        check_pass_class(cls, origin)
        return self.add(PassInfo(cls.name, cls, distribution, None, origin))

    def get(self, name: str) -> PassInfo:
        info = self._infos.get(name)
        if info is None:
            raise GirError(unknown_pass_message(name), notes=self.suggestions(name))
        return info

    def suggestions(self, name: str) -> list[str]:
        close = difflib.get_close_matches(name, list(self._infos), n=3, cutoff=0.6)
        notes = [f"did you mean {' or '.join(repr(c) for c in close)}?"] if close else []
        return notes + ["`gir passes` lists the available passes"]

    def names(self) -> list[str]:
        return sorted(self._infos)

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    def __iter__(self) -> Iterator[PassInfo]:
        return iter(sorted(self._infos.values(), key=lambda i: i.name))

    def __len__(self) -> int:
        return len(self._infos)


def unknown_pass_message(name: str) -> str:
    return f"unknown pass '{name}'"


def duplicate_error(name: str, origins: list[str]) -> GirError:
    return GirError(f"pass name '{name}' is registered more than once: by {' and by '.join(sorted(origins))}",
                    notes=["pass names must be unique; uninstall one of these distributions or rename the pass"])


def _dist_name(ep: md.EntryPoint) -> tuple[str | None, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    return dist.metadata["Name"], dist.version


def _describe_ep(ep: md.EntryPoint) -> str:
    name, version = _dist_name(ep)
    origin = f"{name} {version}" if name else "an unknown distribution"
    return f"{origin} (entry point {ep.name} = {ep.value})"


def _unique(entry_points: Iterable[md.EntryPoint]) -> list[md.EntryPoint]:
    """Drop exact repeats (one distribution seen twice on sys.path, e.g. an editable install)."""
    seen, out = set(), []
    for ep in entry_points:
        key = (ep.name, ep.value, _dist_name(ep)[0])
        if key not in seen:
            seen.add(key)
            out.append(ep)
    return out


def _check_duplicates(entry_points: list[md.EntryPoint]) -> None:
    by_name: dict[str, list[md.EntryPoint]] = {}
    for ep in entry_points:
        by_name.setdefault(ep.name, []).append(ep)
    for name, eps in sorted(by_name.items()):
        if len(eps) > 1:
            raise duplicate_error(name, [_describe_ep(ep) for ep in eps])


def _load(ep: md.EntryPoint) -> PassInfo:
    where = _describe_ep(ep)
    try:
        cls = ep.load()
    except Exception as exc:  # a broken plugin must name itself, not crash `gir`
        raise GirError(f"cannot load pass '{ep.name}' from {where}: {type(exc).__name__}: {exc}") from None
    check_pass_class(cls, where)
    if cls.name != ep.name:
        raise GirError(f"entry point '{ep.name}' of {where} names a pass called '{cls.name}'",
                       notes=["the entry-point name must equal the pass class's `name`"])
    dist, version = _dist_name(ep)
    return PassInfo(ep.name, cls, dist, version, ep.value)


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """The process-wide registry, discovered once from the installed entry points."""
    reg = Registry.discover()
    if not len(reg):
        raise GirError(f"no passes found in the entry-point group '{GROUP}'",
                       notes=["is gir-compiler installed? run `pip install -e .` in the repository"])
    return reg


def reset_registry() -> None:
    """Forget the discovered registry (after installing a plugin in-process, and in tests)."""
    registry.cache_clear()
