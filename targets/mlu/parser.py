"""Program text -> syntax tree (``syntax.py``), with Lark (LALR, strict) and located diagnostics."""
from __future__ import annotations

import functools
from pathlib import Path

import lark
from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from . import syntax as S
from .errors import MluError, Span
from .lang import DECL_SPACES, ELEM_TYPES

_GRAMMAR = Path(__file__).with_name("grammar.lark")

_BINARY_ALIASES = {
    "or_": "||", "and_": "&&", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "add": "+", "sub": "-", "div": "/", "mod": "%",
}


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    return lark.Lark(_GRAMMAR.read_text(), parser="lalr", strict=True, propagate_positions=True,
                     maybe_placeholders=True)


class _ToSyntax(Transformer):
    """Lark tree -> syntax nodes. Spans come from ``meta`` (rules) or the token (terminals)."""

    def __init__(self, filename: str, lines: list[str]):
        super().__init__()
        self.filename = filename
        self.lines = lines

    def span(self, line: int, col: int) -> Span:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return Span(self.filename, line, col, text)

    def meta_span(self, meta) -> Span:
        return self.span(getattr(meta, "line", 1), getattr(meta, "column", 1))

    def tok_span(self, tok: Token) -> Span:
        return self.span(tok.line, tok.column)

    # ------------------------------------------------------------ top level
    @v_args(meta=True)
    def start(self, meta, items):
        kernels, consts = {}, []
        for item in items:
            if isinstance(item, S.Kernel):
                if item.name in kernels:
                    raise MluError(f"kernel '{item.name}' is defined twice", item.span)
                kernels[item.name] = item
            else:
                consts.append(item)
        return kernels, tuple(consts)

    @v_args(meta=True)
    def kernel(self, meta, children):
        name, *params, body = children
        params = tuple(p for p in params if p is not None)
        return S.Kernel(self.tok_span(name), str(name), params, body)

    @v_args(meta=True)
    def param(self, meta, children):
        _const, typ, name = children
        return S.Param(self.tok_span(name), typ, str(name))

    def type(self, children):
        elem, star = children
        return S.TypeRef(elem, star is not None)

    def elem(self, children):
        return str(children[0])

    def space(self, children):
        return str(children[0])

    def assign_op(self, children):
        return str(children[0])

    # ------------------------------------------------------------ statements
    @v_args(meta=True)
    def block(self, meta, stmts):
        return S.Block(self.meta_span(meta), tuple(s for s in stmts if s is not None))

    @v_args(meta=True)
    def onchip_decl(self, meta, children):
        space, elem, name, size = children
        return S.OnChipDecl(self.meta_span(meta), DECL_SPACES[space], elem, str(name), size)

    @v_args(meta=True)
    def var_decl(self, meta, children):
        typ, name, init = children
        return S.VarDecl(self.meta_span(meta), typ, str(name), init)

    @v_args(meta=True)
    def const_decl(self, meta, children):
        _const, typ, name, init = children
        return S.VarDecl(self.meta_span(meta), typ, str(name), init, const=True)

    @v_args(meta=True)
    def assign(self, meta, children):
        target, op, value = children
        return S.Assign(self.meta_span(meta), target, op, value)

    def _step(self, meta, target, op):
        span = self.meta_span(meta)
        return S.Assign(span, target, op, S.IntLit(span, 1))

    @v_args(meta=True)
    def post_inc(self, meta, children):
        return self._step(meta, children[0], "+=")

    pre_inc = post_inc

    @v_args(meta=True)
    def post_dec(self, meta, children):
        return self._step(meta, children[0], "-=")

    pre_dec = post_dec

    @v_args(meta=True)
    def call_stmt(self, meta, children):
        return S.CallStmt(self.meta_span(meta), children[0])

    @v_args(meta=True)
    def return_stmt(self, meta, children):
        return S.Return(self.meta_span(meta))

    @v_args(meta=True)
    def if_stmt(self, meta, children):
        cond, then, other = children
        return S.If(self.meta_span(meta), cond, then, other)

    @v_args(meta=True)
    def for_stmt(self, meta, children):
        init, cond, step, body = children
        return S.For(self.meta_span(meta), init, cond, step, body)

    # ------------------------------------------------------------ expressions
    @v_args(meta=True)
    def ternary(self, meta, children):
        return S.Ternary(self.meta_span(meta), *children)

    @v_args(meta=True)
    def mul(self, meta, children):
        left, _star, right = children
        return S.Binary(self.meta_span(meta), "*", left, right)

    @v_args(meta=True)
    def neg(self, meta, children):
        operand = children[0]
        if isinstance(operand, S.IntLit):
            return S.IntLit(self.meta_span(meta), -operand.value)
        if isinstance(operand, S.FloatLit):
            return S.FloatLit(self.meta_span(meta), -operand.value)
        return S.Unary(self.meta_span(meta), "-", operand)

    @v_args(meta=True)
    def not_(self, meta, children):
        return S.Unary(self.meta_span(meta), "!", children[0])

    @v_args(meta=True)
    def cast(self, meta, children):
        return S.Cast(self.meta_span(meta), children[0], children[1])

    @v_args(meta=True)
    def index(self, meta, children):
        name, idx = children
        return S.Index(self.tok_span(name), str(name), idx)

    @v_args(meta=True)
    def call(self, meta, children):
        name, *args = children
        args = tuple(a for a in args if a is not None)
        return S.Call(self.tok_span(name), str(name), args)

    def name(self, children):
        tok = children[0]
        return S.Name(self.tok_span(tok), str(tok))

    @v_args(meta=True)
    def sizeof(self, meta, children):
        typ = children[0]
        if typ.elem not in ELEM_TYPES:
            raise MluError(f"unknown type '{typ.elem}'", self.meta_span(meta))
        return S.IntLit(self.meta_span(meta), 8 if typ.pointer else ELEM_TYPES[typ.elem].itemsize)

    def int_lit(self, children):
        tok = children[0]
        text = str(tok).rstrip("uUlL")
        return S.IntLit(self.tok_span(tok), int(text, 0) if text.lower().startswith("0x") else int(text))

    def float_lit(self, children):
        tok = children[0]
        return S.FloatLit(self.tok_span(tok), float(str(tok).rstrip("fF")))


