"""Timing-only simulation (``simulate(..., values=False)``): shape-only arguments and the unknown scalar.

In timing-only mode no element values exist: GDRAM arguments and on-chip buffers have a size but no bytes, copies
and vector ops are checked and timed but move no data. A scalar read of an on-chip element (``buf[i]``) yields
`UNKNOWN`, a value that flows through arithmetic, scalar functions and assignments (``float m = mx[r] * 2;``) and
may be passed as the scalar operand of a vector op, but raises an `MluError` as soon as it would decide anything:
a branch or loop condition, ``&&`` / ``||`` / ``?:``, a pointer offset, a copy size or stride, or a vector
element count. Timing-only mode therefore requires control flow and addressing that do not depend on tensor values,
and says so (at the offending statement) when a kernel breaks that rule.
"""
from __future__ import annotations

import numpy as np

from .errors import MluError

_WHY = ("timing-only simulation (values=False): this depends on a value read from on-chip memory, which is not "
        "simulated; timing-only mode requires control flow, pointer offsets, sizes and counts that do not depend "
        "on tensor values")


class ShapeOnly:
    """A pointer argument of a timing-only launch: only its shape and dtype, no data (nothing is allocated)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            raise MluError(f"ShapeOnly: negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"ShapeOnly({self.shape}, {self.dtype})"


class _Unknown:
    """The value of a scalar read in timing-only mode. Arithmetic keeps it unknown; deciding anything raises."""

    __slots__ = ()
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "UNKNOWN"

    def _same(self, *_):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _same

    def _decide(self, *_):
        raise MluError(_WHY)

    __bool__ = __int__ = __float__ = __index__ = __round__ = __trunc__ = _decide


UNKNOWN = _Unknown()
