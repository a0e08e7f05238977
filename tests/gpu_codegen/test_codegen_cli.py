"""`gir compile`: emit gir/source, -o outputs (atomic, with metadata), round trip of the emitted GIR."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gir.codegen import combined_source, emit_module
from gir.cli import main
from gir.parser import parse_text

ROOT = Path(__file__).parent.parent.parent
SOFTMAX = str(ROOT / "samples/softmax.gir")
EXPLICIT = str(ROOT / "samples/explicit/softmax_rows.gir")


def test_emit_source_explicit(capsys):
    assert main(["compile", EXPLICIT, "--target", "hip"]) == 0
    out = capsys.readouterr().out
    assert "#include <hip/hip_runtime.h>" in out and "__shfl_xor(" in out


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_emitted_gir_parses_back_to_the_same_code(capsys, target):
    pytest.importorskip("gir.passes.schedule")
    assert main(["compile", SOFTMAX, "--target", target, "--emit", "gir"]) == 0
    gir_text = capsys.readouterr().out
    assert main(["compile", SOFTMAX, "--target", target, "--emit", "source"]) == 0
    source = capsys.readouterr().out
    assert "kernel " in gir_text
    assert combined_source(emit_module(parse_text(gir_text), target)) == source


def test_output_directory(tmp_path, capsys):
    assert main(["compile", EXPLICIT, "-o", f"{tmp_path / 'out'}/", "--emit", "all"]) == 0
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["softmax_rows.cu", "softmax_rows.gir", "softmax_rows.json"]
    meta = json.loads((tmp_path / "out/softmax_rows.json").read_text())
    assert meta["grid"] == ["M", "1", "1"] and meta["block"] == [128, 1, 1]
    assert [a["name"] for a in meta["args"]] == ["x", "y", "M"]


def test_output_file_hip(tmp_path, capsys):
    pytest.importorskip("gir.passes.schedule")
    out = tmp_path / "k.hip"
    assert main(["compile", SOFTMAX, "--target", "hip", "-o", str(out)]) == 0
    assert "__global__" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.hip"]  # exactly the file named
    assert main(["compile", SOFTMAX, "--target", "hip", "-o", str(out), "--meta", str(tmp_path / "k.json")]) == 0
    assert isinstance(json.loads((tmp_path / "k.json").read_text()), list)


def test_errors_leave_no_output(tmp_path, capsys):
    bad = tmp_path / "bad.gir"
    bad.write_text("func f(x: f32[N]) -> (y: f32[N]) {\n  kernel k {\n    parallel b in 0..N @block {\n"
                   "      parallel t in 0..128 @lane {\n      }\n    }\n  }\n}\n")
    assert main(["compile", str(bad), "-o", str(tmp_path / "out")]) == 1
    assert "bad.gir:4:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
