"""The front end's stated limits, checked on the parse tree before anything recurses over it.

Deeper nesting, longer literals or more statements than these are refused with a located error naming the
limit, instead of reaching Python's recursion limit or a quadratic blow-up further down.
"""
from __future__ import annotations

from lark import Token, Tree

from gir.errors import GirError, Loc

MAX_NESTING = 256        # depth of the parse tree: operators, calls, blocks (parentheses add no level)
MAX_STATEMENTS = 1024    # statements in one function (a chain of 1000 compiles in about 5 s)
MAX_FUNCS = 256          # functions in one file
MAX_LITERAL_CHARS = 64   # characters of one number literal
MAX_INT_LITERAL = (1 << 63) - 1
MAX_SIZE = 1 << 62       # one size binding (--sizes, gir.compile): beyond int64 index arithmetic in every backend


def check_tree(tree: Tree, filename: str, source: str) -> None:
    """Walk the parse tree iteratively; GirError at the first place that exceeds a limit."""
    def loc(node) -> Loc:
        if isinstance(node, Token):
            return Loc(filename, node.line, node.column, node.end_column, source)
        meta = node.meta
        end = meta.end_column if getattr(meta, "end_line", None) == getattr(meta, "line", None) else None
        return Loc(filename, getattr(meta, "line", 1), getattr(meta, "column", 1), end, source)

    funcs = [c for c in tree.children if isinstance(c, Tree) and c.data == "func"]
    if len(funcs) > MAX_FUNCS:
        raise GirError(f"too many functions in one file: {len(funcs)} (the limit is {MAX_FUNCS})",
                       loc(funcs[MAX_FUNCS]), ["split the file"])
    for func in funcs:
        _check_func(func, loc)


def _check_func(func: Tree, loc) -> None:
    stack = [(func, 0)]
    statements = 0
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Token):
            if node.type == "NUMBER":
                _check_number(node, loc)
            continue
        if node is None:
            continue
        if node.data in _STATEMENTS:
            statements += 1
            if statements > MAX_STATEMENTS:
                raise GirError(f"too many statements in one function: more than {MAX_STATEMENTS}",
                               loc(node), ["split the function"])
        if depth > MAX_NESTING:
            raise GirError(f"nested too deeply: more than {MAX_NESTING} levels of expressions and blocks",
                           loc(node), ["split it: name an intermediate result with its own statement, or "
                                       "flatten nested blocks"])
        stack.extend((child, depth + 1) for child in reversed(node.children))  # source order


_STATEMENTS = {"assign", "alloc", "load", "store", "copy", "xreduce", "sync", "parallel", "forloop",
               "ifstmt", "kernel"}


def _check_number(tok: Token, loc) -> None:
    text = str(tok)
    if len(text) > MAX_LITERAL_CHARS:
        raise GirError(f"number literal too long: {len(text)} characters (the limit is {MAX_LITERAL_CHARS})",
                       Loc(loc(tok).file, tok.line, tok.column, tok.column + 1, loc(tok).source))
    if text.isdigit():
        if int(text) > MAX_INT_LITERAL:
            raise GirError(f"integer literal {text} does not fit in 64 bits", loc(tok))
    elif float(text) == float("inf"):
        raise GirError(f"number literal {text} overflows to infinity", loc(tok),
                       ["write `inf` if infinity is meant"])


# Code below the front end recurses over expressions (a few frames per level); MAX_NESTING levels need
# more than Python's default limit of 1000 frames, far less than the C stack allows.
RECURSION_LIMIT = 20_000


def ensure_recursion_headroom() -> None:
    import sys

    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def refuse_empty_tensors(func, what: str = "compiling", sizes: dict[str, int] | None = None) -> None:
    """Emitting kernels needs elements: a parameter or result with an extent 0 (literal, or a size bound to 0 in
    `sizes`) is refused, located at its declaration. Running such a binding is supported: `gir run`, `gir eval`
    and `gir.compile` compute what remains and return the empty results (gir/empty.py)."""
    sizes = sizes or {}
    for p in tuple(func.params) + tuple(func.results):
        zero = [d for d in p.type.shape if (d if isinstance(d, int) else sizes.get(d, 1)) == 0]
        if zero:
            what_zero = "a zero-size dimension" if isinstance(zero[0], int) else f"no elements at {zero[0]}=0"
            raise GirError(f"'{p.name}' has {what_zero}: {what} kernels for tensors without elements is not "
                           "supported", p.loc or func.loc,
                           ["`gir run`, `gir eval` and gir.compile run it: they compute what remains and return "
                            "the empty results"])


def refuse_f64(func, target: str) -> None:
    """A target without f64 arithmetic (the MLU: no f64 vector units) refuses f64, located at the first f64
    declaration or `f64(...)` cast, rather than computing it in f32 or in scalar code behind the user's back."""
    from gir import ir
    from gir.walk import walk

    where = [(f"'{p.name}' is f64", p.loc) for p in tuple(func.params) + tuple(func.results)
             if p.type.dtype == ir.DType.f64]
    for item in func.body:
        if isinstance(item, ir.Assign):
            where += [("f64(...) converts to f64", x.loc or item.loc) for x in walk(item.value)
                      if isinstance(x, ir.Call) and x.fn == "f64"]
    if where:
        what, loc = where[0]
        raise GirError(f"{what}, and the {target} target has no f64 arithmetic (no f64 vector units)",
                       loc or func.loc, ["use f32 there, or a target with f64: sim, cuda, hip"])


MAX_TENSOR_BYTES = 1 << 62   # byte offsets of every target are 64-bit signed


def check_tensor_sizes(module, sizes: dict[str, int]) -> None:
    """No tensor may span more than 2^62 bytes at the given sizes (literal shapes always count)."""
    for func in module.funcs:
        for p in tuple(func.params) + tuple(func.results):
            dims = [d if isinstance(d, int) else sizes.get(d) for d in p.type.shape]
            if None in dims:
                continue
            nbytes = p.type.dtype.numpy.itemsize
            for d in dims:
                nbytes *= d
            if nbytes > MAX_TENSOR_BYTES:
                raise GirError(f"'{p.name}' would span {nbytes} bytes at these sizes: more than 2^62, the limit of "
                               "64-bit byte offsets on every target", p.loc or func.loc)
