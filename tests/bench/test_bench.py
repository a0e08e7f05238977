"""`gir bench`: suites, per-case metrics on the simulator, JSON/CSV/PNG outputs, reproducibility."""
from __future__ import annotations

import csv
import json

import pytest

from gir.cli import main
from targets.bench.cases import FULL, QUICK, suite_cases
from targets.bench.gpu_timing import rotation_count
from targets.bench.programs import PROGRAMS, program_text


def test_every_program_parses_and_verifies_in_every_dtype():
    from gir.parser import parse_text
    from gir.verifier import verify_module

    for op in PROGRAMS:
        for dt in ("f32", "f16", "bf16"):
            verify_module(parse_text(program_text(op, dt), f"<{op}:{dt}>"))


def test_full_suites_have_the_public_shapes():
    softmax_ns = sorted({s["N"] for op, s in FULL["softmax"] if op == "softmax"})
    assert softmax_ns == [256, 1024, 1025, 4096, 12672, 32768]
    assert {s["N"] for _, s in FULL["norm"]} == {768, 1024, 4096, 5120, 8192, 16384}
    assert all(s == {"A": 128, "B": 4096, "C": 4095} for _, s in FULL["reduce"])
    assert ("permute0213", {"B": 8, "S": 2048, "H": 32, "D": 128}) in FULL["transpose"]
    assert set(FULL) == set(QUICK)
    assert len(suite_cases("all", quick=True)) == 3 * sum(len(v) for v in QUICK.values())


def test_rotation_defeats_l2():
    assert rotation_count(1 << 30) == 1
    assert rotation_count(8 << 20) == 8
    assert rotation_count(60 << 20) == 4


def _bench(tmp_path, *extra):
    out = tmp_path / "out"
    code = main(["bench", "softmax", "--quick", "--target", "sim", "--dtypes", "f32,bf16", "-o", str(out), *extra])
    return code, out


def test_sim_bench_writes_json_csv_png_and_is_reproducible(tmp_path, capsys):
    code, out = _bench(tmp_path, "--seed", "3")
    assert code == 0
    table = capsys.readouterr().out
    assert "traffic_ratio" in table and "softmax[64x256] f32" in table
    data = json.loads((out / "results.json").read_text())
    env = data["environment"]
    assert env["seed"] == 3 and env["target"] == "sim" and "numpy" in env["versions"]
    rows = data["results"]
    assert len(rows) == 8 and all(r["status"] == "ok" for r in rows)
    for r in rows:
        assert r["moved_bytes"] >= r["compulsory_bytes"] > 0
        assert r["rel_err"] < (1e-5 if r["dtype"] == "f32" else 1e-2)
    aligned = [r for r in rows if r["sizes"]["N"] == 256]
    assert all(r["traffic_ratio"] == pytest.approx(1.0, abs=0.02) for r in aligned)
    with open(out / "results.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 8
    png = (out / "softmax-sim.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"

    code, out2 = _bench(tmp_path / "again", "--seed", "3")
    again = json.loads((out2 / "results.json").read_text())["results"]
    assert [r["rel_err"] for r in again] == [r["rel_err"] for r in rows]
    assert [r["moved_bytes"] for r in again] == [r["moved_bytes"] for r in rows]


def test_bad_arguments_are_clean_errors(tmp_path, capsys):
    assert main(["bench", "nosuch", "--target", "sim", "-o", str(tmp_path)]) == 1
    assert "unknown suite 'nosuch'" in capsys.readouterr().err
    assert main(["bench", "softmax", "--dtypes", "f64", "-o", str(tmp_path)]) == 1
    assert not (tmp_path / "results.json").exists()


def test_cuda_target_without_gpu_is_a_clean_error(tmp_path, capsys):
    from targets.cuda import available

    if available():
        pytest.skip("a GPU is present")
    assert main(["bench", "softmax", "--quick", "--target", "cuda", "-o", str(tmp_path)]) == 1
    assert "no CUDA device" in capsys.readouterr().err
