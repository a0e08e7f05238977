"""Runs a list of cases on one target: progress, measurement, JSON/CSV/PNG, summary table."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from gir.cli.common import parse_sizes
from gir.errors import GirError
from targets.bench.cases import SUITE_NAMES, Case, suite_cases
from targets.bench.envinfo import environment
from targets.bench.plot import PlotsUnavailable, write_plots
from targets.bench.progress import Progress, expected_seconds, outcome, wanted
from targets.bench.report import summary_table, write_csv, write_json


def collect_cases(what: list[str], quick: bool, dtypes, sizes_text: str | None) -> list[Case]:
    cases: list[Case] = []
    for item in what:
        if item in SUITE_NAMES:
            cases += suite_cases(item, quick=quick, dtypes=dtypes)
        elif item.endswith(".gir"):
            path = Path(item)
            try:
                text = path.read_text()
            except OSError as exc:
                raise GirError(f"cannot read {item}: {exc.strerror}") from None
            cases.append(Case("files", path.stem, "file", parse_sizes(sizes_text), text, str(path)))
        else:
            raise GirError(f"unknown suite '{item}' (known: {', '.join(SUITE_NAMES)}; or give a .gir file)")
    if not cases:
        raise GirError("no benchmark cases selected")
    return cases


@dataclass
class BenchRun:
    rows: list[dict]
    table: str                                       # the summary table (stdout)
    files: list[Path]                                # what was written
    notes: list[str] = field(default_factory=list)   # one line each for stderr (no PNG written, ...)


def run_bench(cases: list[Case], args, argv: list[str]) -> BenchRun:
    from targets.bench.runners import make_runner

    env = environment(argv, args.seed)  # before anything is written: the commit and its dirty flag as measured
    env["target"] = args.target
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
