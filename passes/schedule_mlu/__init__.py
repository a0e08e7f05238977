"""MLU scheduling: operator-layer GIR → explicit MLU GIR (kernels over @cluster/@core with @nram/@sram tiles).

    schedule_mlu(func, sizes, mode="fused") -> ir.Func      # verified explicit GIR with concrete sizes
modes: "fused" (one row-model kernel when the function fits, see rowmodel.py), "opbyop" (one kernel per
operator-layer statement, intermediates through GDRAM), "scalar" (general per-statement scalar kernels, the
fallback for functions outside the row model).
"""
from gir.passes.schedule_mlu.schedule import lower_module, schedule_mlu, specialize

__all__ = ["schedule_mlu", "specialize", "lower_module"]
