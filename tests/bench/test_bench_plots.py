"""`gir bench` PNGs: at most 8 series per panel, one look per dtype, one colour per operator, a y = 1 line;
a clear one-line message (and JSON/CSV still written) when matplotlib is missing."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from gir.cli import main
from gir.targets.bench.plot import DTYPE_STYLES, MAX_SERIES, PlotsUnavailable, panels, suite_series

DTYPES = ("f32", "f16", "bf16")


def _rows(target: str, seed: int = 0) -> list[dict]:
    """Synthetic result rows shaped like the full suites: reduce has 6 operators of one size (18 series),
    softmax 2 operators of 4 sizes; f16 and bf16 share their values, as they often do."""
    rng = np.random.default_rng(seed)
    rows = []
    layout = {"reduce": [f"{r}_{ax}" for r in ("sum", "mean", "max") for ax in ("dim1", "last")],
              "softmax": ["softmax", "log_softmax"]}
    for suite, ops in layout.items():
        sizes = [1 << 26] if suite == "reduce" else [1 << 22, 1 << 24, 1 << 26, 1 << 28]
        for op in ops:
            for n in sizes:
                ratio16 = 1.0 + rng.uniform(0.0, 0.5)
                for dt in DTYPES:
                    nbytes = n if dt == "f32" else n // 2
                    ratio = 1.0 + rng.uniform(0.0, 0.5) if dt == "f32" else ratio16
                    rows.append({"suite": suite, "op": op, "dtype": dt, "compulsory_bytes": nbytes,
                                 "traffic_ratio": ratio, "vs_roofline": ratio, "time_s": ratio * nbytes / 1e12,
                                 "copy_gbps": 1000.0, "status": "ok"})
    rows.append({"suite": "reduce", "op": "sum_dim1", "dtype": "f32", "status": "ERROR"})  # no ratio: left out
    return rows


def test_panels_hold_at_most_eight_series_and_keep_operators_together():
    series = suite_series(_rows("sim"), "sim")["reduce"]
    assert len(series) == 18
    groups = panels(series)
    assert [len(g) for g in groups] == [6, 6, 6]
    assert all(len({s.op for s in g}) == 2 for g in groups)
    two = [s for s in series if s.dtype != "bf16"]
    assert [len(g) for g in panels(two)] == [8, 4]
    assert sum(len(g) for g in panels(series, limit=5)) == 18
    assert all(len(g) <= 5 for g in panels(series, limit=5))


def test_colour_follows_the_operator():
    series = suite_series(_rows("sim"), "sim")["reduce"]
    colour = {}
    for s in series:
        assert colour.setdefault(s.op, s.colour) == s.colour
    assert len(set(colour.values())) == len(colour)


@pytest.mark.parametrize("target", ["sim", "mlu-sim", "cuda"])
def test_figures_are_readable(target):
    pytest.importorskip("matplotlib")
    from gir.targets.bench.plot import figures, series_lines

    figs = dict(figures(_rows(target), target))
    assert set(figs) == {f"reduce-{target}.png", f"softmax-{target}.png"}
    assert len(figs[f"reduce-{target}.png"].axes) == 3
    for fig in figs.values():
        for ax in fig.axes:
            lines = series_lines(ax)
            assert 0 < len(lines) <= MAX_SERIES
            refs = [ln for ln in ax.get_lines() if ln.get_gid() == "reference"]
            assert len(refs) == 1 and list(refs[0].get_ydata()) == [1.0, 1.0]
            low, high = ax.get_ylim()
            assert low < 1.0 < high
            by_dtype: dict[str, set] = {}
            for ln in lines:
                op, dt = ln.get_label().rsplit(" ", 1)
                by_dtype.setdefault(dt, set()).add((ln.get_linestyle(), ln.get_marker()))
            looks = [next(iter(v)) for v in by_dtype.values()]
            assert all(len(v) == 1 for v in by_dtype.values())    # one look per dtype ...
            assert len(set(ls for ls, _ in looks)) == len(looks)   # ... distinct line style
            assert len(set(m for _, m in looks)) == len(looks)     # ... and distinct marker
            assert len(set(ln.get_color() for ln in lines)) == len({ln.get_label().rsplit(" ", 1)[0]
                                                                    for ln in lines})
            assert ax.get_legend() is not None


def test_coinciding_16bit_lines_are_shifted_apart():
    pytest.importorskip("matplotlib")
    from gir.targets.bench.plot import figures, series_lines

    fig = dict(figures(_rows("sim"), "sim"))["softmax-sim.png"]
    lines = {ln.get_label(): ln for ln in series_lines(fig.axes[0])}
    f16, bf16 = lines["softmax f16"], lines["softmax bf16"]
    assert list(f16.get_ydata()) == list(bf16.get_ydata())
    xy = np.array([[f16.get_xdata()[0], f16.get_ydata()[0]]])
    assert f16.get_transform().transform(xy)[0, 0] != bf16.get_transform().transform(xy)[0, 0]
    assert DTYPE_STYLES["f16"]["fillstyle"] == DTYPE_STYLES["bf16"]["fillstyle"] == "none"


def test_cli_png_has_at_most_eight_series_per_panel(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    import gir.targets.bench.plot as plot

    made = []

    def spy(rows, target):
        out = original(rows, target)
        made.extend(out)
        return out

    original = plot.figures
    monkeypatch.setattr(plot, "figures", spy)
    out = tmp_path / "out"
    assert main(["bench", "reduce", "--quick", "--dtypes", "f32,f16", "-q", "-o", str(out)]) == 0
    assert [name for name, _ in made] == ["reduce-sim.png"]
    assert (out / "reduce-sim.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = made[0][1]
    assert [len(plot.series_lines(ax)) for ax in fig.axes] == [8, 4]
    assert "matplotlib" not in capsys.readouterr().err


def test_missing_matplotlib_is_one_clear_line(tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "out"
    assert main(["bench", "softmax", "--quick", "--dtypes", "f32", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "gir bench: matplotlib is not installed; no PNG written (pip install 'gir-compiler[bench]')"]
    assert (out / "results.json").exists() and (out / "results.csv").exists()
    assert not list(out.glob("*.png"))
    assert "wrote" in captured.out and ".png" not in captured.out


def test_plots_unavailable_names_a_broken_dependency(monkeypatch):
    import builtins

    from gir.targets.bench import plot

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ModuleNotFoundError("No module named 'PIL'", name="PIL")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(PlotsUnavailable, match=r"matplotlib cannot be imported \(No module named 'PIL'\)"):
        plot.figures(_rows("sim"), "sim")
