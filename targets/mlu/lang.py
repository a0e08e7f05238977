"""The vocabulary of the BANG-C-like kernel language: element types, memory spaces, copy directions, built-in
variables and scalar math functions. The grammar is in ``grammar.lark``; vector built-ins are in ``vector.py``;
the whole language is documented in ``LANGUAGE.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElemType:
    """An element type: its spelling in the language, numpy dtype, size, and whether it is a floating type."""

    name: str
    dtype: np.dtype
    is_float: bool

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __str__(self) -> str:
        return self.name


ELEM_TYPES: dict[str, ElemType] = {
    "float": ElemType("float", np.dtype(np.float32), True),
    "half": ElemType("half", np.dtype(np.float16), True),
    "bfloat16_t": ElemType("bfloat16_t", np.dtype(ml_dtypes.bfloat16), True),
    "int": ElemType("int", np.dtype(np.int32), False),
    "int32_t": ElemType("int32_t", np.dtype(np.int32), False),
    "int16_t": ElemType("int16_t", np.dtype(np.int16), False),
    "int8_t": ElemType("int8_t", np.dtype(np.int8), False),
    "uint8_t": ElemType("uint8_t", np.dtype(np.uint8), False),
}

# Memory spaces. GDRAM is off chip (kernel pointer arguments); the others are on chip.
GDRAM, NRAM, WRAM, SRAM = "gdram", "nram", "wram", "sram"
SPACE_NAMES = {GDRAM: "GDRAM", NRAM: "NRAM", WRAM: "WRAM", SRAM: "SRAM"}
DECL_SPACES = {"__nram__": NRAM, "__wram__": WRAM, "__mlu_shared__": SRAM}

# Copy directions of __memcpy / __memcpy_async: name -> (destination space, source space).
DIRECTIONS: dict[str, tuple[str, str]] = {
    "GDRAM2NRAM": (NRAM, GDRAM),
    "NRAM2GDRAM": (GDRAM, NRAM),
    "GDRAM2SRAM": (SRAM, GDRAM),
    "SRAM2GDRAM": (GDRAM, SRAM),
    "SRAM2NRAM": (NRAM, SRAM),
    "NRAM2SRAM": (SRAM, NRAM),
    "NRAM2NRAM": (NRAM, NRAM),
    "GDRAM2GDRAM": (GDRAM, GDRAM),
    "GDRAM2WRAM": (WRAM, GDRAM),
    "NRAM2WRAM": (WRAM, NRAM),
    "WRAM2NRAM": (NRAM, WRAM),
    "SRAM2WRAM": (WRAM, SRAM),
}

# Operations of __bang_fusion (its first argument): name -> (first op, second op), i.e.
# dst = (src0 FIRST src1) SECOND src2, each op rounded on its own (two f32 roundings, not a fused FMA).
FUSION_OPS: dict[str, tuple[str, str]] = {
    "FUSION_FMA": ("mul", "add"),
    "FUSION_FMS": ("mul", "sub"),
    "FUSION_FAM": ("add", "mul"),
    "FUSION_FSM": ("sub", "mul"),
}

# Built-in int variables, read-only, constant for one task.
BUILTIN_VARS = ("taskId", "taskDim", "clusterId", "clusterDim", "coreId", "coreDim")

# Built-in constants usable in expressions.
BUILTIN_CONSTS: dict[str, float] = {"INFINITY": math.inf, "NAN": math.nan}

INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1

# Synchronisation built-ins: name -> (waits for IO pipe, waits for compute pipe, barrier scope or None).
SYNCS: dict[str, tuple[bool, bool, str | None]] = {
    "__sync_io": (True, False, None),
    "__sync_compute": (False, True, None),
    "__sync_io_move_compute": (True, True, None),
    "__sync_cluster": (True, True, "cluster"),
    "__sync_all": (True, True, "all"),
}

MEMCPY = ("__memcpy", "__memcpy_async")


def _fmax(a, b):
    return max(a, b)


def _fmin(a, b):
    return min(a, b)


def _ieee(fn):
    """C math semantics for a numpy function: a pole or an overflow gives +-inf, a domain error NaN (Python's
    math module raises instead: logf(0) must be -inf, expf(1000) +inf, powf(0, -1) +inf)."""
    def run(*args):
        with np.errstate(all="ignore"):
            return float(fn(*(np.float64(a) for a in args)))
    return run


# Scalar math functions: name -> (number of arguments, result is int when all arguments are int, function).
SCALAR_FUNCS: dict[str, tuple[int, bool, object]] = {
    "min": (2, True, _fmin),
    "max": (2, True, _fmax),
    "abs": (1, True, abs),
    "fminf": (2, False, _fmin),
    "fmaxf": (2, False, _fmax),
    "fabsf": (1, False, abs),
    "expf": (1, False, _ieee(np.exp)),
    "logf": (1, False, _ieee(np.log)),
    "sqrtf": (1, False, _ieee(np.sqrt)),
    "tanhf": (1, False, math.tanh),
    "sinf": (1, False, _ieee(np.sin)),
    "cosf": (1, False, _ieee(np.cos)),
    "log1pf": (1, False, _ieee(np.log1p)),
    "expm1f": (1, False, _ieee(np.expm1)),
    "floorf": (1, False, _ieee(np.floor)),
    "ceilf": (1, False, _ieee(np.ceil)),
    "rintf": (1, False, _ieee(np.rint)),   # round half to even
    "powf": (2, False, _ieee(np.power)),
}


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    """C integer remainder (sign of the dividend)."""
    return a - b * c_div(a, b)
