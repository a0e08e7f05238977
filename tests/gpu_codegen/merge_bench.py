"""Merge `gir bench --target cuda` runs into one results.json / results.csv (docs/bench/cuda).

    python tests/gpu_codegen/merge_bench.py OUT RUN[:LABEL[:CASES]] ...

Each RUN is a folder holding results.json. A later run's row replaces an earlier run's row of the same case
(operator, dtype, sizes); `CASES`, a comma-separated list of `op/dtype` (`sum_dim1/f16`), takes only those
cases from that run (a name that matches no case is an error). Framework baselines a replacing run did not time
(`--baselines none`: None) are kept, with their notes, from the row it replaces (the same operator, sizes and
inputs; independent of the compiler). Every row records the run it came from (`run`: LABEL, or the folder's
path) and that run's `commit` and `dirty`; the environment lists each run's command, commit, machine, versions
and copy bandwidth.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BASELINES = {"torch_eager_s": "torch_note", "torch_compile_s": "torch_note", "cupy_s": None, "ort_s": "ort_note"}


def key(row: dict) -> tuple:
    return row["op"], row["dtype"], json.dumps(row["sizes"], sort_keys=True)


def merge(runs: list[tuple[Path, str, set[str] | None]]) -> tuple[dict, list[dict]]:
    rows: dict[tuple, dict] = {}
    order: list[tuple] = []
    sources = []
    for folder, label, cases in runs:
        data = json.loads((folder / "results.json").read_text())
        env = data["environment"]
        sources.append({"run": label, **{k: env.get(k) for k in ("command", "commit", "dirty", "date", "copy_gbps",
                                                                  "machine", "versions")}})
        taken = set()
        for row in data["results"]:
            if cases is not None and f"{row['op']}/{row['dtype']}" not in cases:
                continue
            taken.add(f"{row['op']}/{row['dtype']}")
            k = key(row)
            new = dict(row, run=label, commit=env.get("commit"), dirty=env.get("dirty"))
            old = rows.get(k)
            if old is not None:
                for b, note in BASELINES.items():
                    if new.get(b) is None and old.get(b) is not None:
                        new[b] = old[b]
                        if note and old.get(note) is not None:
                            new[note] = old[note]
            else:
                order.append(k)
            rows[k] = new
        if cases is not None and cases - taken:
            raise SystemExit(f"merge_bench: {label}: no case {', '.join(sorted(cases - taken))} in {folder}")
    first = json.loads((runs[0][0] / "results.json").read_text())["environment"]
    env = {k: v for k, v in first.items() if k not in ("command", "commit", "dirty", "date", "copy_gbps",
                                                      "copy_gbps_per_run", "commands")}
    env["command"] = "tests/gpu_codegen/merge_bench.py: " + " ".join(label for _, label, _ in runs)
    env["runs"] = sources
    return env, [rows[k] for k in order]


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    runs = []
    for spec in argv[1:]:
        folder, _, rest = spec.partition(":")
        label, _, cases = rest.partition(":")
        runs.append((Path(folder), label or folder, set(cases.split(",")) if cases else None))
    env, rows = merge(runs)
    from gir.targets.bench.report import write_csv, write_json
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", env, rows)
    write_csv(out / "results.csv", rows)
    print(f"wrote {out / 'results.json'} ({len(rows)} cases from {len(runs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
