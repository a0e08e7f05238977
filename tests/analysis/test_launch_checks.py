"""The checks of what the hardware refuses: threads per block, warp collectives under lane-divergent conditions,
stores into inputs, and index arithmetic that overflows int32 on the MLU. One kernel that passes and one planted
bug per rule; the planted GPU bugs are also rejected by the CUDA emulator, so the checks and the emulator agree."""
import numpy as np
import pytest

from gir.cli import main
from gir.errors import GirError
from gir.passes.analysis.checks import check_kernel
from tests.analysis.conftest import KERNELS, ROOT, load, load_text


def diags(func, **kw):
    return check_kernel(func, func.kernels[0], **kw)


def errors(func, check=None, **kw):
    return [d for d in diags(func, **kw) if d.severity == "error" and check in (None, d.check)]


def file_text(name: str) -> str:
    return (KERNELS / f"{name}.gir").read_text()


def sim_kernel(name: str) -> str:
    return (ROOT / "tests/sim/kernels" / f"{name}.gir").read_text()


# ------------------------------------------------------------------ threads per block
def test_block_of_32_threads_passes():
    assert errors(load("threads_32")) == []


@pytest.mark.parametrize("target, machine", [("cuda", "H200"), ("hip", "MI300X")])
def test_block_of_4096_threads_is_an_error(target, machine):
    ds = errors(load("threads_4096"), target=target)
    assert [d.check for d in ds] == ["threads"]
    assert "block of 4096 threads" in ds[0].message and "1024 threads per block" in ds[0].message
    assert machine in ds[0].message and ds[0].loc.line == 5  # the `parallel t in 0..4096 @thread` scope


SIZED = """
func k(x: f32[M, T]) -> (y: f32[M, T]) {
  kernel rows {
    parallel i in 0..M @block {
      parallel t in 0..T @thread {
        alloc r: f32[1] @reg
        load r[0:1] <- x[i, t:t + 1]
        store y[i, t:t + 1] <- r[0:1]
      }
    }
  }
}
"""


def test_block_size_given_by_a_size():
    f = load_text(SIZED)
    assert errors(f, "threads", sizes={"T": 1024}) == []
    assert "block of 2048 threads" in errors(f, "threads", sizes={"T": 2048})[0].message
    warn = [d for d in diags(f) if d.check == "threads"]
    assert [d.severity for d in warn] == ["warning"] and "'T'" in warn[0].message
    assert errors(f, "threads", strict=True)[0].check == "threads"


TWO_D = """
func k(x: f32[M, 256]) -> (y: f32[M, 256]) {
  kernel tiles {
    parallel i in 0..M @block {
      parallel ty in 0..TY @thread {
        parallel tx in 0..256 @thread {
          alloc r: f32[1] @reg
          if ty == 0 {
            load r[0:1] <- x[i, tx:tx + 1]
            store y[i, tx:tx + 1] <- r[0:1]
          }
        }
      }
    }
  }
}
"""


def test_two_dimensional_block():
    assert errors(load_text(TWO_D.replace("TY", "4")), "threads") == []
    ds = errors(load_text(TWO_D.replace("TY", "8")), "threads")
    assert "block of 2048 threads (256 x 8 x 1)" in ds[0].message


WIDE_LANES = """
func k(x: f32[M, 64]) -> (y: f32[M, 64]) {
  kernel wide {
    parallel b in 0..M @block {
      parallel w in 0..1 @warp {
        parallel l in 0..64 @lane {
          alloc r: f32[1] @reg
          load r[0:1] <- x[b, l:l + 1]
          store y[b, l:l + 1] <- r[0:1]
        }
      }
    }
  }
}
"""


def test_lane_extent_against_the_warp_size():
    f = load_text(WIDE_LANES)
    ds = errors(f, "threads")
    assert "@lane extent 64 exceeds the warp size 32" in ds[0].message
    assert errors(f, "threads", target="hip") == []  # 64-lane wavefronts


