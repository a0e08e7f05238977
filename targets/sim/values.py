"""Values of the SIMT simulator: integer index expressions, tile regions and compute expressions,
all evaluated for the active instances at once.

Conventions: a per-instance value is a numpy array whose leading axis runs over the active instances
(`n_act` rows); a uniform value is a Python int or a 0-d array. A tile of shape T is an array (n_act, *T).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gir import ir
from gir.affine import slice_extent
from gir.errors import GirError
from gir.evaluate import _Evaluator

_F32 = object.__new__(_Evaluator)  # borrow the reference evaluator's arithmetic, in f32
_F32.cdt, _F32.guarded = np.dtype(np.float32), 0
_F64 = object.__new__(_Evaluator)  # ... and in f64, for operations with an f64 operand (docs/gir.md)
_F64.cdt, _F64.guarded = np.dtype(np.float64), 0


def _arith(*xs) -> _Evaluator:
    """f64 arithmetic if any operand is f64, else f32 (16-bit floats are already widened)."""
    return _F64 if any(np.asarray(x).dtype == np.float64 for x in xs) else _F32


def _exact_literals(ev: _Evaluator, exprs, vals) -> list:
    """In f64 arithmetic a float literal takes its full (f64) value, not the f32 one `fexpr` gives it."""
    if ev is not _F64:
        return list(vals)
    return [np.asarray(e.value, np.float64) if isinstance(e, ir.Const) and isinstance(e.value, float) else v
            for e, v in zip(exprs, vals)]

IDENTITY = {"sum": 0.0, "max": -np.inf, "min": np.inf, "prod": 1.0}
REDUCE_FN = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean}


@dataclass
class Buf:
    """A buffer of the running function: global (`depth` -1, `data` of the declared shape) or
    on chip (`data` of shape (owners, *shape), one row per instance of the scope at `depth`)."""
    name: str
    dtype: ir.DType
    shape: tuple[int, ...]
    level: ir.Level
    depth: int
    data: np.ndarray
    tracker: object = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def flat(self) -> np.ndarray:
        return self.data.reshape(-1)


@dataclass
class Region:
    buf: Buf
    rshape: tuple[int, ...]
    ref: ir.Ref | None = None
    view: tuple | None = None        # fast path: basic index into buf.data giving (n_act, *rshape)
    off: np.ndarray | None = None    # general path: (n_act, K) flat indices into buf.flat
    valid: np.ndarray | None = None  # (n_act, K): elements inside the tensor (masked accesses)

    @property
    def k(self) -> int:
        return int(np.prod(self.rshape, dtype=np.int64))


def slice_len(s: ir.Slice, cache: dict) -> int:
    n = cache.get(id(s))
    if n is None:
        d = slice_extent(s.start, s.stop)
        if d is None:
            raise GirError("slice length must be a constant", s.loc)
        n = cache[id(s)] = max(0, -(-d // s.step))
    return n


class Values:
    """Mixin of the kernel executor: needs `env`, `sel`, `n_act`, `frames`, `block_base`, `describe()`."""

    # ------------------------------------------------------------ integers
    def ival(self, e):
        if isinstance(e, ir.Const):
            return e.value
        if isinstance(e, ir.Var):
            v = self.env.get(e.name)
            if v is None:
                raise GirError(f"unknown name '{e.name}'", e.loc)
            if isinstance(v, np.ndarray) and self.sel is not None:
                return v[self.sel]
            return v
        if isinstance(e, ir.BinOp):
            a, b = self.ival(e.lhs), self.ival(e.rhs)
            if e.op in ("and", "or"):
                if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                    return (np.logical_and if e.op == "and" else np.logical_or)(a, b)
                return (a and b) if e.op == "and" else (a or b)
            if e.op in ("//", "%") and not isinstance(b, np.ndarray) and b == 0:
                raise GirError("division by zero in an index expression", e.loc)
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b,
                    "%": lambda: a % b, "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b,
                    ">=": lambda: a >= b, "==": lambda: a == b, "!=": lambda: a != b,
                    "/": lambda: a // b}[e.op]()
        if isinstance(e, ir.UnOp):
            a = self.ival(e.operand)
            if e.op == "not":
                return np.logical_not(a) if isinstance(a, np.ndarray) else not a
            return -a
        if isinstance(e, ir.Call) and e.fn in ("min", "max", "cdiv") and len(e.args) == 2:
            a, b = self.ival(e.args[0]), self.ival(e.args[1])
            if e.fn == "cdiv":
                return -(-a // b)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                return (np.minimum if e.fn == "min" else np.maximum)(a, b)
            return min(a, b) if e.fn == "min" else max(a, b)
        raise GirError("expected an integer expression of sizes and loop variables", getattr(e, "loc", None))

    # ------------------------------------------------------------- regions
    def region(self, ref: ir.Ref, masked: bool = False) -> Region:
        buf = self.buffers.get(ref.name)
        if buf is None:
            raise GirError(f"undefined buffer '{ref.name}'", ref.loc)
        parts, rshape = [], []
        for ix in ref.index:
            if isinstance(ix, ir.Slice):
                n = slice_len(ix, self.slice_cache)
                parts.append((self.ival(ix.start), n, ix.step))
                rshape.append(n)
            else:
                parts.append((self.ival(ix), None, 1))
        rshape = tuple(rshape)
        uniform = all(not isinstance(p[0], np.ndarray) for p in parts)
        if uniform and buf.depth == len(self.frames) - 1:
            return self._fast_region(ref, buf, parts, rshape)
        return self._general_region(ref, buf, parts, rshape, masked and buf.level.off_chip)

    def _fast_region(self, ref, buf, parts, rshape) -> Region:
        view = [self.sel if self.sel is not None else slice(None)]
        for d, ((start, n, step), dim) in enumerate(zip(parts, buf.shape)):
            last = start + (n - 1) * step if n is not None else start
            if start < 0 or last >= dim:
                index = [p[0] for p in parts]
                index[d] = start if start < 0 else last
                self.oob(ref, buf, index, 0)
            view.append(int(start) if n is None else slice(int(start), int(start) + n * step, step))
        return Region(buf, rshape, ref, view=tuple(view))

    def _general_region(self, ref, buf, parts, rshape, masked) -> Region:
        r = len(rshape)
        idx, axis = [], 0
        for start, n, step in parts:
            v = np.asarray(start, dtype=np.int64)
            v = v.reshape((-1,) + (1,) * r) if v.ndim else v.reshape((1,) * (r + 1))
            if n is not None:
                shape = [1] * (r + 1)
                shape[axis + 1] = n
                v = v + (np.arange(n, dtype=np.int64) * step).reshape(shape)
                axis += 1
            idx.append(v)
        full = (self.n_act,) + rshape
        inside = None
        for v, dim in zip(idx, buf.shape):
            ok = (v >= 0) & (v < dim)
            if not ok.all():
                inside = ok if inside is None else inside & ok
        if inside is not None:
            inside = np.broadcast_to(inside, full)
            if not masked:
                self.oob_general(ref, buf, idx, inside)
        strides = np.cumprod((1,) + tuple(reversed(buf.shape[1:])), dtype=np.int64)[::-1]
        off = sum(v * int(s) for v, s in zip(idx, strides)) if idx else np.zeros((1,) * (r + 1), np.int64)
        off = np.broadcast_to(off, full)
        if buf.depth >= 0:
            rows = self.owner_rows(buf.depth).reshape((-1,) + (1,) * r)
            off = off + rows * buf.size
        if inside is not None:
            off = np.where(inside, off, 0)
        k = int(np.prod(rshape, dtype=np.int64))
        valid = None if inside is None else inside.reshape(self.n_act, k)
        return Region(buf, rshape, ref, off=np.ascontiguousarray(off).reshape(self.n_act, k), valid=valid)

    def oob_general(self, ref, buf, idx, inside) -> None:
        pos = np.unravel_index(int(np.flatnonzero(~inside)[0]), inside.shape)
        index = [int(np.broadcast_to(v, inside.shape)[pos]) for v in idx]
        self.oob(ref, buf, index, pos[0])

    def oob(self, ref, buf, index, row) -> None:
        raise GirError(f"out-of-bounds access to '{buf.name}': index {index} outside its shape {list(buf.shape)}",
                       ref.loc, [f"by {self.describe(row)}",
                                 "use 'with mask' on loads/stores of tails" if buf.level.off_chip else
                                 "on-chip regions must lie inside their buffer"])

    def read(self, reg: Region) -> np.ndarray:
        """Values of a region, (n_act, *rshape); masked-out elements hold garbage."""
        if reg.view is not None:
            return reg.buf.data[reg.view]
        return reg.buf.flat[reg.off].reshape((self.n_act,) + reg.rshape)

    def write(self, reg: Region, values: np.ndarray, only: np.ndarray | None = None) -> None:
        """Store (n_act, *rshape)-compatible values; `only` (n_act, K) limits the elements written."""
        values = np.asarray(values).astype(reg.buf.dtype.numpy, copy=False)
        if reg.view is not None:
            reg.buf.data[reg.view] = np.broadcast_to(values, (self.n_act,) + reg.rshape)
            return
        values = np.broadcast_to(values, (self.n_act,) + reg.rshape).reshape(self.n_act, reg.k)
        if only is None:
            reg.buf.flat[reg.off] = values
        else:
            reg.buf.flat[reg.off[only]] = values[only]

    # ------------------------------------------------------------- compute
    def fexpr(self, e):
        if isinstance(e, ir.Const):
            return np.asarray(e.value, dtype=np.float32) if isinstance(e.value, float) else np.asarray(e.value)
        if isinstance(e, ir.Var):
            return np.asarray(self.ival(e), dtype=np.int64)
        if isinstance(e, ir.Ref):
            vals = self.read_tile(e)
            return vals.astype(np.float32) if vals.dtype.kind == "f" and vals.dtype.itemsize < 4 else vals
        if isinstance(e, ir.Reduce):
            x = self.fexpr(e.arg)
            if x.ndim <= 1:
                return x
            if x.dtype == np.bool_ or (x.dtype.kind in "iu" and e.op == "mean"):
                x = x.astype(np.float32)
            axes = tuple(range(1, x.ndim)) if e.axes is None else tuple(a + 1 for a in e.axes)
            return REDUCE_FN[e.op](x, axis=axes)
        if isinstance(e, ir.UnOp):
            x = self.fexpr(e.operand)
            return np.logical_not(x) if e.op == "not" else -x
        if isinstance(e, ir.BinOp):
            a, b = align(self.fexpr(e.lhs), self.fexpr(e.rhs))
            ev = _arith(a, b)
            a, b = _exact_literals(ev, (e.lhs, e.rhs), (a, b))
            return ev.binop(e.op, a, b)
        if isinstance(e, ir.Call) and e.fn == "transpose":   # (n_act, R, C) -> (n_act, C, R)
            if len(e.args) != 1:
                raise GirError("transpose(a, r) (a tile read as r rows) is an MLU kernel builtin; the SIMT simulator "
                               "runs transpose(a)", e.loc)
            return np.swapaxes(self.fexpr(e.args[0]), -1, -2)
        if isinstance(e, ir.Call) and e.fn == "reverse":     # (n_act, R, C): flip axis 0 or 1 of every tile
            from gir.verify_kernel import reverse_axis
            x, axis = np.asarray(self.fexpr(e.args[0])), reverse_axis(e)
            if x.ndim != 3 or axis is None:
                raise GirError("reverse() takes a 2-D tile and an axis of 0 or 1", e.loc)
            return np.flip(x, axis=1 + axis)
        if isinstance(e, ir.Call) and e.fn == "gather_cols":  # out[r, 0] = a[r, idx[r, 0]], 0 when out of range
            a, idx = (np.asarray(self.fexpr(x)) for x in e.args)
            if a.ndim != 3 or idx.ndim != 3:
                raise GirError("gather_cols() takes 2-D tiles", e.loc)
            cols = np.nan_to_num(idx[..., 0]).astype(np.int64)
            ok = (cols >= 0) & (cols < a.shape[-1])
            picked = np.take_along_axis(a, np.clip(cols, 0, a.shape[-1] - 1)[..., None], axis=-1)
            return np.where(ok[..., None], picked, np.zeros_like(picked))
        if isinstance(e, ir.Call):
            args = align(*[self.fexpr(a) for a in e.args])
            if e.fn == "cdiv":
                return -(-args[0] // args[1])
            if len(args) == 1 and e.fn in ("max", "min"):
                return self.fexpr(ir.Reduce(e.fn, e.args[0], loc=e.loc))
            if e.fn == "f64":
                return np.asarray(_exact_literals(_F64, e.args, args)[0]).astype(np.float64)
            ev = _arith(*args)
            return ev.call(e.fn, _exact_literals(ev, e.args, args))
        raise GirError(f"cannot evaluate {type(e).__name__} in a kernel", getattr(e, "loc", None))


def align(*xs):
    """Give per-instance tiles the same rank by inserting unit axes after the instance axis."""
    xs = [np.asarray(x) for x in xs]
    rank = max((x.ndim - 1 for x in xs if x.ndim), default=0)
    return [x.reshape((x.shape[0],) + (1,) * (rank - x.ndim + 1) + x.shape[1:]) if x.ndim else x for x in xs]


def fit(values: np.ndarray, n: int, rshape: tuple[int, ...], loc) -> np.ndarray:
    """Shape a computed value (0-d or (n, *T)) to the target region (n, *rshape)."""
    v = np.asarray(values)
    if v.ndim == 0:
        return np.broadcast_to(v, (n,) + rshape)
    tile = v.shape[1:]
    if len(tile) <= len(rshape):
        padded = (1,) * (len(rshape) - len(tile)) + tile
        if all(a in (1, b) for a, b in zip(padded, rshape)):
            return np.broadcast_to(v.reshape((v.shape[0],) + padded), (n,) + rshape)
    if int(np.prod(tile)) == int(np.prod(rshape)):
        return v.reshape((n,) + rshape)
    raise GirError(f"value of shape {list(tile)} does not fit the target region {list(rshape)}", loc)
