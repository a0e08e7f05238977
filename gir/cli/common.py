"""Helpers shared by subcommands: loading and verifying files, size bindings, atomic writes."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gir import ir
from gir.errors import GirError
from gir.parser import parse_file


def load_verified(path: str) -> ir.Module:
    """Parse and verify a file; raises GirError with diagnostics on bad input."""
    from gir.verifier import verify_module

    module = parse_file(path)
    verify_module(module)
    return module


MAX_SIZE = 1 << 62  # beyond int64 index arithmetic in every backend


def pick_func(module: ir.Module, name: str | None, path: str) -> ir.Func:
    """The function `--func NAME` names (the first one without a name); GirError if there is none."""
    try:
        return module.func(name)
    except KeyError:
        raise GirError(f"no function '{name}' in {path}") from None


def parse_sizes(text: str | None) -> dict[str, int]:
    """`M=4,N=7` → {"M": 4, "N": 7}."""
    sizes: dict[str, int] = {}
    if not text:
        return sizes
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip().lstrip("-").isdigit():
            raise GirError(f"bad --sizes entry '{part}': expected NAME=INT (e.g. M=4,N=7)")
        if int(value) < 1:
            raise GirError(f"size {key.strip()}={value.strip()} must be at least 1")
        if int(value) > MAX_SIZE:
            raise GirError(f"size {key.strip()}={value.strip()} is too large (at most 2^62)")
        sizes[key.strip()] = int(value)
    return sizes


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write via a temporary file and rename, so a failure never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
