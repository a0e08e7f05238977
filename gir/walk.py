"""Walking expressions: every sub-expression in preorder, and the preorder numbering of reductions."""
from __future__ import annotations

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
