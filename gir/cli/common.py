"""Helpers shared by subcommands: loading and verifying files, size bindings, atomic writes."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from gir import ir
from gir.errors import GirError, UsageError
from gir.limits import check_tensor_sizes
from gir.parser import parse_file


def load_verified(path: str, sizes: dict[str, int] | None = None) -> ir.Module:
    """Parse and verify a file ("-" reads standard input); raises GirError with diagnostics on bad input.
    With `sizes`, a binding of a name the file does not use is a usage error."""
    from gir.verifier import verify_module

    module = parse_file(path)
    verify_module(module)
    if sizes:
        check_sizes_used(module, sizes, path)
    check_tensor_sizes(module, sizes or {})
    return module


def size_names(module: ir.Module) -> set[str]:
    """Every size a binding may give: symbolic dimensions of parameters and results, and names used as
    kernel attributes (`block = T`)."""
    names = {s for f in module.funcs for s in f.size_symbols()}
    for f in module.funcs:
        for item in f.body:
            if isinstance(item, ir.Kernel):
                names.update(v for _, v in item.attrs if isinstance(v, str) and v.isidentifier())
    return names


def check_sizes_used(module: ir.Module, sizes: dict[str, int], path: str) -> None:
    known = size_names(module)
    unknown = [k for k in sizes if k not in known]
    if unknown:
        from gir.source import display_name

        have = ", ".join(sorted(known)) or "none: every shape is a literal"
        raise UsageError(f"--sizes binds {', '.join(repr(k) for k in unknown)}, which {display_name(path)} does "
                         f"not use (its sizes: {have})")


MAX_SIZE = 1 << 62  # beyond int64 index arithmetic in every backend


def pick_func(module: ir.Module, name: str | None, path: str) -> ir.Func:
    """The function `--func NAME` names (the first one without a name); GirError if there is none."""
    try:
        return module.func(name)
    except KeyError:
        raise UsageError(f"no function '{name}' in {path}") from None


_SIZE_ENTRY = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*([+-]?[0-9]{1,30})\s*", re.ASCII)


def parse_sizes(text: str | None) -> dict[str, int]:
    """`M=4,N=7` → {"M": 4, "N": 7}; a malformed, repeated, non-positive or absurd entry is a usage error."""
    sizes: dict[str, int] = {}
    if not text:
        return sizes
    for part in text.split(","):
        m = _SIZE_ENTRY.fullmatch(part)
        if not m:
            raise UsageError(f"bad --sizes entry '{part}': expected NAME=INT (e.g. M=4,N=7)")
        key, value = m.group(1), int(m.group(2))
        if key in sizes:
            raise UsageError(f"bad --sizes entry '{part}': {key} is given twice")
        if value < 1:
            raise UsageError(f"size {key}={value} must be at least 1")
        if value > MAX_SIZE:
            raise UsageError(f"size {key}={value} is too large (at most 2^62)")
        sizes[key] = value
    return sizes


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write via a temporary file and rename, so a failure never leaves half a file."""
    write_all_atomic({Path(path): data})


def write_all_atomic(files: dict[Path, str | bytes]) -> None:
    """Write every file or none: all temporary files first, then the renames. A path that cannot be written
    (its parent is a file, no permission, a directory in the way) is a GirError naming it."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            path = Path(path)
            if path.is_dir():
                raise GirError(f"cannot write {path}: it is a directory")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                temps.append((tmp, path))
                with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w", encoding=None if isinstance(
                        data, bytes) else "utf-8") as fh:
                    fh.write(data)
                os.chmod(tmp, _mode_for(path))
            except OSError as exc:
                raise GirError(f"cannot write {path}: {exc.strerror or exc}") from None
        for tmp, path in temps:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise GirError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        raise


def output_path(value: str | None) -> str | None:
    """`-o` as given: None (not given), "-" (standard output); an empty name is a usage error."""
    if value is not None and not value.strip():
        raise UsageError("-o needs a file name ('-' for standard output)")
    return value


def _mode_for(path: Path) -> int:
    """The permissions a rewritten file keeps (a new one gets the umask's default, not mkstemp's 0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
