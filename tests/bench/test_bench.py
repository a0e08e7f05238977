"""`gir bench`: suites, per-case metrics on the simulator, JSON/CSV/PNG outputs, reproducibility."""
from __future__ import annotations

import csv
import json

import pytest

from gir.cli import main
from gir.targets.bench.cases import FULL, QUICK, suite_cases
from gir.targets.bench.gpu_timing import rotation_count
from gir.targets.bench.programs import PROGRAMS, program_text


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


def test_bad_arguments_are_usage_errors(tmp_path, capsys):
    """Mistakes on the command line exit 2 (gir.errors.UsageError) before anything runs or is written."""
    src = tmp_path / "lg.gir"
    src.write_text("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j]\n}\n")
    out = tmp_path / "out"
    cases = [
        (["nosuch", "--quick"], "error: unknown suite 'nosuch'"),
        (["softmax", "--dtypes", "f64"], "error: unknown --dtypes entry 'f64' (use f32, f16, bf16)"),
        ([str(src), "--sizes", "K=3"], f"error: --sizes binds 'K', which {src} does not use (its sizes: M, N)"),
        ([str(src), "--sizes", "M=4,N=8,K=3"], "error: --sizes binds 'K'"),
        ([str(src), "--sizes", "M=4"], f"error: size N of {src} is not given (use --sizes N=...)"),
        ([str(src)], f"error: sizes M, N of {src} are not given (use --sizes M=...,N=...)"),
        (["softmax", "--quick", "--sizes", "M=4"], "error: --sizes binds the sizes of .gir files"),
    ]
    for args, message in cases:
        assert main(["bench", *args, "--target", "sim", "-q", "-o", str(out)]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(message) and len(err.splitlines()) == 1, (args, err)
        assert not out.exists()


def test_sizes_of_several_files(tmp_path, capsys):
    """Each file takes the sizes it uses; a size some file uses is no error for the others."""
    a, b = tmp_path / "a.gir", tmp_path / "b.gir"
    a.write_text("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] * 2.0\n}\n")
    b.write_text("func g(x: f32[K]) -> (y: f32[K]) {\n  y[i] = x[i] + 1.0\n}\n")
    out = tmp_path / "out"
    assert main(["bench", str(a), str(b), "--sizes", "M=4,N=8,K=5", "-q", "-o", str(out)]) == 0
    rows = json.loads((out / "results.json").read_text())["results"]
    assert [(r["op"], r["sizes"], r["status"]) for r in rows] == [("a", {"M": 4, "N": 8}, "ok"),
                                                                  ("b", {"K": 5}, "ok")]
    capsys.readouterr()
    assert main(["bench", str(a), str(b), "--sizes", "M=4,N=8,K=5,Q=1", "-q", "-o", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"error: --sizes binds 'Q', which {a} does not use")


@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_a_file_with_reshape_views(tmp_path, target):
    """A view's derived sizes (C / G, H * W) are not given: they follow from the declared ones; inputs travel in
    the declared shapes and are judged like `gir run` judges them."""
    src = tmp_path / "gn.gir"
    view = "f32[N, C, H, W] as [N, 3, C / 3, H * W]"
    src.write_text(f"func gn(x: {view}) -> (y: {view}) {{\n"
                   "  m[n, g] = mean(x[n, g, c, s])\n"
                   "  y[n, g, c, s] = x[n, g, c, s] - m[n, g]\n}\n")
    out = tmp_path / "out"
    assert main(["bench", str(src), "--sizes", "N=2,C=9,H=3,W=5", "--target", target, "-q", "-o", str(out)]) == 0
    rows = json.loads((out / "results.json").read_text())["results"]
    assert [(r["op"], r["status"]) for r in rows] == [("gn", "ok")]
    assert rows[0]["compulsory_bytes"] == 2 * 2 * 9 * 3 * 5 * 4


def test_cuda_target_without_gpu_is_a_clean_error(tmp_path, capsys):
    from gir.targets.cuda import available

    if available():
        pytest.skip("a GPU is present")
    assert main(["bench", "softmax", "--quick", "--target", "cuda", "-o", str(tmp_path)]) == 1
    assert "no CUDA device" in capsys.readouterr().err
