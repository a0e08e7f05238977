"""The on-disk compile cache of `gir.compile`: one JSON file per compiled program.

    key = cache.key(source=text, target="cuda", func="softmax", sizes={"M": 4096, "N": 1000}, options={...})
    entry = cache.load(key)          # a dict, or None on a miss (absent, unreadable, corrupt, another format)
    cache.store(key, entry)          # atomic: a temporary file in the same folder, then os.replace

The key is a SHA-256 over the source text, the function, the target, the machine description the target
compiles for, the sorted size bindings, the options and the compiler fingerprint (the distribution's version
and a hash of every .py/.lark/.json file of the packages that produce a compiled program, `gir`, `passes` and
`codegen`, so that an edited checkout never reads a stale entry). Entries live in `<cache dir>/compile/`;
the cache dir is `$GIR_CACHE_DIR`, else the user cache directory (`$XDG_CACHE_HOME/gir`, `~/.cache/gir`;
`~/Library/Caches/gir` on macOS, `%LOCALAPPDATA%\\gir\\Cache` on Windows). `gir cache clear` empties it.

Several processes may compile the same program at once: each writes a complete temporary file and renames it
over the entry, so a reader sees either no entry or a whole one. A failure to write (a read-only home) only
costs the next process a compilation.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

from gir.errors import GirError

FORMAT = 1                        # of an entry; another number is a miss
SUFFIX = ".json"
SOURCE_PACKAGES = ("gir", "passes", "codegen")
SOURCE_SUFFIXES = (".py", ".lark", ".json")

# Counters of this process (tests and `gir cache info` read them; they are never persisted).
stats = {"hits": 0, "misses": 0, "stores": 0}


def cache_dir() -> Path:
    """`$GIR_CACHE_DIR`, else the platform's user cache directory followed by `gir`."""
    override = os.environ.get("GIR_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "gir" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "gir"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gir"


def entries_dir() -> Path:
    return cache_dir() / "compile"


@lru_cache(maxsize=None)
def compiler_fingerprint() -> str:
    """The distribution's version and a hash of the compiler's source files (computed once per process)."""
    try:
        from importlib.metadata import version

        dist = version("gir-compiler")
    except Exception:  # running from a checkout that is not installed
        dist = "unknown"
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
    return f"{dist}+{h.hexdigest()[:16]}"


def key(source: str, target: str, func: str, sizes: dict[str, int], options: dict, machine: dict) -> str:
    """The entry name of one compilation (a hex SHA-256)."""
    record = {"format": FORMAT, "compiler": compiler_fingerprint(), "source": source, "target": target,
              "func": func, "sizes": sorted(sizes.items()), "options": sorted(options.items()),
              "machine": machine}
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def entry_path(k: str) -> Path:
    return entries_dir() / f"{k}{SUFFIX}"


def load(k: str) -> dict | None:
    """The entry of key `k`, or None: absent, unreadable, not JSON, another format or another key."""
    try:
        entry = json.loads(entry_path(k).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stats["misses"] += 1
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != k:
        stats["misses"] += 1
        return None
    stats["hits"] += 1
    return entry


def store(k: str, entry: dict) -> bool:
    """Write the entry atomically; False (and nothing left behind) if the cache cannot be written."""
    from gir.files import write_atomic  # temporary file in the same folder, then os.replace

    data = json.dumps({**entry, "format": FORMAT, "key": k}, indent=1, sort_keys=True)
    try:
        write_atomic(entry_path(k), data)
    except GirError:
        return False
    stats["stores"] += 1
    return True


def info() -> dict:
    """{"path", "entries", "bytes"} of the cache as it is on disk now."""
    files = _files()
    total = 0
    for f in files:
        try:
            total += f.stat().st_size
        except OSError:  # removed by another process meanwhile
            pass
    return {"path": str(cache_dir()), "entries": sum(f.suffix == SUFFIX for f in files), "bytes": total}


def clear() -> int:
    """Remove every entry (and temporary files left by interrupted writers); returns the entries removed.
    Only files this module writes are touched, whatever `$GIR_CACHE_DIR` points at."""
    removed = 0
    for f in _files():
        try:
            f.unlink()
            removed += f.suffix == SUFFIX
        except FileNotFoundError:  # another process cleared it first
            pass
    try:
        entries_dir().rmdir()
    except OSError:  # absent, or a writer put a file there meanwhile
        pass
    return removed


def _files() -> list[Path]:
    folder = entries_dir()
    if not folder.is_dir():
        return []
    return [f for f in folder.iterdir() if f.is_file() and (f.suffix == SUFFIX or f.name.endswith(".tmp"))]


__all__ = ["cache_dir", "compiler_fingerprint", "key", "load", "store", "info", "clear", "stats"]
