"""Syntax tree of the kernel language, produced by ``parser.py`` and compiled by ``compiler.py``.

Every node carries the `Span` of its first token, so diagnostics point into the program text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import Span


@dataclass(frozen=True)
class TypeRef:
    """``float``, ``half*``...: an element type name, and whether it is a pointer to it."""

    elem: str
    pointer: bool = False

    def __str__(self) -> str:
        return self.elem + ("*" if self.pointer else "")


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Expr:
    span: Span


@dataclass(frozen=True)
class IntLit(Expr):
    value: int


@dataclass(frozen=True)
class FloatLit(Expr):
    value: float


@dataclass(frozen=True)
class Name(Expr):
    name: str


@dataclass(frozen=True)
class Index(Expr):
    """``buf[i]``: one element of an on-chip buffer or pointer."""

    name: str
    index: Expr


@dataclass(frozen=True)
class Call(Expr):
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-", "!"
    operand: Expr


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # + - * / % < <= > >= == != && ||
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(frozen=True)
class Cast(Expr):
    type: TypeRef
    operand: Expr


# ---------------------------------------------------------------- statements
@dataclass(frozen=True)
class Stmt:
    span: Span


@dataclass(frozen=True)
class Block(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class OnChipDecl(Stmt):
    """``__nram__ float buf[1024];`` (space is nram, wram or sram)."""

    space: str
    elem: str
    name: str
    size: Expr


@dataclass(frozen=True)
class VarDecl(Stmt):
    """``int r = e;``, ``const int T = 64;``, ``float* p = x + 4;``."""

    type: TypeRef
    name: str
    init: Expr | None
    const: bool = False


@dataclass(frozen=True)
class Assign(Stmt):
    """``t = e;`` / ``t op= e;`` / ``t++`` (op is "=", "+=", ...); target is a Name or an Index."""

    target: Expr
    op: str
    value: Expr


@dataclass(frozen=True)
class CallStmt(Stmt):
    call: Call


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: Block
    other: Stmt | None  # a Block, an If (else if), or None


@dataclass(frozen=True)
class For(Stmt):
    init: Stmt | None
    cond: Expr
    step: Stmt | None
    body: Block


@dataclass(frozen=True)
class Return(Stmt):
    pass


# ---------------------------------------------------------------- top level
@dataclass(frozen=True)
class Param:
    span: Span
    type: TypeRef
    name: str


@dataclass(frozen=True)
class Kernel:
    span: Span
    name: str
    params: tuple[Param, ...]
    body: Block


@dataclass
class Program:
    """A parsed program: its kernels, file-level ``const int`` declarations, and the text they came from."""

    filename: str
    text: str
    kernels: dict[str, Kernel]
    consts: tuple[VarDecl, ...] = ()
    _compiled: dict = field(default_factory=dict, repr=False, compare=False)

    def kernel(self, name: str) -> Kernel:
        from .errors import MluError
        if name not in self.kernels:
            known = ", ".join(self.kernels) or "none"
            raise MluError(f"no kernel named '{name}' in {self.filename} (kernels: {known})")
        return self.kernels[name]
