"""The pass interface: `ModulePass` (a frozen dataclass whose fields are its options) and `PassContext`.

Two kinds of IR flow through a pipeline: `gir` (an `ir.Module`: operator layer or explicit kernels) and `idfg`
(a `passes.middle.graph.ModuleGraph`, the instruction-level dataflow graph of the middle). A pass says what it
consumes and produces (`consumes`, `produces`); `ModulePass` is gir -> gir, `GraphPass` is idfg -> idfg, and
conversions (`naive-lower`: gir -> idfg, `schedule`: idfg -> gir) set both.

A pass looks like this::

    @dataclass(frozen=True)
    class InlineElementwise(ModulePass):
        '''Inline single-use element-wise intermediates into their consumers.'''
        name: ClassVar[str] = "inline-elementwise"
        max_uses: int = 1

        def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module: ...

Option types are int, float, bool, str and tuples of those (`tuple[int, ...]`). A field without a default is a
required option. Option values are converted from pipeline text by `OptionSpec.convert`.
"""
from __future__ import annotations

import dataclasses
import math
import re
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gir import ir
from gir.errors import GirError

SCALAR_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}
_BARE = re.compile(r'[^\s,{}\[\]="\\]+')
_INT = re.compile(r"[+-]?\d+")


IR_KINDS = ("gir", "idfg")


@dataclass
class PassContext:
    """State shared by the passes of one pipeline run.

    `filename` is the source file (used in reproducer notes); `target` names the compile target when one is
    known; `statistics` collects counters that passes bump (`ctx.bump("cse.merged")`); `remarks` collects
    optimisation remarks (`ctx.remark(...)`, LLVM's -Rpass style: what was done, what was missed and why);
    `options` carries programmatic options without a text form (a forced row configuration in tests) and
    `artifacts` what passes leave for their caller (the search's plans)."""
    filename: str | None = None
    target: str | None = None
    statistics: dict[str, int] = field(default_factory=dict)
    remarks: list = field(default_factory=list)
    options: dict = field(default_factory=dict)    # programmatic options that have no text form (tests)
    artifacts: dict = field(default_factory=dict)  # what passes leave for their caller (e.g. search plans)

    def bump(self, key: str, n: int = 1) -> None:
        self.statistics[key] = self.statistics.get(key, 0) + n

    def remark(self, pass_name: str, kind: str, message: str, loc=None, notes=()) -> None:
        """Record a remark: kind is 'passed' (an optimisation done), 'missed' (one not done: traffic left on
        the table, always shown) or 'analysis' (a fact behind a decision)."""
        from gir.passes.remarks import Remark
        self.remarks.append(Remark(pass_name, kind, message, loc, tuple(notes)))


class OptionError(ValueError):
    """A pass option value that does not convert; the pipeline parser adds the location."""