def _make_binary(op):
    @v_args(meta=True)
    def build(self, meta, children):
        left, right = children
        return S.Binary(self.meta_span(meta), op, left, right)
    return build


for _alias, _op in _BINARY_ALIASES.items():
    setattr(_ToSyntax, _alias, _make_binary(_op))


def _describe_expected(expected: set[str]) -> str:
    parser = _lark()
    names = []
    for term in sorted(expected):
        try:
            pattern = parser.get_terminal(term).pattern
        except KeyError:
            names.append(term)
            continue
        names.append(f"'{pattern.value}'" if pattern.type == "str" else term)
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")


def _syntax_error(err: UnexpectedInput, filename: str, lines: list[str]) -> MluError:
    line = max(getattr(err, "line", 1) or 1, 1)
    col = max(getattr(err, "column", 1) or 1, 1)
    if isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        line = len(lines) or 1
        col = len(lines[-1]) + 1 if lines else 1
        message = "unexpected end of input"
        expected = getattr(err, "expected", None)
    elif isinstance(err, UnexpectedToken):
        message = f"unexpected '{err.token}'"
        expected = err.expected
    elif isinstance(err, UnexpectedCharacters):
        message = f"unexpected character '{err.char}'"
        expected = None
    else:
        message, expected = "syntax error", None
    if expected:
        message += f"; expected one of: {_describe_expected(set(expected))}"
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return MluError(message, Span(filename, line, col, text))


def parse_program(text: str, filename: str = "<mlu>") -> S.Program:
    """Parse kernel-language text into a `Program`; syntax errors raise `MluError` with line:col and a caret."""
    lines = text.splitlines()
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, filename, lines) from None
    try:
        kernels, consts = _ToSyntax(filename, lines).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, MluError):
            raise err.orig_exc from None
        raise
    return S.Program(filename, text, kernels, consts)
