"""Runs a list of cases on one target: progress, measurement, JSON/CSV/PNG, summary table."""
from __future__ import annotations

import sys
from pathlib import Path

from gir.cli.common import parse_sizes
from gir.errors import GirError
from targets.bench.cases import SUITE_NAMES, Case, suite_cases
from targets.bench.envinfo import environment
from targets.bench.progress import Progress
from targets.bench.report import plot_suites, summary_table, write_csv, write_json


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


def run_bench(cases: list[Case], args, argv: list[str]):
    from targets.bench.runners import make_runner

    runner = make_runner(args.target, args)
    progress = Progress(len(cases))
    rows = []
    for case in cases:
        row = {"suite": case.suite, "op": case.op, "dtype": case.dtype, "sizes": dict(case.sizes),
               "label": case.label}
        try:
            row.update(runner.measure(case))
        except GirError as exc:
            row.update(status="ERROR", note=exc.format().splitlines()[0])
            print(exc.format(), file=sys.stderr)
        rows.append(row)
        progress.step(f"{case.label}: {row.get('status')}")
    out = Path(args.out)
    env = environment(argv, args.seed)
    env["target"] = args.target
    env.update(runner.environment())
    files = [out / "results.json", out / "results.csv"]
    write_json(files[0], env, rows)
    write_csv(files[1], rows)
    files += plot_suites(out, rows, args.target)
    return rows, summary_table(rows, args.target), files
