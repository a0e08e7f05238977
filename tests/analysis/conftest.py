from pathlib import Path

import pytest

from gir.cli.common import load_verified
from gir.parser import parse_text
from gir.verifier import verify_module

KERNELS = Path(__file__).parent / "kernels"
ROOT = Path(__file__).parents[2]


def load(name: str):
    path = ROOT / "samples/explicit/softmax_rows.gir" if name == "softmax_rows" else KERNELS / f"{name}.gir"
    return load_verified(str(path)).funcs[0]


def load_text(text: str):
    module = parse_text(text)
    verify_module(module)
    return module.funcs[0]


@pytest.fixture
def kernel_file():
    return lambda name: str(KERNELS / f"{name}.gir")
