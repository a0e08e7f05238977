"""The fuzzing oracle: run `gir.cli.main` in-process on one input and judge the outcome.

A run is acceptable when
  * `main` returns an int in {0, 1, 2} and raises nothing (SystemExit only from argparse, code 2);
  * `gir run` may exit 1 with an empty stderr when its result table reports a numeric mismatch (FAIL);
  * otherwise, on a non-zero status, the first stderr line is a located diagnostic `FILE:L:C: error|warning: ...`,
    or one of the location-less command-line errors listed in LOCATIONLESS;
  * no Python warning (`file.py:N: RuntimeWarning: ...`) reaches stderr;
  * on a non-zero status, no new file appeared in the -o directory (and never a temporary file).
"""
from __future__ import annotations

import contextlib
import io
import re
import signal
import traceback
from dataclasses import dataclass, field
from pathlib import Path

LOCATED = re.compile(r"^[^:]+:\d+:\d+: (error|warning)")
REMARK = re.compile(r"^[^:]+:\d+:\d+: remark: ")

# Messages that may have no file:line:col: they are about the command line or the environment,
# not about a place in the GIR file.
LOCATIONLESS = [re.compile(p) for p in (
    r"^error: bad --sizes entry '",                       # --sizes syntax
    r"^error: size \w+=-\d+ must be at least 0",            # --sizes value < 0
    r"^error: size \w+=\d+ is too large \(at most 2\^62\)",  # --sizes value absurd
    r"^error: size \w+ of input '\w+' is not given",       # --sizes missing a symbol
    r"^error: cannot read ",                              # missing/unreadable file or --inputs
    r"^error: cannot write ",                             # -o into a file, a directory in the way
    r"^error: no function '",                             # --func NAME
    r"^error: unknown target '",                          # --target NAME
    r"^error: --sizes binds ",                            # --sizes names a size the file does not use
    r"^error: --target mlu needs --sizes ",               # the MLU has static tiles
    r"^gir: no CUDA device available",                    # environment
    r"^usage: gir",                                       # argparse (exit 2)
    r"^[^:]+: not in canonical form$",                    # fmt --check
)]


PY_WARNING = re.compile(r"\S+\.py:\d+: \w*Warning: .*")  # numpy/python warnings leaking to the user


class CaseTimeout(Exception):
    pass


@dataclass
class Outcome:
    argv: list[str]
    status: object = None
    stdout: str = ""
    stderr: str = ""
    exc: str | None = None          # traceback text of an escaped exception
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _alarm(signum, frame):
    raise CaseTimeout()


def invoke(argv: list[str], out_dir: Path | None = None, timeout: float = 0) -> Outcome:
    """Run `gir ARGV` in-process and judge it (see the module docstring)."""
    from gir.cli import main

    before = _listing(out_dir)
    o = Outcome(list(argv))
    out, err = io.StringIO(), io.StringIO()
    old = None
    if timeout:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                o.status = main(list(argv))
            except SystemExit as exc:  # argparse usage errors
                o.status = exc.code
    except CaseTimeout:
        o.status = "timeout"
    except BaseException:  # noqa: BLE001 - the whole point: nothing may escape
        o.exc = traceback.format_exc()
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    o.stdout, o.stderr = out.getvalue(), err.getvalue()
    if o.status == "timeout":
        return o  # too slow is not a correctness problem here; callers count these
    if o.exc is not None:
        o.problems.append("exception escaped: " + o.exc.strip().splitlines()[-1])
        return o
    if not isinstance(o.status, int) or isinstance(o.status, bool) or o.status not in (0, 1, 2):
        o.problems.append(f"bad exit status {o.status!r}")
        return o
    if PY_WARNING.search(o.stderr):
        o.problems.append("python warning on stderr: " + PY_WARNING.search(o.stderr).group())
    stderr = _without_remarks(o.stderr)
    if o.status == 1 and argv[0] == "run" and not stderr.strip() and " FAIL" in o.stdout:
        return o  # `gir run`: a numeric mismatch against the reference (the table says FAIL): exit 1
    if o.status != 0:
        first = stderr.splitlines()[0] if stderr.strip() else ""
        if not (LOCATED.match(first) or any(p.match(first) for p in LOCATIONLESS)):
            o.problems.append(f"unlocated diagnostic: {first!r}")
        new = _listing(out_dir) - before
        if new:
            o.problems.append(f"files written on failure: {sorted(new)}")
    stray = [p for p in _listing(out_dir) if p.endswith(".tmp")]
    if stray:
        o.problems.append(f"temporary files left: {stray}")
    return o


def _listing(d: Path | None) -> set[str]:
    if d is None or not d.exists():
        return set()
    return {str(p.relative_to(d)) for p in d.rglob("*")}


def _without_remarks(text: str) -> str:
    """stderr without optimisation remarks (a remark line, its source line, caret and notes)."""
    out, skipping = [], False
    for line in text.splitlines():
        if REMARK.match(line):
            skipping = True
            continue
        if skipping and line.startswith("  "):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out)
