"""Vector built-ins that change shape, order or type: reductions, transpose, mirror, conversions, matmul.

They follow the operand rules of ``vector.py`` and register into the same ``VECTOR_OPS`` table.
"""
from __future__ import annotations

import numpy as np

from .errors import MluError
from .lang import ELEM_TYPES, WRAM
from .vector import F32, _count, _Op, _register, _wide

_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _reduce_dtype(elem):
    return F32 if elem.is_float else np.dtype(np.int64)


def _make_reduce_all(kind, fn):
    name = f"__bang_reduce_{kind}"

    def run(c, args, span):
        dst, a, n = args
        op = _Op(c, name, span)
        elem = op.same_type(dst, a)
        _count(name, n)
        va = op.operand(a, n, "a")
        out = op.operand(dst, 1, "dst", write=True, whole_units=False)
        if op.values:
            out[...] = np.asarray(fn.reduce(va, dtype=_reduce_dtype(elem))).astype(elem.dtype)
        op.finish("reduce")
    return run


def _make_reduce_rows(kind, fn):
    name = f"__bang_reduce_{kind}_rows"

    def run(c, args, span):
        dst, a, rows, cols = args
        op = _Op(c, name, span)
        elem = op.same_type(dst, a)
        _count(name, rows, "rows")
        _count(name, cols, "cols")
        m = c.machine
        if cols * elem.itemsize % m.vector_unit_bytes:
            raise MluError(f"{name}: a row of cols={cols} x {elem} is {cols * elem.itemsize} bytes, not a multiple "
                           f"of the {m.vector_unit_bytes}-byte vector unit")
        va = op.operand(a, rows * cols, "a")
        out = op.operand(dst, rows, "dst", write=True, whole_units=False)
        if op.values:
            out[...] = fn.reduce(va.reshape(rows, cols), axis=1, dtype=_reduce_dtype(elem)).astype(elem.dtype)
        op.finish("reduce")
    return run


def _make_reduce_cols(kind, fn):
    name = f"__bang_reduce_{kind}_cols"

    def run(c, args, span):
        dst, a, rows, cols = args
        op = _Op(c, name, span)
        elem = op.same_type(dst, a)
        _count(name, rows, "rows")
        _count(name, cols, "cols")
        va = op.operand(a, rows * cols, "a")
        out = op.operand(dst, cols, "dst", write=True)
        if op.values:
            out[...] = fn.reduce(va.reshape(rows, cols), axis=0, dtype=_reduce_dtype(elem)).astype(elem.dtype)
        op.finish("reduce")
    return run


def _transpose(c, args, span):
    dst, a, rows, cols = args
    name = "__bang_transpose"
    op = _Op(c, name, span)
    op.same_type(dst, a)
    _count(name, rows, "rows")
    _count(name, cols, "cols")
    va = op.operand(a, rows * cols, "a")
    out = op.operand(dst, rows * cols, "dst", write=True)
    nbytes = rows * cols * a.elem.itemsize
    if dst.region is a.region and dst.off < a.off + nbytes and a.off < dst.off + nbytes:
        raise MluError(f"{name}: dst and a overlap")
    if op.values:
        out.reshape(cols, rows)[...] = va.reshape(rows, cols).T
    op.finish("transpose")


def _mirror(c, args, span):
    """`dst[h, w] = src[h, width-1-w]`: every row of a height x width matrix reversed (BANG's w-axis mirror).
    Each row must span whole vector units (the unit is the granule the hardware permutes), and dst must not
    overlap src (the mirror reads elements the other end of the row writes). Cost: transpose class per unit."""
    dst, a, height, width = args
    name = "__bang_mirror"
    op = _Op(c, name, span)
    elem = op.same_type(dst, a)
    _count(name, height, "height")
    _count(name, width, "width")
    unit = c.machine.vector_unit_bytes
    if width * elem.itemsize % unit:
        raise MluError(f"{name}: a row of width={width} x {elem} is {width * elem.itemsize} bytes, not a multiple "
                       f"of the {unit}-byte vector unit")
    va = op.operand(a, height * width, "src")
    out = op.operand(dst, height * width, "dst", write=True)
    nbytes = height * width * elem.itemsize
    if dst.region is a.region and dst.off < a.off + nbytes and a.off < dst.off + nbytes:
        raise MluError(f"{name}: dst and src overlap")
    if op.values:
        out.reshape(height, width)[...] = va.reshape(height, width)[:, ::-1]
    op.finish("transpose")


