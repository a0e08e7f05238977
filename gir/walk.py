"""Walking expressions: every sub-expression in preorder, the preorder numbering of reductions, rebuilding an
expression bottom-up (`map_expr`) or top-down (`map_expr_pre`) and folding bound sizes into constants (`fold_sizes`)."""
from __future__ import annotations

import dataclasses
from typing import Callable

from gir import ir


def reductions_preorder(e: ir.Expr) -> list[ir.Reduce]:
    """Reduce nodes of an expression in preorder (the numbering of `StmtInfo.reduce_vars`)."""
    out: list[ir.Reduce] = []

    def walk(x):
        if isinstance(x, ir.Reduce):
            out.append(x)
            walk(x.arg)
        elif isinstance(x, ir.BinOp):
            walk(x.lhs)
            walk(x.rhs)
        elif isinstance(x, ir.UnOp):
            walk(x.operand)
        elif isinstance(x, ir.Call):
            for a in x.args:
                walk(a)
    walk(e)
    return out


def walk(e):
    """Every sub-expression (including slice parts) in preorder."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, ir.Ref):
            stack.extend(reversed(x.index))
        elif isinstance(x, ir.Slice):
            stack.extend([x.stop, x.start])
        elif isinstance(x, ir.BinOp):
            stack.extend([x.rhs, x.lhs])
        elif isinstance(x, ir.UnOp):
            stack.append(x.operand)
        elif isinstance(x, ir.Call):
            stack.extend(reversed(x.args))
        elif isinstance(x, ir.Reduce):
            stack.append(x.arg)


def map_expr(e, fn: Callable):
    """Rebuild `e` bottom-up: children first, then `fn(node)` (return the node itself to keep it)."""
    if isinstance(e, ir.Slice):   # slices are not expressions: their parts are mapped, no fn
        return dataclasses.replace(e, start=map_expr(e.start, fn), stop=map_expr(e.stop, fn))
    return fn(map_children(e, lambda x: map_expr(x, fn)))


def map_children(e, f: Callable):
    """`e` with `f` applied to each child expression (a Ref kept as it is when its indices are unchanged): the one
    child-rebuilding step of map_expr, map_expr_pre and the visitors that decide per node (gir/empty.py)."""
    if isinstance(e, ir.Ref):
        index = tuple(f(i) for i in e.index)
        return e if index == e.index else dataclasses.replace(e, index=index)
    if isinstance(e, ir.BinOp):
        return dataclasses.replace(e, lhs=f(e.lhs), rhs=f(e.rhs))
    if isinstance(e, ir.UnOp):
        return dataclasses.replace(e, operand=f(e.operand))
    if isinstance(e, ir.Call):
        return dataclasses.replace(e, args=tuple(f(a) for a in e.args))
    if isinstance(e, ir.Reduce):
        return dataclasses.replace(e, arg=f(e.arg))
    return e


def fold_sizes(e, sizes: dict[str, int]):
    """`e` with every size symbol used as a value or inside an index replaced by its bound value."""
    return map_expr(e, lambda x: ir.Const(sizes[x.name], loc=x.loc) if isinstance(x, ir.Var) and x.name in sizes
                    else x)


def map_expr_pre(e, fn: Callable):
    """Rebuild `e` top-down: `fn(node)` first; a node `fn` replaces is not descended into, the others are rebuilt
    from their mapped children (children in preorder: the order of `walk` and `reductions_preorder`)."""
    y = fn(e)
    return y if y is not e else map_children(e, lambda x: map_expr_pre(x, fn))


def walk_stmts(body):
    """Every statement of `body` and of the blocks inside it (parallel and for bodies, both branches of an if),
    in program order."""
    for s in body:
        yield s
        if isinstance(s, (ir.Parallel, ir.For)):
            yield from walk_stmts(s.body)
        elif isinstance(s, ir.If):
            yield from walk_stmts(s.then)
            yield from walk_stmts(s.orelse)


def stmt_exprs(s) -> list:
    """The expressions a statement holds itself (not those of the statements inside it): loop bounds, an if's
    condition, a move's two regions, an assignment's target and value, an all-reduce's target."""
    if isinstance(s, (ir.Parallel, ir.For)):
        return [s.lo, s.hi]
    if isinstance(s, ir.If):
        return [s.cond]
    if isinstance(s, ir.Move):
        return [s.dst, s.src]
    if isinstance(s, ir.Assign):
        return [s.target, s.value]
    if isinstance(s, ir.XReduce):
        return [s.target]
    if isinstance(s, ir.Chain):
        return [s.target, s.src, s.status]
    return []
