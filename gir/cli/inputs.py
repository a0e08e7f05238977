"""Inputs given by name in an .npz file (`gir eval --inputs`, `gir run --inputs`).

`load_inputs` reads the archive (anything that is not one is "cannot read inputs from FILE: ..."), then checks
every array against the function's parameters: a name that is no input is an error (at the function), and each
array must have exactly the declared element type and shape once the size symbols are bound (else an error at
the parameter). Sizes given with --sizes must agree with the arrays; the others are bound from them.
"""
from __future__ import annotations

import lzma
import os
import tokenize
import zipfile
import zlib

import numpy as np

from gir import ir
from gir.errors import GirError

# What np.load (allow_pickle=False) and reading the members of an archive raise on damaged or hostile bytes:
# a bad or truncated zip (BadZipFile, EOFError), bad deflate / bzip2 / lzma streams (zlib.error, OSError,
# LZMAError), unsupported or encrypted members (NotImplementedError, RuntimeError), a bad .npy header or
# pickled objects (ValueError, OverflowError, TokenError), a header that claims a huge array (MemoryError).
READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError, NotImplementedError,
               RuntimeError, OverflowError, tokenize.TokenError, MemoryError)

NOT_NPZ = "not an .npz archive (write one with numpy.savez(path, NAME=array, ...))"


def read_npz(path: str) -> dict[str, np.ndarray]:
    """Every array of the .npz archive at `path`, by name; GirError "cannot read inputs from PATH: why"."""
    if os.path.isdir(path):
        raise GirError(f"cannot read inputs from {path}: it is a directory")
    try:
        with open(path, "rb") as fh:
            if not zipfile.is_zipfile(fh):  # a single .npy array, a text file, ...
                raise ValueError(NOT_NPZ)
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except READ_ERRORS as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise GirError(f"cannot read inputs from {path}: {why}") from None


def load_inputs(path: str, func: ir.Func, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """Inputs of `func` by name from the .npz file at `path`, each of exactly its declared type and shape (bf16
    arrays as numpy.savez stores them, 'V2', are taken as bfloat16); binds in `sizes` the size symbols they
    give (those already in `sizes` must agree). Inputs the file lacks are absent from the result."""
    arrays = read_npz(path)
    params = {p.name: p for p in func.params}
    for name in arrays:
        if name not in params:
            raise GirError(f"{path} holds '{name}', which is not an input of '{func.name}' "
                           f"(inputs: {', '.join(params) or 'none'})", func.loc)
    given = {}
    for p in func.params:
        if p.name in arrays:
            given[p.name] = _checked(p, arrays[p.name], sizes)
    from gir.views import complete_sizes

    complete_sizes(func, sizes)  # derived sizes of reshape views from the sizes the arrays gave
    return given


def _checked(p: ir.Param, arr: np.ndarray, sizes: dict[str, int]) -> np.ndarray:
    """`arr` as input `p` (bf16 from 'V2', native byte order), binding the sizes it gives; GirError at the
    declaration of `p` if its type or shape is not the declared one."""
    from gir.views import outer_type

    declared_type = outer_type(p)  # a reshape view's input comes in its declared shape
    want_dtype = p.type.dtype.numpy
    if p.type.dtype == ir.DType.bf16 and arr.dtype == np.dtype("V2"):  # numpy.savez stores bfloat16 as V2
        arr = arr.view(want_dtype)
    elif arr.dtype != want_dtype and arr.dtype.newbyteorder("=") == want_dtype:  # big-endian f32, ...
        arr = arr.astype(want_dtype)
    if arr.ndim == declared_type.rank:
        for d, n in zip(declared_type.shape, arr.shape):
            if isinstance(d, str) and d not in sizes and n >= 1:
                sizes[d] = n
    declared = tuple(sizes.get(d, d) for d in declared_type.shape)
    if arr.dtype != want_dtype or arr.shape != declared:
        want = ", ".join(str(d) for d in declared)
        got = ", ".join(str(n) for n in arr.shape)
        raise GirError(f"input '{p.name}': expected {p.type.dtype.value}[{want}], got {arr.dtype}[{got}]", p.loc)
    return arr


__all__ = ["load_inputs", "read_npz", "READ_ERRORS"]
