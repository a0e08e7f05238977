"""`gir run`: lowering + simulator + comparison with the reference evaluator; registry errors."""
import pytest

from gir.cli import main
from gir.targets.registry import TARGETS, get_target
from gir.errors import GirError
from tests.sim.conftest import ROOT

SOFTMAX_REF = """
func softmax(x: f32[M, 1024]) -> (y: f32[M, 1024]) {
  mx[i] = max(x[i, j])
  e[i, j] = exp(x[i, j] - mx[i])
  s[i] = sum(e[i, j])
  y[i, j] = e[i, j] / s[i]
}
"""


def test_explicit_file_without_reference_prints_summary_and_traffic(capsys):
    assert main(["run", str(ROOT / "samples/explicit/softmax_rows.gir"), "--sizes", "M=3"]) == 0
    out = capsys.readouterr().out
    assert "y: float32[3, 1024]" in out and "ratio 1.000" in out


def test_explicit_file_against_reference(tmp_path, capsys):
    ref = tmp_path / "ref.gir"
    ref.write_text(SOFTMAX_REF)
    assert main(["run", str(ROOT / "samples/explicit/softmax_rows.gir"), "--sizes", "M=5",
                 "--reference", str(ref), "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "pass" in out and "FAIL" not in out
    wrong = tmp_path / "wrong.gir"
    wrong.write_text(SOFTMAX_REF.replace("e[i, j] / s[i]", "e[i, j] / (s[i] + 1.0)"))
    assert main(["run", str(ROOT / "samples/explicit/softmax_rows.gir"), "--sizes", "M=5",
                 "--reference", str(wrong)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_operator_file_is_lowered_and_checked(capsys):
    pytest.importorskip("gir.passes.schedule")
    assert main(["run", str(ROOT / "samples/softmax.gir"), "--sizes", "M=5,N=37"]) == 0
    out = capsys.readouterr().out
    assert "pass" in out and "compulsory" in out


def test_unknown_target(capsys):
    with pytest.raises(SystemExit) as exc:  # a usage error: exit 2
        main(["run", str(ROOT / "samples/softmax.gir"), "--target", "tpu"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown target 'tpu'" in err and "sim, cuda" in err


def test_cuda_without_device_exits_1(capsys):
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a CUDA device is present")
    except Exception:
        pass
    pytest.importorskip("gir.passes.schedule")
    assert main(["run", str(ROOT / "samples/softmax.gir"), "--sizes", "M=2,N=8", "--target", "cuda"]) == 1
    assert "no CUDA device available" in capsys.readouterr().err


def test_registry():
    assert get_target("sim").warp_size == 32 and get_target("hip").warp_size == 64
    assert TARGETS["mlu-sim"].family == "mlu"
    from gir.targets.sim import run_func
    assert get_target("sim").load_runner() is run_func
    with pytest.raises(GirError, match="known targets: sim, cuda, hip, mlu-sim"):
        get_target("nope")
