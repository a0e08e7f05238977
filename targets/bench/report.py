"""Results → JSON, CSV and the summary table (the PNGs: targets/bench/plot.py)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from gir.files import write_atomic

COLUMNS = ("suite", "op", "dtype", "sizes", "status", "compile_s", "compulsory_bytes", "moved_bytes",
           "traffic_ratio", "rel_err", "time_s", "gbps", "pct_copy", "roofline_s", "vs_roofline",
           "opbyop_s", "speedup_vs_opbyop", "nopipe_s", "torch_eager_s", "torch_compile_s", "cupy_s", "ort_s",
           "note", "ort_note", "torch_note")


def write_json(path: Path, env: dict, rows: list[dict]) -> None:
    write_atomic(path, json.dumps({"environment": env, "results": rows}, indent=2, default=_jsonable) + "\n")


def _jsonable(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def write_csv(path: Path, rows: list[dict]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in COLUMNS})
    write_atomic(path, buf.getvalue())


def _cell(v):
    if isinstance(v, dict):
        return "x".join(str(x) for x in v.values())
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else v


def summary_table(rows: list[dict], target: str) -> str:
    if target == "cuda":
        cols = [("case", 34), ("compile_s", 9), ("time_s", 10), ("gbps", 8), ("pct_copy", 8),
                ("torch_eager_s", 13), ("torch_compile_s", 15), ("status", 8)]
        if any("ort_s" in r for r in rows):  # ONNX subgraphs: onnxruntime too
            cols.insert(-1, ("ort_s", 10))
    elif target == "mlu-sim":
        cols = [("case", 34), ("compile_s", 9), ("time_s", 10), ("vs_roofline", 11), ("speedup_vs_opbyop", 17),
                ("traffic_ratio", 13), ("status", 8)]
    else:
        cols = [("case", 34), ("compile_s", 9), ("compulsory_bytes", 16), ("moved_bytes", 14),
                ("traffic_ratio", 13), ("rel_err", 9), ("status", 8)]
    lines = ["  ".join(name.rjust(w) if name != "case" else name.ljust(w) for name, w in cols)]
    for row in rows:
        cells = []
        for name, w in cols:
            v = row.get("label") if name == "case" else row.get(name)
            if v is None and name in ("ort_s", "torch_compile_s", "torch_eager_s"):
                v = "n/a" if row.get(f"{name.split('_')[0]}_note") else None  # why: one line on stderr
            text = "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
            cells.append(text.ljust(w) if name == "case" else text.rjust(w))
        lines.append("  ".join(cells))
    return "\n".join(lines)
