"""Analyses of explicit kernels: access relations (isl), the instruction dataflow graph,
traffic per memory level, and z3/isl safety checks. See README.md in this folder."""
from gir.passes.analysis.checks import check_kernel, check_module
from gir.passes.analysis.idfg import IDFG, Edge, build_idfg
from gir.passes.analysis.traffic import compulsory_bytes, kernel_traffic

__all__ = ["check_kernel", "check_module", "IDFG", "Edge", "build_idfg", "compulsory_bytes", "kernel_traffic"]
