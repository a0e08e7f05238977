"""`gir fmt FILE...`: print in canonical form (idempotent), or rewrite in place with -i."""
from __future__ import annotations

import sys

from gir.cli.common import write_atomic
from gir.parser import parse_file
from gir.printer import print_module


def register(sub) -> None:
    p = sub.add_parser("fmt", help="print GIR files in canonical form",
                       description="Print GIR files in canonical form. `gir fmt` is idempotent.")
    p.add_argument("files", nargs="+", metavar="FILE")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-i", "--in-place", action="store_true", help="rewrite the files")
    g.add_argument("--check", action="store_true", help="exit 1 if a file is not canonical")
    p.set_defaults(func=run)


def run(args) -> int:
    status = 0
    for path in args.files:
        module = parse_file(path)
        text = print_module(module)
        with open(path) as fh:
            original = fh.read()
        if args.check:
            if text != original:
                print(f"{path}: not in canonical form", file=sys.stderr)
                status = 1
        elif args.in_place:
            if text != original:
                write_atomic(path, text)
        else:
            sys.stdout.write(text)
    return status
