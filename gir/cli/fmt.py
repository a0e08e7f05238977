"""`gir fmt FILE...`: print in canonical form (idempotent, comments kept), or rewrite in place with -i."""
from __future__ import annotations

import sys

from gir.files import write_atomic
from gir.comments import format_source
from gir.errors import UsageError
from gir.source import STDIN, read_source


def register(sub) -> None:
    p = sub.add_parser("fmt", help="print GIR files in canonical form",
                       description="Print GIR files in canonical form. Comments are kept: a trailing comment stays "
                                   "at the end of its line, any other goes on its own line before the next "
                                   "statement or '}'. `gir fmt` is idempotent. FILE may be '-' (standard input).")
    p.add_argument("files", nargs="+", metavar="FILE")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-i", "--in-place", action="store_true", help="rewrite the files")
    g.add_argument("--check", action="store_true", help="exit 1 if a file is not canonical")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.in_place and STDIN in args.files:
        raise UsageError("-i cannot rewrite standard input ('-'); use `gir fmt -` to print it formatted")
    status = 0
    for path in args.files:
        original, name = read_source(path)
        text = format_source(original, name)
        if args.check:
            if text != original:
                print(f"{name}: not in canonical form", file=sys.stderr)
                status = 1
        elif args.in_place:
            if text != original:
                write_atomic(path, text.encode("utf-8"))
        else:
            sys.stdout.write(text)
    return status