_CONVERSIONS = {  # name: (source type, destination type)
    "__bang_float2half": ("float", "half"), "__bang_half2float": ("half", "float"),
    "__bang_float2bfloat16": ("float", "bfloat16_t"), "__bang_bfloat162float": ("bfloat16_t", "float"),
    "__bang_float2int32": ("float", "int"), "__bang_int322float": ("int", "float"),
    "__bang_half2int32": ("half", "int"), "__bang_int322half": ("int", "half"),
    "__bang_uchar2float": ("uint8_t", "float"), "__bang_float2uchar": ("float", "uint8_t"),
}
_BYTE_SIDE = ("__bang_uchar2float", "__bang_float2uchar")   # uint8 operand exempt from whole units (n % 32 == 0)


def _make_convert(name, src_name, dst_name):
    src_elem, dst_elem = ELEM_TYPES[src_name], ELEM_TYPES[dst_name]

    def run(c, args, span):
        dst, a, n = args
        op = _Op(c, name, span)
        for ptr, elem, role in ((a, src_elem, "a"), (dst, dst_elem, "dst")):
            if ptr.elem.dtype != elem.dtype:
                raise MluError(f"{name}: operand '{role}' must be {elem}*, got {ptr.elem}*")
        _count(name, n)
        va = op.operand(a, n, "a", whole_units=name not in _BYTE_SIDE or src_elem.is_float)
        out = op.operand(dst, n, "dst", write=True, whole_units=name not in _BYTE_SIDE or dst_elem.is_float)
        if not op.values:
            pass
        elif not dst_elem.is_float:
            with np.errstate(invalid="ignore"):
                values = np.trunc(_wide(va))
            info = np.iinfo(dst_elem.dtype)
            out[...] = np.nan_to_num(np.clip(values, info.min, info.max), nan=0).astype(dst_elem.dtype)
        else:
            out[...] = _wide(va)
        op.finish("convert")
    return run


def _matmul(c, args, span):
    dst, a, b, m_, k, n = args
    name = "__bang_matmul"
    op = _Op(c, name, span)
    elem = op.same_type(a, b, floats_only=True)
    if dst.elem.dtype not in (F32, elem.dtype):
        raise MluError(f"{name}: dst must be float* or {elem}*, got {dst.elem}*")
    for value, what in ((m_, "M"), (k, "K"), (n, "N")):
        _count(name, value, what)
    va = op.operand(a, m_ * k, "a")
    vb = op.operand(b, k * n, "b", spaces=(WRAM,))
    out = op.operand(dst, m_ * n, "dst", write=True)
    if op.values:
        out[...] = (_wide(va.reshape(m_, k)) @ _wide(vb.reshape(k, n))).reshape(-1)
    op.finish("simple", cycles=2.0 * m_ * k * n / c.machine.matmul_flops_per_cycle)


for _kind, _fn in _REDUCE.items():
    _register(f"__bang_reduce_{_kind}", "ppi", _make_reduce_all(_kind, _fn))
    _register(f"__bang_reduce_{_kind}_rows", "ppii", _make_reduce_rows(_kind, _fn))
    _register(f"__bang_reduce_{_kind}_cols", "ppii", _make_reduce_cols(_kind, _fn))
_register("__bang_transpose", "ppii", _transpose)
_register("__bang_mirror", "ppii", _mirror)
for _name, (_src, _dst) in _CONVERSIONS.items():
    _register(_name, "ppi", _make_convert(_name, _src, _dst))
_register("__bang_matmul", "pppiii", _matmul)
