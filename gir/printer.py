"""IR → canonical GIR text. `parse_text(print_module(m)) == m` for every module."""
from __future__ import annotations

import math
from typing import NamedTuple

from gir import ir
from gir.scan import SCAN_ARITY, SCANS, format_scan

_PREC = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
         "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6}
_UNARY_PREC = 7
_ATOM_PREC = 8
INDENT = "  "


def format_const(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    return text


def _prec(e: ir.Expr) -> int:
    if isinstance(e, ir.BinOp):
        return _PREC[e.op]
    if isinstance(e, ir.UnOp):
        return _PREC["not"] if e.op == "not" else _UNARY_PREC
    if isinstance(e, ir.Const) and not isinstance(e.value, bool) and (
            (isinstance(e.value, float) and math.copysign(1, e.value) < 0 and not math.isnan(e.value))
            or (isinstance(e.value, int) and e.value < 0)):
        return _UNARY_PREC
    return _ATOM_PREC


def format_expr(e: ir.Expr, parent: int = 0) -> str:
    text, prec = _format(e)
    return f"({text})" if prec < parent else text


def _format(e: ir.Expr) -> tuple[str, int]:
    if isinstance(e, ir.Const):
        return format_const(e.value), _prec(e)
    if isinstance(e, ir.Var):
        return e.name, _ATOM_PREC
    if isinstance(e, ir.Ref):
        return format_ref(e), _ATOM_PREC
    if isinstance(e, ir.BinOp):
        p = _PREC[e.op]
        if p == 4:  # comparisons do not chain
            return f"{format_expr(e.lhs, p + 1)} {e.op} {format_expr(e.rhs, p + 1)}", p
        return f"{format_expr(e.lhs, p)} {e.op} {format_expr(e.rhs, p + 1)}", p
    if isinstance(e, ir.UnOp):
        if e.op == "not":
            return f"not {format_expr(e.operand, _PREC['not'])}", _PREC["not"]
        inner = e.operand
        # `-(1.0)` keeps a negated literal distinct from the literal -1.0
        text = f"({format_expr(inner)})" if isinstance(inner, ir.Const) else format_expr(inner, _UNARY_PREC)
        return f"-{text}", _UNARY_PREC
    if isinstance(e, ir.Call) and e.fn in SCANS and len(e.args) == SCAN_ARITY:
        return format_scan(e, format_expr), _ATOM_PREC
    if isinstance(e, ir.Call):
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})", _ATOM_PREC
    if isinstance(e, ir.Reduce):
        text = format_expr(e.arg)
        if e.axes is not None:
            axes = str(e.axes[0]) if len(e.axes) == 1 else "[" + ", ".join(map(str, e.axes)) + "]"
            text += f", axis={axes}"
        return f"{e.op}({text})", _ATOM_PREC
    raise TypeError(f"not an expression: {e!r}")


def format_index(i) -> str:
    if isinstance(i, ir.Slice):
        text = f"{format_expr(i.start)}:{format_expr(i.stop)}"
        return text + (f":{i.step}" if i.step != 1 else "")
    return format_expr(i)


def format_ref(r: ir.Ref) -> str:
    return f"{r.name}[{', '.join(format_index(i) for i in r.index)}]"


def format_type(t: ir.TensorType) -> str:
    return f"{t.dtype.value}[{', '.join(str(d) for d in t.shape)}]"


def _attrs(pairs: list[str]) -> str:
    return (" with " + ", ".join(pairs)) if pairs else ""


class Line(NamedTuple):
    """One printed line: `INDENT * depth + text`. `node` is the statement or function it belongs to and `role`
    where in that node it stands: "stmt" (a whole simple statement), "open" (a block's header, up to `{`),
    "else" (`} else {`) or "close" (`}`). `gir.comments` places comments and blank lines by these."""
    depth: int
    text: str
    node: object
    role: str

    def render(self) -> str:
        return INDENT * self.depth + self.text


