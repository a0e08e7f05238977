"""Test-only passes (never registered as built-ins): they break the IR, crash, or take every option type."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from gir import ir
from gir.passes.base import ModulePass, PassContext


@dataclass(frozen=True)
class BreakIR(ModulePass):
    """Rename the first read of a tensor to an undefined name (the verifier must catch it)."""
    name: ClassVar[str] = "break-ir"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        func = module.funcs[0]
        stmt = func.body[-1]
        value = ir.BinOp("+", stmt.value, ir.Ref("undefined_tensor", stmt.target.index))
        body = func.body[:-1] + (dataclasses.replace(stmt, value=value),)
        return dataclasses.replace(module, funcs=(dataclasses.replace(func, body=body),) + module.funcs[1:])


@dataclass(frozen=True)
class Crash(ModulePass):
    """Raise an unexpected exception."""
    name: ClassVar[str] = "crash"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        raise RuntimeError("boom")


@dataclass(frozen=True)
class Identity(ModulePass):
    """Return the module unchanged."""
    name: ClassVar[str] = "identity"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return module


@dataclass(frozen=True)
class Opts(ModulePass):
    """Take an option of every supported type."""
    name: ClassVar[str] = "opts"
    count: int = 1
    scale: float = 1.0
    flag: bool = False
    level: str = "shared"
    sizes: tuple[int, ...] = ()
    weights: tuple[float, ...] = (0.5,)
    tags: tuple[str, ...] = ()
    bits: tuple[bool, ...] = ()

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return module


@dataclass(frozen=True)
class Tile(ModulePass):
    """A pass with a required option."""
    name: ClassVar[str] = "tile"
    sizes: tuple[int, ...]
    unroll: bool = False

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        return module


TEST_PASSES = (BreakIR, Crash, Identity, Opts, Tile)
