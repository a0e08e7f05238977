"""The GIR intermediate representation: immutable dataclasses for both layers.

Operator layer: a `Func` body holds `Assign` statements (tensor comprehensions).
Explicit layer: a `Func` body may also hold `Alloc` of global temporaries and
`Kernel`s, whose bodies hold parallel scopes, loops, data movement (`Move`),
compute (`Assign` on tile regions), cross-lane reductions (`XReduce`) and `Sync`.

Every node carries a source location in `loc`, which takes no part in equality,
so `parse(print(ir)) == ir` compares structure only.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from gir.errors import Loc


def _loc() -> Loc | None:
    return field(default=None, compare=False, repr=False, kw_only=True)


class DType(enum.Enum):
    f32 = "f32"
    f64 = "f64"
    f16 = "f16"
    bf16 = "bf16"
    i32 = "i32"
    i64 = "i64"
    bool = "bool"

    @property
    def numpy(self) -> np.dtype:
        if self is DType.bf16:
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype({"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
                         "i64": np.int64, "bool": np.bool_}[self.value])

    @property
    def is_float(self) -> bool:
        return self in (DType.f32, DType.f64, DType.f16, DType.bf16)

    @property
    def is_int(self) -> bool:
        return self in (DType.i32, DType.i64)

    @property
    def nbytes(self) -> int:
        return {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1}[self.value]


class Level(enum.Enum):
    """Memory levels. GPU: global, shared, reg. MLU: gdram, sram, nram, wram."""
    global_ = "global"
    shared = "shared"
    reg = "reg"
    gdram = "gdram"
    sram = "sram"
    nram = "nram"
    wram = "wram"

    @property
    def off_chip(self) -> bool:
        return self in (Level.global_, Level.gdram)

    @property
    def family(self) -> str:
        return "gpu" if self in (Level.global_, Level.shared, Level.reg) else "mlu"


class ParLevel(enum.Enum):
    """Parallel levels. GPU: block, warp, lane, thread. MLU: cluster, core; `all` names every task of an MLU
    launch and only in `sync @all` (a barrier across clusters: `__sync_all()`)."""
    block = "block"
    warp = "warp"
    lane = "lane"
    thread = "thread"
    cluster = "cluster"
    core = "core"
    all = "all"

    @property
    def family(self) -> str:
        return "mlu" if self in (ParLevel.cluster, ParLevel.core, ParLevel.all) else "gpu"


Dim = Union[int, str]


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[Dim, ...]
    loc: Loc | None = _loc()

    @property
    def rank(self) -> int:
        return len(self.shape)


# ----------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Const:
    value: float | int | bool
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Var:
    """An index variable, a loop/parallel variable or a size symbol used as a value."""
    name: str
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Slice:
    """`start:stop` or `start:stop:step` in a region; stop - start must be constant."""
    start: "Expr"
    stop: "Expr"
    step: int = 1
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Ref:
    """`x[i, j]` (operator layer) or a tile region `buf[0:4, k]` (explicit layer)."""
    name: str
    index: tuple[Union["Expr", Slice], ...]
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * / // % < <= > >= == != and or
    lhs: "Expr"
    rhs: "Expr"
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class UnOp:
    op: str  # - not
    operand: "Expr"
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Call:
    """Element-wise function (`exp`, `max(a, b)`, `select`, casts like `f16(x)`, `cdiv`)."""
    fn: str
    args: tuple["Expr", ...]
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Reduce:
    """`sum(e)`: operator layer reduces over the indices of `e` absent from the
    left-hand side; explicit layer reduces the tile over `axes` (None: all)."""
    op: str  # sum max min mean prod
    arg: "Expr"
    axes: tuple[int, ...] | None = None
    loc: Loc | None = _loc()


Expr = Union[Const, Var, Ref, BinOp, UnOp, Call, Reduce]


# ------------------------------------------------------------------ statements
@dataclass(frozen=True)
class Assign:
    """Operator layer: `t[i, j] = e`. Inside a kernel: a compute instruction on tiles."""
    target: Ref
    value: Expr
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Alloc:
    """An on-chip buffer. slots > 1 (the MLU's software pipeline, passes/schedule_mlu/swpipe.py): the first
    dimension of `type` (of extent `slots`) selects one of `slots` copies of the tile `type.shape[1:]`, each laid
    out as a tile of its own; printed `alloc t: f32[3, R, N] @nram with slots=3`."""
    name: str
    type: TensorType
    level: Level
    loc: Loc | None = _loc()
    slots: int = 1


@dataclass(frozen=True)
class Move:
    """Data movement `load|store|copy dst <- src` with attributes:
    vec: vector width in elements; mask: clip the region to the tensors' bounds;
    other: value a masked load writes where the source is out of bounds; async_ (MLU software pipeline, printed
    `with async`): issued without waiting, completed by the next `sync @core`."""
    kind: str  # load store copy
    dst: Ref
    src: Ref
    vec: int = 1
    mask: bool = False
    other: float | None = None
    loc: Loc | None = _loc()
    async_: bool = False


@dataclass(frozen=True)
class XReduce:
    """Cross-lane all-reduce: `allreduce sum s[0:1] over l width 32`."""
    op: str
    target: Ref
    var: str
    width: int | None = None
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Chain:
    """A chained scan across the blocks of a grid axis (single-pass, decoupled look-back on the GPU):
    `chain sum p[0:1] <- a[0:1] over g via st[k]`. Block g (g = 0, 1, ... of the @block variable `var`; the other
    grid coordinates name independent chains) reaches it with `src`, its aggregate; `target` receives the `op`
    combination of the aggregates of the earlier blocks 0 .. g - 1 of its chain (the identity in block 0).
    `status` is the block's 64-bit status word (32-bit values: flag and value in one word; 64-bit values: three
    consecutive words, flag, aggregate and prefix), in an @global i64 tensor whose flags are zero when the kernel
    starts; the earlier blocks' words are `status` with `var` replaced by 0 .. g - 1. When the index of `status`
    uses a @thread variable, every thread has a chain of its own (its own `src`); otherwise the block has one and
    `src` is the same in every thread of the block."""
    op: str                 # sum | prod | max | min
    target: Ref
    src: Ref
    var: str
    status: Ref
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Sync:
    level: ParLevel
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Parallel:
    var: str
    lo: Expr
    hi: Expr
    level: ParLevel
    body: tuple["Stmt", ...]
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class For:
    var: str
    lo: Expr
    hi: Expr
    body: tuple["Stmt", ...]
    step: int = 1
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] = ()
    loc: Loc | None = _loc()


Stmt = Union[Assign, Alloc, Move, XReduce, Chain, Sync, Parallel, For, If]


@dataclass(frozen=True)
class Kernel:
    name: str
    body: tuple[Stmt, ...]
    attrs: tuple[tuple[str, str], ...] = ()
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class View:
    """`as [N, G, C / G, H * W]` after a parameter's declared type `outer` (gir/views.py): the parameter's `type`
    is then the view, compound dimensions named by derived sizes (`C_div_G`)."""
    outer: TensorType
    dims: tuple["Expr", ...]
    loc: Loc | None = _loc()


@dataclass(frozen=True)
class Param:
    name: str
    type: TensorType
    view: View | None = None
    loc: Loc | None = _loc()


Item = Union[Assign, Alloc, Kernel]


@dataclass(frozen=True)
class Func:
    name: str
    params: tuple[Param, ...]
    results: tuple[Param, ...]
    body: tuple[Item, ...]
    loc: Loc | None = _loc()

    @property
    def is_explicit(self) -> bool:
        return any(isinstance(item, Kernel) for item in self.body)

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return tuple(item for item in self.body if isinstance(item, Kernel))

    def size_symbols(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for p in self.params + self.results:
            for d in p.type.shape:
                if isinstance(d, str):
                    seen.setdefault(d)
        return tuple(seen)


@dataclass(frozen=True)
class Module:
    funcs: tuple[Func, ...]
    loc: Loc | None = _loc()

    def func(self, name: str | None = None) -> Func:
        if name is None:
            return self.funcs[0]
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(name)


REDUCTIONS = ("sum", "max", "min", "mean", "prod", "argmax", "argmin")
# reductions to the (first) position of the extreme along their one reduced index; an int (i32) result
ARG_REDUCTIONS = ("argmax", "argmin")
UNARY_FUNCS = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "abs", "neg", "recip",
               "sin", "cos", "log1p", "expm1", "softplus", "silu", "gelu", "gelu_tanh", "floor", "ceil", "round")
TERNARY_FUNCS = ("select", "clamp")
# functions whose result has the kind of their numeric operands (int stays int); every other function gives a float
KIND_PRESERVING_FUNCS = ("max", "min", "abs", "neg", "clamp")
BINARY_FUNCS = ("max", "min", "pow", "cdiv")
CASTS = tuple(d.value for d in DType)
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
