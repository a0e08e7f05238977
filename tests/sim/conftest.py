from pathlib import Path

import pytest

from gir.parser import parse_file, parse_text
from gir.verifier import verify_module

KERNELS = Path(__file__).parent / "kernels"
ROOT = Path(__file__).parents[2]


def load_kernel(name: str):
    module = parse_file(KERNELS / f"{name}.gir")
    verify_module(module)
    return module.funcs[0]


def parse_func(text: str):
    module = parse_text(text, "<test>")
    verify_module(module)
    return module.funcs[0]


@pytest.fixture
def rng(request):
    import numpy as np
    import zlib
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
