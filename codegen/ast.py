"""A small C-like kernel AST, produced by `codegen.lower` and printed by `codegen.cstyle`.

Nothing here is backend specific: thread/block ids, barriers, shuffles, 16-bit conversions and
vector types are abstract nodes (`Special`, `Barrier`, `Intrinsic`, `VecRef`) whose spelling comes
from the backend's table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


# ----------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Id:
    name: str


@dataclass(frozen=True)
class Num:
    """A literal; `kind` is "i" (int), "f" (float, printed with an `f` suffix) or "b" (bool)."""
    value: int | float | bool
    kind: str = "i"


@dataclass(frozen=True)
class Bin:
    op: str  # C operator: + - * / % < <= > >= == != && ||
    lhs: "CExpr"
    rhs: "CExpr"


@dataclass(frozen=True)
class Un:
    op: str  # - !
    operand: "CExpr"


@dataclass(frozen=True)
class Call:
    """A call of a function whose name is the same in every backend (expf, fmaxf, gir_floordiv)."""
    fn: str
    args: tuple["CExpr", ...]


@dataclass(frozen=True)
class Intrinsic:
    """A backend-spelled operation: `h2f`, `f2h`, `bf2f`, `f2bf`, `recip`, `shfl_xor(v, off, width, mask)`; on the
    MLU its DMA and vector instructions (`memcpy_async`, `bang_cycle_add`, ...: codegen/mlu/printer.py)."""
    name: str
    args: tuple["CExpr", ...]


@dataclass(frozen=True)
class Special:
    """`thread_idx` / `block_idx` along `dim` (0 = x, 1 = y, 2 = z)."""
    kind: str
    dim: int


@dataclass(frozen=True)
class Index:
    """`base[index]` on a flat array."""
    base: str
    index: "CExpr"


@dataclass(frozen=True)
class VecRef:
    """`*reinterpret_cast<VT*>(&base[index])`: a `nbytes`-wide access of elements of `dtype`."""
    base: str
    index: "CExpr"
    dtype: str
    nbytes: int
    const: bool = False


@dataclass(frozen=True)
class Cond:
    cond: "CExpr"
    then: "CExpr"
    orelse: "CExpr"


@dataclass(frozen=True)
class Cast:
    ctype: str  # abstract: "int", "index", "float", "i64", "bool", or a GIR dtype name
    operand: "CExpr"


@dataclass(frozen=True)
class AddrAligned:
    """True if `&base[index]` is aligned to `nbytes` (a run-time check on a pointer)."""
    base: str
    index: "CExpr"
    nbytes: int


@dataclass(frozen=True)
class Verbatim:
    """An expression the backend has already spelled (the MLU's index and pointer arithmetic, codegen/mlu/cexpr.py);
    printed as it is, parenthesised where an operator binds it unless it is one token or one parenthesised group."""
    text: str


CExpr = Union[Id, Num, Bin, Un, Call, Intrinsic, Special, Index, VecRef, Cond, Cast, AddrAligned, Verbatim]


# ------------------------------------------------------------------ statements
@dataclass(frozen=True)
class Decl:
    """`T name = init;` or an array `T name[size];` (`space` "local" or "shared"; arrays 16-byte aligned).
    `ctype` is abstract: a GIR dtype name, "index", "float", "int" or "vec:<dtype>:<nbytes>"."""
    ctype: str
    name: str
    init: CExpr | None = None
    size: int | None = None
    space: str = "local"


@dataclass(frozen=True)
class Assign:
    lhs: CExpr
    rhs: CExpr


@dataclass(frozen=True)
class For:
    var: str
    lo: CExpr
    hi: CExpr
    body: tuple["CStmt", ...]
    step: int = 1
    unroll: bool = False
    inline: bool = False   # printed on one line (the MLU's per-row loops around one vector instruction)


@dataclass(frozen=True)
class If:
    cond: CExpr
    then: tuple["CStmt", ...]
    orelse: tuple["CStmt", ...] = ()


@dataclass(frozen=True)
class Block:
    body: tuple["CStmt", ...]


@dataclass(frozen=True)
class Barrier:
    level: str  # "block" | "warp"


@dataclass(frozen=True)
class Comment:
    text: str


@dataclass(frozen=True)
class Eval:
    """An expression evaluated for its effect: `expr;` (the MLU's DMA and vector instructions)."""
    expr: CExpr


CStmt = Union[Decl, Assign, For, If, Block, Barrier, Comment, Eval]


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # GIR dtype for tensors, "index" for sizes
    kind: str  # "tensor" | "size"
    const: bool = False


@dataclass(frozen=True)
class KernelFunc:
    name: str
    params: tuple[Param, ...]
    body: tuple[CStmt, ...]
    threads: int = 1  # launch bound: threads per block
    shared: tuple[Decl, ...] = field(default=())  # `__shared__` arrays, declared first
    index_type: str = "int32"  # C type of "index": int32 → int, int64 → long long
