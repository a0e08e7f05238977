"""Runs a list of cases on one target: progress, measurement, JSON/CSV/PNG, summary table."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from gir import ir
from gir.cli.common import check_sizes_used, parse_sizes, size_names
from gir.errors import GirError, UsageError
from gir.parser import parse_text
from gir.views import user_sizes
from gir.source import read_source
from gir.targets.bench.cases import SUITE_NAMES, Case, suite_cases
from gir.targets.bench.envinfo import environment
from gir.targets.bench.plot import PlotsUnavailable, write_plots
from gir.targets.bench.progress import Progress, expected_seconds, outcome, wanted
from gir.targets.bench.report import summary_table, write_csv, write_json


def collect_cases(what: list[str], quick: bool, dtypes, sizes_text: str | None) -> list[Case]:
    """The cases of suite names and .gir files, before anything runs. UsageError for an unknown name, --sizes
    without a file, a size no file uses, or a size a file needs and --sizes lacks."""
    sizes = parse_sizes(sizes_text)
    for item in what:
        if item not in SUITE_NAMES and not item.endswith(".gir"):
            raise UsageError(f"unknown suite '{item}' (known: {', '.join(SUITE_NAMES)}; or give a .gir file)")
    files = {item: _parsed(item) for item in what if item not in SUITE_NAMES}
    if sizes and not files:
        raise UsageError("--sizes binds the sizes of .gir files; suites run at their own sizes (--quick: small)")
    cases: list[Case] = []
    for item in what:
        if item in SUITE_NAMES:
            cases += suite_cases(item, quick=quick, dtypes=dtypes)
            continue
        others = [module for path, (_, module) in files.items() if path != item]
        elsewhere = set(sizes) if None in others else set().union(*map(size_names, others))
        cases.append(_file_case(item, *files[item], sizes, elsewhere))
    if not cases:
        raise UsageError("no benchmark cases selected")
    return cases


def _parsed(path: str) -> tuple[str, ir.Module | None]:
    """The text of a .gir file and its module (None if it does not parse: its row reports why)."""
    text, name = read_source(path)
    try:
        return text, parse_text(text, name)
    except GirError:
        return text, None


def _file_case(path: str, text: str, module: ir.Module | None, sizes: dict[str, int], elsewhere: set[str]) -> Case:
    """A .gir file as a case, with the sizes of --sizes it uses. Checked as the other subcommands check sizes: one
    that neither this file nor another (`elsewhere`) uses, or one its first function needs and --sizes lacks, is
    a usage error."""
    if module is None or not module.funcs:
        return Case("files", Path(path).stem, "file", dict(sizes), text, path)
    check_sizes_used(module, {k: v for k, v in sizes.items() if k not in elsewhere}, path)
    missing = [s for s in user_sizes(module.funcs[0]) if s not in sizes]   # a reshape view's derived ones follow
    if missing:
        what = f"sizes {', '.join(missing)} of {path} are" if len(missing) > 1 else f"size {missing[0]} of {path} is"
        raise UsageError(f"{what} not given (use --sizes {','.join(f'{s}=...' for s in missing)})")
    used = size_names(module)
    return Case("files", Path(path).stem, "file", {k: v for k, v in sizes.items() if k in used}, text, path)


@dataclass
class BenchRun:
    rows: list[dict]
    table: str                                       # the summary table (stdout)
    files: list[Path]                                # what was written
    notes: list[str] = field(default_factory=list)   # one line each for stderr (no PNG written, ...)


def run_bench(cases: list[Case], args, argv: list[str], extra_env: dict | None = None) -> BenchRun:
    """`extra_env`: more entries of results.json's environment (a model bench: the model and its import)."""
    from gir.targets.bench.runners import make_runner

    env = environment(argv, args.seed)  # before anything is written: the commit and its dirty flag as measured
    env["target"] = args.target
    env.update(extra_env or {})
    runner = make_runner(args.target, args)
    show = wanted(sys.stderr, args.quiet, expected_seconds(cases, args.target, args.quick))
    progress = Progress(len(cases), enabled=show)
    rows = []
    for case in cases:
        row = {"suite": case.suite, "op": case.op, "dtype": case.dtype, "sizes": dict(case.sizes),
               "label": case.label}
        error = None
        progress.start(case.spelled)
        try:
            row.update(runner.measure(case))
        except GirError as exc:
            error = exc.format()
            row.update(status="ERROR", note=error.splitlines()[0])
        except KeyboardInterrupt:
            progress.finish("interrupted")
            raise
        rows.append(row)
        progress.finish(outcome(row, args.target))
        if error:
            print(error, file=sys.stderr)
    env.update(runner.environment())
    out = Path(args.out)
    files = [out / "results.json", out / "results.csv"]
    write_json(files[0], env, rows)
    write_csv(files[1], rows)
    run = BenchRun(rows, summary_table(rows, args.target), files)
    try:
        run.files += write_plots(out, rows, args.target)
    except PlotsUnavailable as exc:
        run.notes.append(f"gir bench: {exc}")
    return run
