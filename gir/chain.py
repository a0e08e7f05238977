"""What the explicit layer's `chain` statement (gir/ir.py `Chain`) says about its status words, for the
simulator, the analyses and codegen alike: which variables name a participant (a thread variable in the status
index: a chain per thread) and how far apart consecutive blocks' words are."""
from __future__ import annotations

from gir import ir
from gir.affine import free_vars, to_affine


def status_vars(s: ir.Chain) -> set[str]:
    """The variables of the status index."""
    return set().union(*(free_vars(i.start if isinstance(i, ir.Slice) else i) for i in s.status.index))


def per_thread(s: ir.Chain, thread_vars) -> bool:
    """A chain per thread (the status index names one of `thread_vars`), else one per block."""
    return bool(status_vars(s) & set(thread_vars))


def stride_coeffs(s: ir.Chain) -> list[int]:
    """Per dimension of the status tensor, the coefficient of the chain variable in the status index (the words
    of block g and g + 1 are sum(coeff_d x the elements of the dimensions after d) apart)."""
    out = []
    for i in s.status.index:
        aff = to_affine(i.start if isinstance(i, ir.Slice) else i)
        out.append(aff.coeffs.get(s.var, 0) if aff is not None else 0)
    return out
