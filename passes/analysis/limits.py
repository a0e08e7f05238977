"""On-chip capacities used by the checks, per target: taken from the machine descriptions in
`targets/` when present, else from the published numbers below."""
from __future__ import annotations

from gir import ir
from gir.errors import GirError

KIB = 1024
GPU_SHARED = {"cuda": 48 * KIB, "cuda-optin": 227 * KIB, "hip": 64 * KIB}
MLU_DEFAULTS = {ir.Level.nram: 768 * KIB, ir.Level.wram: 1024 * KIB, ir.Level.sram: 4096 * KIB}
TARGETS = tuple(GPU_SHARED) + ("mlu",)
# @reg arrays beyond the register file spill to local memory, which CUDA caps at 512 KiB per thread
GPU_REG_PER_THREAD = 512 * KIB
# int32 index arithmetic: a tensor's one-past-the-end linear index must stay below this. The MLU code generator
# has no other index type (the BANG C of targets/mlu has no 64-bit integers); GPU kernels may use int64.
INT32_LIMIT = 2 ** 31


def capacity_limits(target: str, family: str, attrs: dict[str, str]) -> dict[ir.Level, int]:
    """Bytes available per owner (block for @shared, thread for @reg, core for @nram/@wram, cluster for @sram).
    A CUDA kernel `with shared=optin` gets the opt-in limit (227 KiB on H100)."""
    if target not in TARGETS:
        raise GirError(f"unknown target '{target}' (expected one of {', '.join(TARGETS)})")
    if family == "mlu":
        return _mlu_limits()
    name = "cuda-optin" if target == "cuda" and attrs.get("shared") == "optin" else target
    return {ir.Level.shared: GPU_SHARED.get(name, GPU_SHARED["cuda"]), ir.Level.reg: GPU_REG_PER_THREAD}


def _mlu_limits() -> dict[ir.Level, int]:
    try:
        from gir.passes.machines import MluMachine
        m = MluMachine()
        return {ir.Level.nram: m.nram_bytes, ir.Level.wram: m.wram_bytes, ir.Level.sram: m.sram_bytes}
    except (ImportError, AttributeError, TypeError):
        return dict(MLU_DEFAULTS)


def elements_text(n: int) -> str:
    """An element count as people read it: `2^40` for powers of two, else the number."""
    return f"2^{n.bit_length() - 1}" if n > 1 and n & (n - 1) == 0 else str(n)


def mlu_index_overflow(name: str, numel: int) -> tuple[str, list[str]] | None:
    """(message, notes) for a tensor whose linear indices do not fit the MLU target's int32, or None."""
    if numel < INT32_LIMIT:
        return None
    return (f"index arithmetic overflows int32 on the MLU target: '{name}' has {elements_text(numel)} elements",
            ["the MLU code generator indexes tensors with int: at most 2^31 - 1 elements per tensor",
             "split the tensor, or compile for a GPU target"])
