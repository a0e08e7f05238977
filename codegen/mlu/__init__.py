"""BANG-C-like code generation for the simulated MLU (see docs/mlu.md)."""
from gir.codegen.mlu.emit import MluKernelSource, emit_func, emit_module

__all__ = ["MluKernelSource", "emit_func", "emit_module"]
