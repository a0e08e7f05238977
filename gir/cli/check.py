"""`gir check FILE...`: parse and verify; with --deep also run the z3/isl kernel checks."""
from __future__ import annotations

import sys

from gir.cli.common import load_verified


def register(sub) -> None:
    p = sub.add_parser("check", help="parse and verify GIR files",
                       description="Parse and verify GIR files. Exit 0 if all are valid, 1 with "
                                   "file:line:col diagnostics otherwise.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.errors import GirError

    status = 0
    for path in args.files:
        try:
            load_verified(path)
        except GirError as exc:
            print(exc.format(), file=sys.stderr)
            status = 1
            continue
        if not args.quiet:
            print(f"{path}: ok")
    return status