def test_cores_per_cluster_on_the_mlu():
    text = sim_kernel("mlu_reverse")
    assert errors(load_text(text), "threads") == []
    ds = errors(load_text(text.replace("parallel k in 0..4 @core", "parallel k in 0..8 @core", 1)), "threads")
    assert "@core extent 8" in ds[0].message and "4 cores per cluster" in ds[0].message


# ------------------------------------------------------------------ divergent collectives
def test_uniform_allreduce_passes():
    assert errors(load_text(sim_kernel("warp_rowsum"))) == []


def test_allreduce_under_a_lane_dependent_if():
    ds = errors(load("warp_rowsum_divergent"))
    assert [d.check for d in ds] == ["collective"] and "allreduce over 'l'" in ds[0].message
    cex = ds[0].cex
    assert (cex["l@1"] < 16) != (cex["l@2"] < 16)
    assert ds[0].loc.line == 15
    assert errors(load("warp_rowsum_divergent"), target="hip")[0].check == "collective"


def _rowsum(guard: str) -> str:
    text = sim_kernel("warp_rowsum")
    return text.replace("          allreduce sum s[0:1] over l\n", f"          {guard} {{\n"
                        "            allreduce sum s[0:1] over l\n          }\n")


@pytest.mark.parametrize("guard", ["if b % 2 == 0", "if b < M", "for k in 0..3", "for j in l..64 step 32"])
def test_conditions_uniform_across_the_warp_pass(guard):
    assert errors(load_text(_rowsum(guard)), "collective") == []


@pytest.mark.parametrize("guard", ["if l != 3", "if l + b < 20", "for j in l..48 step 32", "for j in 0..l"])
def test_conditions_that_split_the_warp_fail(guard):
    assert errors(load_text(_rowsum(guard)), "collective") != []


THREADS_REDUCE = """
func k(x: f32[M, 64]) -> (y: f32[M, 2]) {
  kernel halves {
    parallel b in 0..M @block {
      parallel t in 0..64 @thread {
        alloc s: f32[1] @reg
        load s[0:1] <- x[b, t:t + 1]
        if COND {
          allreduce sum s[0:1] over t with width=32
        }
        if t == 0 {
          store y[b, 0:1] <- s[0:1]
        }
      }
    }
  }
}
"""


def test_thread_allreduce_groups_are_hardware_warps():
    assert errors(load_text(THREADS_REDUCE.replace("COND", "t < 32")), "collective") == []  # warp 0 only
    assert errors(load_text(THREADS_REDUCE.replace("COND", "t < 48")), "collective") != []


SYNC_WARP = """
func k(x: f32[M, 32]) -> (y: f32[M, 32]) {
  kernel sw {
    parallel b in 0..M @block {
      parallel w in 0..1 @warp {
        parallel l in 0..32 @lane {
          alloc r: f32[1] @reg
          load r[0:1] <- x[b, l:l + 1]
          if COND {
            sync @warp
          }
          store y[b, l:l + 1] <- r[0:1]
        }
      }
    }
  }
}
"""


def test_sync_warp_under_a_lane_dependent_if():
    assert errors(load_text(SYNC_WARP.replace("COND", "b == 0")), "collective") == []
    ds = errors(load_text(SYNC_WARP.replace("COND", "l == 0")), "collective")
    assert "sync @warp" in ds[0].message


def test_barrier_in_a_loop_every_thread_runs_equally_often():
    text = sim_kernel("diverge").replace("if t < 32 {", "for j in t..t + 2 {")
    assert errors(load_text(text), "barrier") == []


# ------------------------------------------------------------------ stores into inputs
def test_store_into_an_input():
    ds = errors(load("input_store"))
    assert [d.check for d in ds] == ["input"]
    assert ds[0].message == "[input] store into input tensor 'x': inputs are read-only"
    assert (ds[0].loc.line, ds[0].loc.col) == (10, 11)
    assert "^~~~" in ds[0].format()


