"""`gir cache info|clear`: the on-disk compile cache of `gir.compile` (gir/cache.py).

`info` prints where the cache is, how many entries it holds and their bytes; `clear` removes every entry.
The cache is `$GIR_CACHE_DIR`, else the user cache directory (`$XDG_CACHE_HOME/gir`, `~/.cache/gir`).
"""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("cache", help="show or clear the compile cache of gir.compile",
                       description="The on-disk compile cache of the Python API (gir.compile). Its location is "
                                   "$GIR_CACHE_DIR, else the user cache directory ($XDG_CACHE_HOME/gir, "
                                   "~/.cache/gir).")
    p.add_argument("action", choices=["info", "clear"], help="info: path, entries and bytes; clear: remove "
                                                             "every entry")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir import cache

    if args.action == "clear":
        removed = cache.clear()
        print(f"removed {removed} entr{'y' if removed == 1 else 'ies'} from {cache.entries_dir()}")
        return 0
    info = cache.info()
    print(f"path:    {info['path']}")
    print(f"entries: {info['entries']}")
    print(f"bytes:   {info['bytes']}")
    return 0
