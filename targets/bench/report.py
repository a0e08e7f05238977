"""Results → JSON, CSV, a summary table and one bandwidth/roofline PNG per suite."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from gir.cli.common import write_atomic

COLUMNS = ("suite", "op", "dtype", "sizes", "status", "compile_s", "compulsory_bytes", "moved_bytes",
           "traffic_ratio", "rel_err", "time_s", "gbps", "pct_copy", "roofline_s", "vs_roofline",
           "opbyop_s", "speedup_vs_opbyop", "nopipe_s", "torch_eager_s", "torch_compile_s", "cupy_s", "note")


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
            text = "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
            cells.append(text.ljust(w) if name == "case" else text.rjust(w))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def plot_suites(out_dir: Path, rows: list[dict], target: str) -> list[Path]:
    """One PNG per suite: achieved bandwidth (or traffic ratio) against problem size, per op and dtype."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    for suite in sorted({r["suite"] for r in rows}):
        sel = [r for r in rows if r["suite"] == suite and r.get("compulsory_bytes")]
        if not sel:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        metric, ylabel = _metric(target)
        series: dict[str, list[tuple[float, float]]] = {}
        for r in sel:
            y = r.get(metric)
            if y is None:
                continue
            series.setdefault(f"{r['op']} {r['dtype']}", []).append((r["compulsory_bytes"], y))
        for name, pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        roof = [r.get("copy_gbps") for r in sel if r.get("copy_gbps")]
        if metric == "gbps" and roof:
            ax.axhline(max(roof), color="k", linestyle="--", label="device copy")
        if metric == "traffic_ratio":
            ax.axhline(1.0, color="k", linestyle="--", label="compulsory")
        ax.set_xscale("log")
        ax.set_xlabel("compulsory bytes (inputs read once + outputs written once)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"gir bench {suite} --target {target}")
        ax.grid(True, alpha=0.3)
        if series:
            ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        path = out_dir / f"{suite}-{target}.png"
        write_atomic(path, buf.getvalue())
        written.append(path)
    return written


def _metric(target: str) -> tuple[str, str]:
    if target == "cuda":
        return "gbps", "achieved GB/s (compulsory bytes / time)"
    if target == "mlu-sim":
        return "vs_roofline", "simulated time / DMA roofline"
    return "traffic_ratio", "bytes moved / compulsory bytes"
