"""Pass instruments (TVM style): objects whose hooks the PassManager calls around every pass.

Printing, timing and dumping live here, never in passes. `add_arguments(parser)` adds the command-line flags
and `instruments_from_args(args)` turns them into instruments, so every subcommand that runs a pipeline
(`gir opt`, `gir compile`) offers the same flags.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from gir import ir
from gir.printer import print_module
from gir.passes.base import ModulePass, PassContext


class PassInstrument:
    """Base class: every hook does nothing. `index` is the 1-based position of the pass in the pipeline."""

    def enter_pipeline(self, ctx: PassContext, pipeline, module: ir.Module) -> None:
        pass

    def run_before_pass(self, ctx: PassContext, pass_: ModulePass, index: int, module: ir.Module) -> None:
        pass

    def run_after_pass(self, ctx: PassContext, pass_: ModulePass, index: int,
                       before: ir.Module, after: ir.Module, seconds: float) -> None:
        pass

    def run_after_verify(self, ctx: PassContext, pass_: ModulePass, index: int, seconds: float) -> None:
        pass

    def exit_pipeline(self, ctx: PassContext, module: ir.Module) -> None:
        pass


def ir_text(state) -> str:
    """GIR text of a pipeline state: a module prints as itself, an IDFG as the explicit GIR it stands for."""
    if isinstance(state, ir.Module):
        return print_module(state)
    return print_module(state.to_module())


def _out(stream: TextIO | None) -> TextIO:
    return stream if stream is not None else sys.stderr


class PrintIR(PassInstrument):
    """Print the module before/after passes, as GIR text under a `#` comment header (stderr by default).

    `after` / `before` hold pass names (`after_all` / `before_all` select every pass). With `only_changed`,
    IR after a pass is printed only when the pass changed it; alone, it selects every pass."""

    def __init__(self, after=(), before=(), after_all: bool = False, before_all: bool = False,
                 only_changed: bool = False, stream: TextIO | None = None):
        self.after, self.before = frozenset(after), frozenset(before)
        self.after_all = after_all or (only_changed and not self.after)
        self.before_all, self.only_changed, self.stream = before_all, only_changed, stream
        self.total = 0

    def enter_pipeline(self, ctx, pipeline, module) -> None:
        self.total = len(pipeline)

    def _print(self, when: str, pass_: ModulePass, index: int, text: str) -> None:
        out = _out(self.stream)
        out.write(f"# ----- IR {when} '{pass_.pipeline_text()}' (pass {index} of {self.total}) -----\n")
        out.write(text)
        out.flush()

    def run_before_pass(self, ctx, pass_, index, module) -> None:
        printing = self.before_all or pass_.name in self.before
        if printing or (self.only_changed and (self.after_all or pass_.name in self.after)):
            self._before_text = ir_text(module)  # graph passes change their input in place
        if printing:
            self._print("before", pass_, index, self._before_text)

    def run_after_pass(self, ctx, pass_, index, before, after, seconds) -> None:
        if not (self.after_all or pass_.name in self.after):
            return
        text = ir_text(after)
        if self.only_changed and getattr(self, "_before_text", None) == text:
            return
        self._print("after", pass_, index, text)


class TimePasses(PassInstrument):
    """Time every pass (and the verifier) and print a table when the pipeline ends.

    `timings` holds (pass text, seconds) in pipeline order; `verify_seconds` / `verify_runs` the verifier's share."""

    def __init__(self, stream: TextIO | None = None, report_on_exit: bool = True):
        self.stream, self.report_on_exit = stream, report_on_exit
        self.timings: list[tuple[str, float]] = []
        self.verify_seconds, self.verify_runs = 0.0, 0

    def enter_pipeline(self, ctx, pipeline, module) -> None:
        self.timings, self.verify_seconds, self.verify_runs = [], 0.0, 0

    def run_after_pass(self, ctx, pass_, index, before, after, seconds) -> None:
        self.timings.append((pass_.pipeline_text(), seconds))

    def run_after_verify(self, ctx, pass_, index, seconds) -> None:
        self.verify_seconds += seconds
        self.verify_runs += 1

    def report(self) -> str:
        rows = list(self.timings)
        if self.verify_runs:
            rows.append((f"(verifier, {self.verify_runs} runs)", self.verify_seconds))
        total = sum(s for _, s in rows) or 1e-12
        lines = ["# pass timing report (wall clock)", f"#  {'time (ms)':>10}  {'%':>6}  pass"]
        for label, seconds in rows:
            lines.append(f"#  {seconds * 1e3:10.3f}  {100 * seconds / total:6.1f}  {label}")
        lines.append(f"#  {sum(s for _, s in rows) * 1e3:10.3f}  {100.0:6.1f}  total")
        return "\n".join(lines) + "\n"

    def exit_pipeline(self, ctx, module) -> None:
        if self.report_on_exit:
            _out(self.stream).write(self.report())


class DumpIR(PassInstrument):
    """Write `00-input.gir` and then one numbered file per pass (`03-cse.gir`) into `directory`."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.width = 2
        self.written: list[Path] = []

    def _write(self, number: int, label: str, module) -> None:
        from gir.files import write_atomic

        path = self.directory / f"{number:0{self.width}d}-{label}.gir"
        write_atomic(path, ir_text(module))
        self.written.append(path)

    def enter_pipeline(self, ctx, pipeline, module) -> None:
        self.width = max(2, len(str(len(pipeline))))
        self.written = []
        self._write(0, "input", module)

    def run_after_pass(self, ctx, pass_, index, before, after, seconds) -> None:
        self._write(index, pass_.name, after)


# ------------------------------------------------------------------ command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the instrument flags (and --no-verify-each) to a subcommand's parser."""
    g = parser.add_argument_group("pass instrumentation")
    g.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    g.add_argument("--print-ir-after", metavar="NAME", action="append", default=[],
                   help="print the IR after each run of pass NAME (repeatable, or a comma list)")
    g.add_argument("--print-ir-before-all", action="store_true", help="print the IR before every pass")
    g.add_argument("--print-ir-before", metavar="NAME", action="append", default=[],
                   help="print the IR before each run of pass NAME (repeatable, or a comma list)")
    g.add_argument("--print-ir-after-change", action="store_true",
                   help="print IR after a pass only if the pass changed it (alone: after every such pass)")
    g.add_argument("--time-passes", action="store_true", help="print a table of pass times at the end (stderr)")
    g.add_argument("--dump-ir", metavar="DIR", help="write the IR after every pass to DIR/NN-NAME.gir")
    g.add_argument("--no-verify-each", action="store_true", help="do not run the verifier after every pass")


def _names(values: list[str]) -> list[str]:
    from gir.passes.registry import registry

    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    for name in names:
        registry().get(name)  # unknown names are an error with a suggestion
    return names


def instruments_from_args(args: argparse.Namespace, stream: TextIO | None = None) -> list[PassInstrument]:
    """The instruments selected by the flags of `add_arguments`; `verify_each_from_args` gives the rest."""
    out: list[PassInstrument] = []
    after, before = _names(args.print_ir_after), _names(args.print_ir_before)
    if args.print_ir_after_all or after or before or args.print_ir_before_all or args.print_ir_after_change:
        out.append(PrintIR(after, before, args.print_ir_after_all, args.print_ir_before_all,
                           args.print_ir_after_change, stream))
    if args.dump_ir:
        out.append(DumpIR(args.dump_ir))
    if args.time_passes:
        out.append(TimePasses(stream))
    return out


def verify_each_from_args(args: argparse.Namespace) -> bool:
    return not args.no_verify_each