def stmt_lines(s, depth: int) -> list[Line]:
    """The printed lines of one statement (a block statement's header, body and closing brace)."""
    if isinstance(s, ir.Assign):
        return [Line(depth, f"{format_ref(s.target)} = {format_expr(s.value)}", s, "stmt")]
    if isinstance(s, ir.Alloc):
        slots = _attrs([f"slots={s.slots}"]) if s.slots != 1 else ""
        return [Line(depth, f"alloc {s.name}: {format_type(s.type)} @{s.level.value}{slots}", s, "stmt")]
    if isinstance(s, ir.Move):
        pairs = []
        if s.vec != 1:
            pairs.append(f"vec={s.vec}")
        if s.mask:
            pairs.append("mask")
        if s.async_:
            pairs.append("async")
        if s.other is not None:
            pairs.append(f"other={format_const(s.other)}")
        return [Line(depth, f"{s.kind} {format_ref(s.dst)} <- {format_ref(s.src)}{_attrs(pairs)}", s, "stmt")]
    if isinstance(s, ir.XReduce):
        pairs = [f"width={s.width}"] if s.width is not None else []
        return [Line(depth, f"allreduce {s.op} {format_ref(s.target)} over {s.var}{_attrs(pairs)}", s, "stmt")]
    if isinstance(s, ir.Chain):
        return [Line(depth, f"chain {s.op} {format_ref(s.target)} <- {format_ref(s.src)} over {s.var} via "
                            f"{format_ref(s.status)}", s, "stmt")]
    if isinstance(s, ir.Sync):
        return [Line(depth, f"sync @{s.level.value}", s, "stmt")]
    if isinstance(s, ir.Parallel):
        head = f"parallel {s.var} in {format_expr(s.lo)}..{format_expr(s.hi)} @{s.level.value} {{"
        return _braced(s, depth, head, s.body)
    if isinstance(s, ir.For):
        step = f" step {s.step}" if s.step != 1 else ""
        return _braced(s, depth, f"for {s.var} in {format_expr(s.lo)}..{format_expr(s.hi)}{step} {{", s.body)
    if isinstance(s, ir.If):
        lines = [Line(depth, f"if {format_expr(s.cond)} {{", s, "open"), *_block(s.then, depth + 1)]
        if s.orelse:
            lines += [Line(depth, "} else {", s, "else"), *_block(s.orelse, depth + 1)]
        return lines + [Line(depth, "}", s, "close")]
    if isinstance(s, ir.Kernel):
        pairs = [f"{k}={v}" for k, v in s.attrs]
        return _braced(s, depth, f"kernel {s.name}{_attrs(pairs)} {{", s.body)
    raise TypeError(f"not a statement: {s!r}")


def _braced(node, depth: int, head: str, body) -> list[Line]:
    return [Line(depth, head, node, "open"), *_block(body, depth + 1), Line(depth, "}", node, "close")]


def _block(stmts, depth: int) -> list[Line]:
    return [line for s in stmts for line in stmt_lines(s, depth)]


def format_stmt(s, depth: int) -> list[str]:
    return [line.render() for line in stmt_lines(s, depth)]


def format_param(p: ir.Param) -> str:
    """`x: f32[N, C]`, or with a reshape view `x: f32[N, C] as [N, G, C / G]` (gir/views.py)."""
    if p.view is None:
        return f"{p.name}: {format_type(p.type)}"
    return f"{p.name}: {format_type(p.view.outer)} as [{', '.join(format_expr(d) for d in p.view.dims)}]"


def func_lines(f: ir.Func) -> list[Line]:
    params = ", ".join(format_param(p) for p in f.params)
    results = ", ".join(format_param(p) for p in f.results)
    return _braced(f, 0, f"func {f.name}({params}) -> ({results}) {{", f.body)


def format_func(f: ir.Func) -> str:
    return "\n".join(line.render() for line in func_lines(f)) + "\n"


def print_module(m: ir.Module) -> str:
    """Canonical text of a module, without comments (`gir.comments.format_source` keeps a file's comments)."""
    return "\n".join(format_func(f) for f in m.funcs)
