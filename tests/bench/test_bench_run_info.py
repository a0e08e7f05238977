"""`gir bench` run information: the default suite, the git commit in results.json, progress lines on stderr."""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess

import pytest

from gir.cli import build_parser, main
from gir.targets.bench import envinfo, progress
from gir.targets.bench.cases import suite_cases

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _bench(tmp_path, *extra) -> tuple[int, dict]:
    out = tmp_path / "out"
    code = main(["bench", "softmax", "--quick", "--target", "sim", "--dtypes", "f32", "-o", str(out), *extra])
    return code, json.loads((out / "results.json").read_text())["environment"]


def test_default_suite_is_all():
    assert build_parser().parse_args(["bench"]).what == ["all"]
    assert build_parser().parse_args(["bench", "norm"]).what == ["norm"]


def _git(cwd, *args) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@needs_git
def test_git_state_of_a_checkout(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert envinfo.git_state(tmp_path) == {"commit": head, "dirty": False}
    (tmp_path / "a.txt").write_text("b\n")
    assert envinfo.git_state(tmp_path) == {"commit": head, "dirty": True}
    (tmp_path / "sub").mkdir()
    assert envinfo.git_state(tmp_path / "sub") == {"commit": None, "dirty": None}  # not the checkout's top


def test_git_state_outside_git_or_without_git(tmp_path, monkeypatch):
    assert envinfo.git_state(tmp_path) == {"commit": None, "dirty": None}
    monkeypatch.setenv("PATH", str(tmp_path))  # no git executable
    assert envinfo.git_state() == {"commit": None, "dirty": None}


def test_json_records_the_commit(tmp_path, capsys):
    code, env = _bench(tmp_path, "-q")
    assert code == 0
    assert env["commit"] == envinfo.git_state()["commit"]
    if shutil.which("git") and (envinfo.SOURCE_ROOT / ".git").exists():
        assert env["commit"] == _git(envinfo.SOURCE_ROOT, "rev-parse", "HEAD")
        assert isinstance(env["dirty"], bool)


def test_json_commit_is_null_outside_a_checkout(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(envinfo, "SOURCE_ROOT", tmp_path)
    code, env = _bench(tmp_path, "-q")
    assert code == 0 and env["commit"] is None and env["dirty"] is None


LINE = re.compile(r"\[(\d)/4\] (log_)?softmax f32 M=64,N=(256|1025) \.\.\. "
                  r"\d+\.\d{3}x ok \(\d+\.\d s(, eta \d+\.\d s)?\)$")


def test_progress_lines_on_stderr_for_long_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "LONG_RUN_S", 0.0)  # this run counts as long
    code, _ = _bench(tmp_path)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 0 and len(lines) == 4
    assert [int(LINE.match(line).group(1)) for line in lines] == [1, 2, 3, 4]
    assert "eta" not in lines[-1]
    assert "[1/4]" not in captured.out


def test_quiet_and_short_runs_show_no_progress(tmp_path, monkeypatch, capsys):
    code, _ = _bench(tmp_path)  # a short run, stderr not a terminal
    assert code == 0 and capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "LONG_RUN_S", 0.0)
    code, _ = _bench(tmp_path, "-q")
    assert code == 0 and capsys.readouterr().err == ""


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_when_progress_is_wanted():
    quick_softmax = suite_cases("softmax", quick=True, dtypes=("f32",))
    full_all = suite_cases("all")
    assert progress.wanted(_Tty(), quiet=False, expected_s=0.1)
    assert not progress.wanted(_Tty(), quiet=True, expected_s=1e6)
    assert not progress.wanted(io.StringIO(), quiet=False, expected_s=progress.expected_seconds(
        quick_softmax, "sim", quick=True))
    for target in ("sim", "mlu-sim", "cuda"):
        assert progress.wanted(io.StringIO(), quiet=False, expected_s=progress.expected_seconds(
            full_all, target, quick=False))
    assert progress.expected_seconds(quick_softmax, "mlu-sim", True) > progress.expected_seconds(
        quick_softmax, "sim", True)


def test_progress_line_format():
    ticks = iter([0.0, 0.0, 2.5, 2.5, 4.0, 4.0, 100.0])
    stream = io.StringIO()
    p = progress.Progress(3, stream=stream, clock=lambda: next(ticks))
    p.start("softmax f32 M=4096,N=1024")
    assert stream.getvalue() == "[1/3] softmax f32 M=4096,N=1024 ... "
    p.finish(progress.outcome({"vs_roofline": 1.0234, "status": "ok"}, "mlu-sim"))
    p.start("rmsnorm f16 M=8,N=8")
    p.finish(progress.outcome({"status": "ERROR"}, "mlu-sim"))
    p.start("x")
    p.finish("done")
    assert stream.getvalue().splitlines() == [
        "[1/3] softmax f32 M=4096,N=1024 ... 1.023x ok (2.5 s, eta 5.0 s)",
        "[2/3] rmsnorm f16 M=8,N=8 ... ERROR (1.5 s, eta 2.0 s)",
        "[3/3] x ... done (1 min 36 s)",
    ]
