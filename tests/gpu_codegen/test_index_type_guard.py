"""int32 indices are refused where they cannot address a tensor: at compile time with concrete sizes and a forced
--index-type int32, and at launch (targets/cuda/runner.launch_args, no GPU needed) for metadata compiled with
int32 indices when the run's sizes exceed 2^31-1 elements."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gir.codegen import emit_func
from gir.cli import main
from gir.parser import parse_file
from gir.errors import GirError
from gir.targets.cuda.runner import launch_args

EXPLICIT = str(Path(__file__).parent.parent.parent / "samples/explicit/softmax_rows.gir")


def test_forced_int32_with_too_large_sizes_is_an_error(capsys):
    big = "M=2200000"   # x: 2200000 x 1024 > 2^31 elements
    assert main(["compile", EXPLICIT, "--target", "cuda", "--sizes", big, "--index-type", "int32"]) == 1
    err = capsys.readouterr().err   # the overflow check refuses it first, with a location
    assert "softmax_rows.gir:" in err and "'x' has 2252800000 elements" in err
    with pytest.raises(GirError, match="index type int32 cannot address 'x'"):   # and so does the code generator
        emit_func(parse_file(EXPLICIT).funcs[0], "cuda", {"M": 2200000}, {"index_type": "int32"})
    assert main(["compile", EXPLICIT, "--target", "cuda", "--sizes", big]) == 0   # auto picks int64
    assert "long long" in capsys.readouterr().out


class _Big:
    """Stands for a device array: launch_args reads only .size."""
    def __init__(self, size):
        self.size = size


META = {"name": "k", "grid": ["M", "1", "1"], "block": [128, 1, 1], "index_type": "int32",
        "args": [{"name": "x", "kind": "tensor"}, {"name": "M", "kind": "size", "dtype": "i32"}]}


def test_launch_refuses_int32_kernel_on_huge_tensor():
    grid, block, args = launch_args(META, {"x": _Big(2**31 - 1)}, {"M": 4})
    assert grid == (4, 1, 1) and isinstance(args[1], np.int32)
    with pytest.raises(GirError, match="compiled with int32 indices"):
        launch_args(META, {"x": _Big(2**31)}, {"M": 4})
    assert launch_args(dict(META, index_type="int64"), {"x": _Big(2**31)}, {"M": 4})[0] == (4, 1, 1)


def test_launch_refuses_size_that_does_not_fit_int32():
    with pytest.raises(GirError, match="does not fit its int32 parameter"):
        launch_args(dict(META, grid=["1", "1", "1"]), {"x": _Big(8)}, {"M": 2**31})
