"""Writing files so that a failure never leaves half of one: every file of a command, or none."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gir.errors import GirError


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


def _mode_for(path: Path) -> int:
    """The permissions a rewritten file keeps (a new one gets the umask's default, not mkstemp's 0600)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