@dataclass(frozen=True)
class OptionSpec:
    """One option of a pass: a dataclass field with a supported type."""
    name: str
    scalar: type
    is_tuple: bool
    default: Any = dataclasses.MISSING

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def type_text(self) -> str:
        base = SCALAR_TYPES[self.scalar]
        return f"tuple[{base}, ...]" if self.is_tuple else base

    def convert(self, tokens: list[str]) -> Any:
        """Pipeline tokens (already unquoted) → a typed value; raises OptionError."""
        if self.is_tuple:
            return tuple(self._scalar(t) for t in tokens)
        if len(tokens) != 1:
            raise OptionError(f"option '{self.name}' takes one {self.type_text}, got {len(tokens)} values"
                              + (" (quote a string containing commas)" if self.scalar is str else ""))
        return self._scalar(tokens[0])

    def _scalar(self, text: str) -> Any:
        if self.scalar is bool:
            if text in ("true", "false"):
                return text == "true"
        elif self.scalar is int:
            if _INT.fullmatch(text):
                return int(text)
        elif self.scalar is float:
            try:
                if "_" not in text:
                    return float(text)
            except ValueError:
                pass
        else:
            return text
        expected = {bool: "true or false", int: "an int", float: "a float"}[self.scalar]
        raise OptionError(f"option '{self.name}' expects {expected}, got '{text}'")

    def format(self, value: Any) -> str:
        """A typed value → canonical pipeline text (`convert` reads it back to an equal value)."""
        if self.is_tuple:
            return ",".join(self._format_scalar(v) for v in value) if value else "[]"
        return self._format_scalar(value)

    def _format_scalar(self, value: Any) -> str:
        if self.scalar is bool:
            return "true" if value else "false"
        if self.scalar is float:
            value = float(value)
            return "nan" if math.isnan(value) else repr(value)
        if self.scalar is int:
            return str(int(value))
        if _BARE.fullmatch(value):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class ModulePass:
    """Base class of all passes. Subclasses are `@dataclass(frozen=True)`, set `name`, and implement `apply`.
    A ModulePass rewrites a GIR module (`consumes = produces = "gir"`)."""
    name: ClassVar[str] = ""
    consumes: ClassVar[str] = "gir"
    produces: ClassVar[str] = "gir"

    def apply(self, ctx: PassContext, module: ir.Module) -> ir.Module:
        raise NotImplementedError(f"pass '{self.name}' does not implement apply()")

    @classmethod
    def options(cls) -> tuple[OptionSpec, ...]:
        return option_specs(cls)

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring: the one-line help."""
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0].strip() if doc else "(no description)"

    @classmethod
    def from_options(cls, values: dict[str, Any]) -> "ModulePass":
        """Build an instance from typed option values; raises OptionError for bad values."""
        try:
            return cls(**values)
        except (ValueError, TypeError) as exc:
            raise OptionError(str(exc)) from None

    def pipeline_text(self) -> str:
        """Canonical text: `name` or `name{opt=value ...}` listing options that differ from their defaults."""
        parts = []
        for spec in self.options():
            value = getattr(self, spec.name)
            if spec.required or value != spec.default:
                parts.append(f"{spec.name}={spec.format(value)}")
        return f"{self.name}{{{' '.join(parts)}}}" if parts else self.name


@dataclass(frozen=True)
class GraphPass(ModulePass):
    """A pass over the instruction-level dataflow graph: `apply(ctx, graph)` receives a
    `passes.middle.graph.ModuleGraph` and returns it (changed in place or a new one). Its result prints as
    explicit GIR (`--print-ir-after-all`); `schedule` turns the final graph into tuned kernels."""
    consumes: ClassVar[str] = "idfg"
    produces: ClassVar[str] = "idfg"

    def apply(self, ctx: PassContext, graph):  # type: ignore[override]
        raise NotImplementedError(f"pass '{self.name}' does not implement apply()")


def option_specs(cls: type) -> tuple[OptionSpec, ...]:
    try:
        hints = typing.get_type_hints(cls)
    except Exception as exc:  # an annotation that does not evaluate in the class's module
        raise TypeError(f"cannot resolve the option annotations: {type(exc).__name__}: {exc}") from None
    specs = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        scalar, is_tuple = _option_type(hints.get(f.name))
        if scalar is None:
            raise TypeError(f"option '{f.name}' has unsupported type {hints.get(f.name)!r}; "
                            "use int, float, bool, str or tuple[T, ...] of those")
        default = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        specs.append(OptionSpec(f.name, scalar, is_tuple, default))
    return tuple(specs)


def _option_type(hint) -> tuple[type | None, bool]:
    if hint in SCALAR_TYPES:
        return hint, False
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in SCALAR_TYPES:
        return args[0], True
    return None, False


def check_pass_class(cls: Any, origin: str) -> None:
    """Raise GirError unless `cls` is a well-formed pass class (used by the registry for every entry point)."""
    problem = None
    if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
        problem = f"{cls!r} is not a subclass of passes.base.ModulePass"
    elif "__dataclass_params__" not in vars(cls) or not cls.__dataclass_params__.frozen:
        problem = f"{cls.__qualname__} must be decorated with @dataclass(frozen=True)"
    elif not cls.name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", cls.name):
        problem = f"{cls.__qualname__}.name {cls.name!r} is not a valid pass name (letters, digits, '_', '-')"
    elif cls.apply in (ModulePass.apply, GraphPass.apply):
        problem = f"{cls.__qualname__} does not implement apply(ctx, module)"
    elif cls.consumes not in IR_KINDS or cls.produces not in IR_KINDS:
        problem = f"{cls.__qualname__}: consumes/produces must be one of {', '.join(IR_KINDS)}"
    else:
        try:
            option_specs(cls)
        except TypeError as exc:
            problem = f"{cls.__qualname__}: {exc}"
    if problem:
        raise GirError(f"invalid pass from {origin}: {problem}")
