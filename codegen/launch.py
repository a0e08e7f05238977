"""Launch geometry of a kernel: which parallel scope maps to which grid/block dimension.

`plan_launch` walks the parallel scopes of a GPU kernel once:
- chains of directly nested `@block` scopes → blockIdx (innermost scope = x); the grid extent of a
  dimension is the largest extent of the scopes mapped to it (a GIR size expression, e.g. `cdiv(M, 4)`);
- chains of `@thread` scopes → threadIdx (innermost = x), constant extents;
- `@warp` × `@lane` → threadIdx.x = w * L + l, where L is the largest lane extent.
Grid extents are serialised as GIR expression text; `eval_size_expr` evaluates them given sizes.
"""
from __future__ import annotations

import ast as pyast
from dataclasses import dataclass, field

from gir import ir
from gir.affine import free_vars
from gir.errors import GirError
from gir.printer import format_expr
from gir.passes.analysis.launch import extent_expr, scope_depth, scope_extent

GPU_BLOCK, GPU_THREAD = ir.ParLevel.block, ir.ParLevel.thread


@dataclass
class LaunchPlan:
    grid: list[list[str]] = field(default_factory=lambda: [[], [], []])  # extents (GIR text) per dim
    grid_exprs: dict[str, ir.Expr] = field(default_factory=dict)
    block_exts: list[list[int]] = field(default_factory=lambda: [[], [], []])
    dims: dict[int, int] = field(default_factory=dict)  # id(Parallel) → dim
    warps: list[int] = field(default_factory=list)
    lanes: list[int] = field(default_factory=list)

    @property
    def lane_stride(self) -> int:
        return max(self.lanes, default=1)

    def grid_text(self, dim: int) -> str:
        exts = self.grid[dim]
        if not exts:
            return "1"
        text = exts[0]
        for other in exts[1:]:
            text = f"max({text}, {other})"
        return text

    def block_dims(self) -> tuple[int, int, int]:
        if self.lanes:
            return (max(self.warps, default=1) * self.lane_stride, 1, 1)
        return tuple(max(e, default=1) for e in self.block_exts)  # type: ignore[return-value]


def _const_extent(p: ir.Parallel, sizes: dict[str, int]) -> int:
    ext = scope_extent(p, sizes)
    if ext is not None:
        return ext
    raise GirError(f"@{p.level.value} extent must be a constant (the block size is fixed at compile time); "
                   f"give --sizes to fix it", p.loc)


def plan_launch(kernel: ir.Kernel, sizes: dict[str, int], size_names: set[str]) -> LaunchPlan:
    plan = LaunchPlan()
    for s in kernel.body:
        if not isinstance(s, ir.Parallel) or s.level != GPU_BLOCK:
            raise GirError("a GPU kernel body must consist of @block scopes "
                           "(MLU kernels go to the MLU backend)", getattr(s, "loc", kernel.loc))
        _walk_chain(s, scope_depth(s) - 1, plan, sizes, size_names)
    if plan.lanes and any(plan.block_exts):
        raise GirError(f"kernel '{kernel.name}' mixes @thread and @warp/@lane scopes", kernel.loc)
    return plan


def _walk_chain(p: ir.Parallel, dim: int, plan: LaunchPlan, sizes, size_names) -> None:
    if dim < 0 or dim > 2:
        raise GirError(f"@{p.level.value} scopes nest at most 3 deep", p.loc)
    plan.dims[id(p)] = dim
    if p.level == GPU_BLOCK:
        ext = extent_expr(p)
        if not free_vars(ext) <= size_names:
            raise GirError("@block extents may depend on sizes only (they define the grid)", p.loc)
        text = format_expr(ext)
        if text not in plan.grid[dim]:
            plan.grid[dim].append(text)
            plan.grid_exprs[text] = ext
    elif p.level == GPU_THREAD:
        plan.block_exts[dim].append(_const_extent(p, sizes))
    elif p.level == ir.ParLevel.warp:
        plan.warps.append(_const_extent(p, sizes))
    elif p.level == ir.ParLevel.lane:
        plan.lanes.append(_const_extent(p, sizes))
    _walk_body(p.body, p, dim, plan, sizes, size_names)


def _walk_body(body, parent: ir.Parallel | None, dim: int, plan, sizes, size_names) -> None:
    for s in body:
        if isinstance(s, ir.Parallel):
            if parent is not None and s.level == parent.level:
                _walk_chain(s, dim - 1, plan, sizes, size_names)
            elif s.level in (ir.ParLevel.warp, ir.ParLevel.lane):
                if any(isinstance(q, ir.Parallel) and q.level == s.level for q in s.body):
                    raise GirError(f"nested @{s.level.value} scopes are not supported; use one @warp and "
                                   "one @lane scope", s.loc)
                _walk_chain(s, 0, plan, sizes, size_names)
            elif s.level == GPU_BLOCK:
                raise GirError("@block scopes nest only directly inside each other", s.loc)
            else:
                _walk_chain(s, scope_depth(s) - 1, plan, sizes, size_names)
        elif isinstance(s, ir.For):
            _walk_body(s.body, None, dim, plan, sizes, size_names)
        elif isinstance(s, ir.If):
            _walk_body(s.then, None, dim, plan, sizes, size_names)
            _walk_body(s.orelse, None, dim, plan, sizes, size_names)


# ------------------------------------------------------ size-expression evaluator
def eval_size_expr(text: str, sizes: dict[str, int]) -> int:
    """Evaluate a grid extent such as `cdiv(M, 4)` or `max(N // 2, 1)` (integers, + - * // %,
    cdiv/min/max, size names), or a view's derived size (`C / 4`: an exact division). Raises GirError for anything
    else, an unbound size or an inexact division."""
    try:
        tree = pyast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise GirError(f"bad size expression '{text}'") from exc
    return _ev(tree.body, sizes, text)


def _ev(n, sizes, text) -> int:
    if isinstance(n, pyast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
        return n.value
    if isinstance(n, pyast.Name):
        if n.id not in sizes:
            raise GirError(f"size '{n.id}' is needed to evaluate '{text}' (give it with --sizes)")
        return int(sizes[n.id])
    if isinstance(n, pyast.UnaryOp) and isinstance(n.op, pyast.USub):
        return -_ev(n.operand, sizes, text)
    if isinstance(n, pyast.BinOp):
        a, b = _ev(n.left, sizes, text), _ev(n.right, sizes, text)
        if isinstance(n.op, pyast.Div):   # a view's exact division (`C / 4`)
            if b == 0 or a % b:
                raise GirError(f"'{text}' is not an integer at these sizes ({a} / {b})")
            return a // b
        ops = {pyast.Add: lambda: a + b, pyast.Sub: lambda: a - b, pyast.Mult: lambda: a * b,
               pyast.FloorDiv: lambda: a // b, pyast.Mod: lambda: a % b}
        if type(n.op) in ops:
            return ops[type(n.op)]()
    if isinstance(n, pyast.Call) and isinstance(n.func, pyast.Name) and len(n.args) == 2 and not n.keywords:
        a, b = (_ev(x, sizes, text) for x in n.args)
        fns = {"cdiv": lambda: -(-a // b), "min": lambda: min(a, b), "max": lambda: max(a, b)}
        if n.func.id in fns:
            return fns[n.func.id]()
    raise GirError(f"unsupported construct in size expression '{text}'")
