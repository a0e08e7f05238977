"""PNG plots of bench results: one PNG per suite, split into panels of at most MAX_SERIES series (a series is
one operator in one element type). y is the target's ratio to its bound (targets/bench/ratio.py) with a y = 1
reference line; x is the problem size in compulsory bytes, or the operator when each has a single size.

Colours follow the operator (the same in all its element types); element types differ in line style, marker
and fill, and are shifted sideways by a few points so that coinciding lines (f16 and bf16 often do) stay
visible. `figures` returns the figures unsaved, so tests can inspect them; matplotlib is an optional
dependency (`pip install 'gir-compiler[bench]'`).
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from gir.files import write_atomic
from gir.targets.bench.ratio import RATIOS, ratio_of

MAX_SERIES = 8
INSTALL_HINT = "pip install 'gir-compiler[bench]'"

DTYPE_STYLES = {
    "f32": {"linestyle": "-", "marker": "o", "fillstyle": "full", "markersize": 6, "shift": 0.0},
    "f16": {"linestyle": "--", "marker": "s", "fillstyle": "none", "markersize": 7, "shift": -3.0},
    "bf16": {"linestyle": ":", "marker": "^", "fillstyle": "none", "markersize": 8, "shift": 3.0},
}
OTHER_STYLE = {"linestyle": "-.", "marker": "D", "fillstyle": "full", "markersize": 6, "shift": 0.0}


class PlotsUnavailable(Exception):
    """matplotlib cannot be imported; str() is one line saying so and how to install it."""


@dataclass
class Series:
    op: str
    dtype: str
    colour: str
    points: list[tuple[float, float]] = field(default_factory=list)  # (compulsory bytes, ratio), sorted

    @property
    def label(self) -> str:
        return f"{self.op} {self.dtype}"


def suite_series(rows: list[dict], target: str) -> dict[str, list[Series]]:
    """Per suite, its series in row order; rows without a ratio (errors) are left out."""
    out: dict[str, list[Series]] = {}
    for suite in sorted({r["suite"] for r in rows}):
        ops: list[str] = []
        table: dict[tuple[str, str], Series] = {}
        for r in rows:
            y = ratio_of(r, target)
            if r["suite"] != suite or y is None or not r.get("compulsory_bytes"):
                continue
            if r["op"] not in ops:
                ops.append(r["op"])
            key = (r["op"], r["dtype"])
            if key not in table:
                table[key] = Series(r["op"], r["dtype"], f"C{ops.index(r['op']) % 10}")
            table[key].points.append((float(r["compulsory_bytes"]), float(y)))
        for s in table.values():
            s.points.sort()
        if table:
            out[suite] = list(table.values())
    return out


def panels(series: list[Series], limit: int = MAX_SERIES) -> list[list[Series]]:
    """Consecutive groups of at most `limit` series; an operator's series share a group when they fit in one."""
    groups: list[list[Series]] = []
    current: list[Series] = []
    for op in dict.fromkeys(s.op for s in series):
        mine = [s for s in series if s.op == op]
        for start in range(0, len(mine), limit):
            chunk = mine[start:start + limit]
            if current and len(current) + len(chunk) > limit:
                groups.append(current)
                current = []
            current = current + chunk
    if current:
        groups.append(current)
    return groups


def figures(rows: list[dict], target: str) -> list[tuple[str, object]]:
    """(file name, matplotlib Figure) per suite, not saved. Raises PlotsUnavailable without matplotlib."""
    figure_class = _figure_class()
    out = []
    for suite, series in suite_series(rows, target).items():
        groups = panels(series)
        ncols = 1 if len(groups) == 1 else 2
        nrows = -(-len(groups) // ncols)
        fig = figure_class(figsize=(6.4 * ncols, 3.8 * nrows + 0.4), layout="constrained")
        axes = list(fig.subplots(nrows, ncols, squeeze=False, sharey=True).ravel())
        for ax, group in zip(axes, groups):
            _draw(fig, ax, group, target)
        for ax in axes[len(groups):]:
            fig.delaxes(ax)
        fig.suptitle(f"gir bench {suite} --target {target}")
        out.append((f"{suite}-{target}.png", fig))
    return out


def write_plots(out_dir: Path, rows: list[dict], target: str) -> list[Path]:
    """Save `figures` as PNGs in out_dir; the paths written. Raises PlotsUnavailable without matplotlib."""
    written = []
    for name, fig in figures(rows, target):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        path = out_dir / name
        write_atomic(path, buf.getvalue())
        written.append(path)
    return written


def series_lines(ax) -> list:
    """The data lines of a panel (the y = 1 reference line excluded)."""
    return [line for line in ax.get_lines() if line.get_gid() == "series"]


def _figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        if (exc.name or "").split(".")[0] == "matplotlib":
            raise PlotsUnavailable(f"matplotlib is not installed; no PNG written ({INSTALL_HINT})") from None
        raise PlotsUnavailable(f"matplotlib cannot be imported ({exc}); no PNG written") from None
    return Figure


def _draw(fig, ax, group: list[Series], target: str) -> None:
    from matplotlib.ticker import ScalarFormatter
    from matplotlib.transforms import offset_copy

    ops = list(dict.fromkeys(s.op for s in group))
    dtypes = list(dict.fromkeys(s.dtype for s in group))
    categorical = all(len(s.points) == 1 for s in group)
    for s in group:
        style = dict(DTYPE_STYLES.get(s.dtype, OTHER_STYLE))
        shift = style.pop("shift")
        if categorical:  # one size per operator: operators side by side, element types next to each other
            k = dtypes.index(s.dtype)
            xs = [ops.index(s.op) + 0.2 * (k - (len(dtypes) - 1) / 2)]
        else:
            xs = [p[0] for p in s.points]
        (line,) = ax.plot(xs, [p[1] for p in s.points], color=s.colour, label=s.label, alpha=0.85,
                          linewidth=1.6, gid="series", **style)
        if not categorical and shift:  # a display offset, set after plotting so that autoscaling sees the data
            line.set_transform(offset_copy(ax.transData, fig=fig, x=shift, y=0.0, units="points"))
    ax.axhline(1.0, color="0.3", linewidth=1.0, linestyle=(0, (8, 2, 1, 2)), zorder=1.5, gid="reference",
               label=f"y = 1: {RATIOS[target].bound}")
    if categorical:
        ax.set_xticks(range(len(ops)), ops)
        ax.set_xlim(-0.6, len(ops) - 0.4)
        ax.set_xlabel("operator (one size each)")
    else:
        ax.set_xscale("log")
        ax.set_xlabel("compulsory bytes (inputs read once + outputs written once)")
    ax.set_ylabel(RATIOS[target].axis_label)
    ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))
    ax.grid(True, alpha=0.3)
    ax.set_title(", ".join(ops), fontsize=9)
    ax.legend(fontsize=7, ncol=2 if len(group) > 4 else 1)
