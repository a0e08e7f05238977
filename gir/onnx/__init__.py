"""Importing ONNX models: the memory-bound subgraphs of a graph become operator-layer GIR functions.

`import_onnx(model)` returns an `ImportResult`: the functions (GIR text, the mapping of their inputs and
outputs to ONNX tensors) and the nodes left out with the reason. Needs the `onnx` package
(`pip install gir-compiler[onnx]`). See docs/onnx.md.
"""
from __future__ import annotations

from gir.onnx.importer import ImportedFunction, ImportResult, LeftOut, import_onnx

__all__ = ["import_onnx", "ImportResult", "ImportedFunction", "LeftOut"]
