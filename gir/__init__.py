"""GIR: a memory-centric tensor compiler. Front end: parse, verify, print, evaluate; `gir.compile` (gir/api.py)
turns a program into a callable on numpy arrays or DLPack tensors. The compiler's middle and back ends are the
subpackages gir.passes, gir.codegen and gir.targets (folders passes/, codegen/, targets/; see gir/_layout.py)."""
from gir import _layout

_layout.install()

# isort: split
from gir.api import Kernel, compile
from gir.errors import Diagnostic, GirError, Loc
from gir.parser import parse_file, parse_text
from gir.printer import print_module

__all__ = ["Diagnostic", "GirError", "Kernel", "Loc", "compile", "parse_file", "parse_text", "print_module",
           "import_onnx"]


def __getattr__(name: str):
    if name == "import_onnx":  # gir/onnx needs the optional `onnx` package: imported on first use
        from gir.onnx import import_onnx
        return import_onnx
    raise AttributeError(f"module 'gir' has no attribute {name!r}")