def test_mlu_store_into_an_input():
    text = sim_kernel("mlu_reverse")
    assert errors(load_text(text), "input") == []
    bad = text.replace("store y[c * 256", "store x[c * 256")
    assert "'x'" in errors(load_text(bad), "input")[0].message


def test_operator_layer_assignment_to_an_input(tmp_path, capsys):
    path = tmp_path / "op.gir"
    path.write_text("func f(x: f32[N]) -> (y: f32[N]) {\n  x[i] = x[i] * 2.0\n  y[i] = x[i]\n}\n")
    assert main(["check", str(path)]) == 1
    assert "op.gir:2:3: error: cannot assign to input 'x'" in capsys.readouterr().err


# ------------------------------------------------------------------ MLU index overflow
HUGE = "func f(x: f32[SIZE]) -> (y: f32[SIZE]) {\n  y[i] = x[i] * 2.0\n}\n"


@pytest.mark.parametrize("extra", [[], ["--no-check"]])
def test_mlu_refuses_2_pow_40_elements(tmp_path, capsys, extra):
    path = tmp_path / "huge.gir"
    path.write_text(HUGE.replace("SIZE", str(2 ** 40)))
    assert main(["compile", str(path), "--target", "mlu", *extra]) == 1
    err = capsys.readouterr().err
    assert "huge.gir:1:8: error: " in err and "^~~" in err and "Traceback" not in err
    assert "index arithmetic overflows int32 on the MLU target: 'x' has 2^40 elements" in err


def test_mlu_sizes_within_int32(tmp_path, capsys):
    path = tmp_path / "big.gir"
    path.write_text(HUGE.replace("SIZE", "N"))
    assert main(["compile", str(path), "--target", "mlu", "--sizes", "N=1048576"]) == 0
    assert main(["compile", str(path), "--target", "mlu", "--sizes", f"N={2 ** 31}"]) == 1
    assert "'x' has 2^31 elements" in capsys.readouterr().err


def test_explicit_mlu_kernel_overflow_ignores_int64():
    text = sim_kernel("mlu_reverse")
    f = load_text(text.replace("kernel mlu_reverse {", "kernel mlu_reverse with index=int64 {"))
    assert errors(f, "overflow", sizes={"N": 2 ** 30}) == []
    ds = errors(f, "overflow", sizes={"N": 2 ** 31}, index_type="auto")
    assert ds and "on the MLU target" in ds[0].message and ds[0].loc.line == 3  # the parameter's declaration


# ------------------------------------------------------------------ the command line
def test_cli_check(kernel_file, capsys):
    assert main(["check", "-q", "samples/explicit/softmax_rows.gir", kernel_file("threads_32")]) == 0
    assert main(["check", "--target", "hip", kernel_file("threads_4096")]) == 1
    assert "MI300X" in capsys.readouterr().err
    for name, check in [("warp_rowsum_divergent", "collective"), ("input_store", "input")]:
        assert main(["check", kernel_file(name)]) == 1
        err = capsys.readouterr().err
        assert f"[{check}]" in err and "Traceback" not in err


# ------------------------------------------------------------------ agreement with the CUDA emulator
@pytest.mark.parametrize("name, sizes, says", [("threads_4096", {"M": 2, "N": 70}, "4096 threads"),
                                              ("input_store", {"M": 2, "N": 70}, "modified input 'x'"),
                                              ("warp_rowsum_divergent", {"M": 2}, "warp collective")])
def test_the_emulator_rejects_what_the_checks_reject(name, sizes, says):
    from gir.targets.cuda_emu import available, run_func
    if not available():
        pytest.skip("g++ with C++20 and _Float16 not found")
    f = load(name)
    assert errors(f)
    rng = np.random.default_rng(0)
    inputs = {p.name: rng.standard_normal(tuple(sizes.get(d, d) for d in p.type.shape)).astype(np.float32)
              for p in f.params}
    with pytest.raises(GirError, match=says):
        run_func(f, inputs, sizes)
