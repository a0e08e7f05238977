"""A kernel whose `if` condition multiplies two variables cannot be written as isl sets: the analyses must say so
(a warning from the race check, a located error from the traffic / IDFG analyses), never crash."""
from gir.cli import main

KERNEL = """func f(x: f32[M, 64]) -> (y: f32[M]) {
  kernel k {
    parallel b in 0..M @block {
      parallel t in 0..64 @thread {
        alloc r: f32[1] @reg
        if b * M + t < 5 {
          load r[0:1] <- x[b, t:t + 1]
          if t == 0 {
            store y[b:b + 1] <- r[0:1]
          }
        }
      }
    }
  }
}
"""


def _write(tmp_path):
    p = tmp_path / "na.gir"
    p.write_text(KERNEL)
    return str(p)


def test_check_warns_instead_of_crashing(tmp_path, capsys):
    assert main(["check", _write(tmp_path)]) == 0
    err = capsys.readouterr()
    assert "not quasi-affine" in err.out + err.err and "Traceback" not in err.out + err.err


def test_analyze_reports_the_instruction(tmp_path, capsys):
    path = _write(tmp_path)
    for extra in ([], ["--idfg"]):
        assert main(["analyze", path, "--sizes", "M=4"] + extra) == 1
        err = capsys.readouterr().err
        assert f"{path}:7:11: error: cannot analyse this load" in err and "^" in err
