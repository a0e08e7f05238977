"""``__bang_fusion``: two element-wise ops in one vector instruction (registers into ``VECTOR_OPS``).

    __bang_fusion(OP, dst, src0, src1, src2, n)        dst[i] = (src0[i] FIRST src1[i]) SECOND src2[i]
    __bang_fusion(OP, dst, src0, src1, src2, n, m)     pointer src1 / src2 are read as src[i % m] (cycled)

``OP`` is one of ``lang.FUSION_OPS`` (FMA: src0*src1+src2, FMS: src0*src1-src2, FAM: (src0+src1)*src2,
FSM: (src0-src1)*src2). ``src0`` and ``dst`` are pointers; ``src1`` and ``src2`` are each a pointer or a scalar
(rounded to the element type first, as in ``*_scalar`` ops). Float element types only.

Why two roundings and a simple-class cost: Cambricon documents that on MLU 3xx the "FMA" is not a fused
multiply-add; the two ops run back to back on two ALU groups, each rounding its result, at the throughput of one
simple op. So the values are exactly those of the two separate ops computed in float32 (the intermediate rounded
to float32, the result rounded once to the element type when stored) and the cost is one simple-class op.
"""
from __future__ import annotations

import numpy as np

from .errors import MluError
from .lang import FUSION_OPS
from .memory import Ptr
from .vector import F32, _count, _Op, _register, _wide

_FNS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
NAME = "__bang_fusion"


def _fusion(c, args, span):
    kind, dst, src0, src1, src2, n, *rest = args
    first, second = (_FNS[k] for k in FUSION_OPS[kind])
    op = _Op(c, NAME, span)
    for ptr, role in ((dst, "dst"), (src0, "src0")):
        if not isinstance(ptr, Ptr):
            raise MluError(f"{NAME}: operand '{role}' must be a pointer")
    vectors = [p for p in (src1, src2) if isinstance(p, Ptr)]
    elem = op.same_type(dst, src0, *vectors, floats_only=True)
    _count(NAME, n)
    m = n
    if rest:
        m = _count(NAME, rest[0], "m")
        if n % m:
            raise MluError(f"{NAME}: n={n} is not a multiple of m={m}")
        if not vectors:
            raise MluError(f"{NAME}: m is given but src1 and src2 are both scalars (nothing to cycle)")
    a = op.operand(src0, n, "src0")
    others = []
    for value, role in ((src1, "src1"), (src2, "src2")):
        if isinstance(value, Ptr):
            data = op.operand(value, m, role)
            others.append(None if data is None else np.tile(_wide(data), n // m))
        else:
            others.append(np.array(value).astype(elem.dtype).astype(F32) if op.values else None)
    out = op.operand(dst, n, "dst", write=True)
    if op.values:
        t = first(_wide(a), others[0])          # float32, rounded
        out[...] = second(t, others[1])         # float32, rounded, then to the element type on store
    op.finish("simple")


_register(NAME, "oppaai?i", _fusion)
