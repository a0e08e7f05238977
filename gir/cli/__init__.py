"""The `gir` command line. Each subcommand lives in its own module with
`register(subparsers)` (adds its parser, sets `func=run`) and `run(args) -> int`."""
from __future__ import annotations

import argparse
import importlib
import sys

from gir.errors import GirError, UsageError

# subcommand modules, in the order `gir --help` lists them
SUBCOMMANDS = ["check", "fmt", "eval", "compile", "run", "analyze", "opt", "passes_cmd", "bench", "cache_cmd",
               "import_cmd"]

EPILOG = """examples:
  gir check samples/softmax.gir                    verify a program; prove explicit kernels safe
  gir fmt -i samples/softmax.gir                   rewrite a file in canonical form
  gir eval samples/softmax.gir --sizes M=4,N=7     run the numpy reference evaluator on random inputs
  gir run samples/softmax.gir --sizes M=1000,N=1025            compile, run on the SIMT simulator, compare
  gir run samples/layernorm.gir --target mlu-sim --sizes M=512,N=768    same on the simulated MLU
  gir compile samples/layernorm.gir --target cuda --emit gir   print the chosen explicit kernels
  gir compile samples/layernorm.gir --target hip -o out/       write HIP source + launch metadata (JSON)
  gir analyze samples/explicit/softmax_rows.gir --sizes M=4096 bytes per memory level vs compulsory
  gir opt samples/softmax.gir --passes 'canonicalize,cse,dce' --print-ir-after-change
  gir passes                                       list passes (built-ins and plugins)
  gir bench softmax --target sim --quick           benchmark a suite; JSON, CSV and PNG in bench-out/
"""


EXIT_CODES = """exit status:
  0  success
  1  an error in the input (a located file:line:col diagnostic), a wrong result (gir run), a file that is
     not canonical (gir fmt --check), or a target that cannot run here (no GPU)
  2  a usage error: an unknown flag or target, a bad --sizes / --range binding, a size the program does
     not use (no location: the mistake is on the command line)
  130 interrupted

FILE may be '-' to read standard input.
"""


def version() -> str:
    try:
        from importlib.metadata import version as dist_version
        return dist_version("gir-compiler")
    except Exception:  # not installed (running from a checkout)
        return "0.1.0"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gir", description="GIR: a memory-centric tensor compiler for memory-bound operators.",
        epilog=EPILOG + "\n" + EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gir {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"gir.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"gir.cli.{name}":
                raise
            continue  # a subcommand that is not part of this build
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(exc.format(), file=sys.stderr)
        return 2
    except GirError as exc:
        print(exc.format(), file=sys.stderr)
        return 1
    except BrokenPipeError:  # `gir check FILE | head`: the reader went away; not an error of gir
        _quiet_stdout()
        return 0
    except KeyboardInterrupt:
        print("gir: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a simulator's own diagnostic (it names a place in the emitted program text)
        if type(exc).__name__ != "MluError":
            raise
        print(f"{exc}\nnote: raised while simulating the MLU program that gir emitted for {args.file!s}",
              file=sys.stderr)
        return 1


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that the interpreter's final flush stays silent."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
