"""Text → IR. Lark LALR grammar (grammar.lark) plus a Transformer that builds `gir.ir` nodes.

Syntax errors are rewritten into `GirError` diagnostics with `file:line:col` and a caret.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from pathlib import Path

import lark
from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from gir import ir
from gir.errors import GirError, Loc
from gir.limits import check_tree, ensure_recursion_headroom
from gir.scan import SCANS, make_scan
from gir.source import describe_char, read_source, source_lines
from gir.views import make_view

_NAMED_CONSTS = {"inf": math.inf, "nan": math.nan, "true": True, "false": False}

_TOKEN_NAMES = {
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'", "RBRACE": "'}'",
    "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "NAME": "a name", "NUMBER": "a number",
    "AT": "'@'", "$END": "end of input", "MINUS": "'-'", "PLUS": "'+'", "STAR": "'*'", "SLASH": "'/'",
}


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    options = dict(parser="lalr", strict=True, propagate_positions=True, maybe_placeholders=True)
    cache = _parser_cache(grammar)
    if cache is not None:
        try:
            return lark.Lark(grammar, cache=cache, **options)
        except OSError:
            pass
    return lark.Lark(grammar, **options)


def _parser_cache(grammar: str) -> str | None:
    """A file for Lark's built LALR tables (0.4 s to build, 0.01 s to load) in a directory only this user can
    write ($XDG_CACHE_HOME/gir or ~/.cache/gir, mode 0700: Lark unpickles the file), named by the grammar's hash
    and the Lark and Python versions; None when no such directory can be made (the tables are built each time).
    Lark rebuilds and rewrites a missing, stale or unreadable file."""
    import hashlib
    import os
    import stat
    import sys
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "gir")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
    except (OSError, AttributeError):   # (no getuid on some platforms)
        return None
    digest = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    py = f"{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(folder, f"grammar-{digest}-lark{lark.__version__}-py{py}.pickle")


class _Builder(Transformer):
    """Builds IR from the parse tree; every node gets a `Loc` from Lark's meta."""

    def __init__(self, filename: str, source: str):
        super().__init__()
        self.filename = filename
        self.source = source

    def _loc(self, meta) -> Loc | None:
        if getattr(meta, "empty", True):
            return None
        end = meta.end_column if meta.end_line == meta.line else None
        return Loc(self.filename, meta.line, meta.column, end, self.source)

    def _tok_loc(self, tok: Token) -> Loc:
        return Loc(self.filename, tok.line, tok.column, tok.end_column, self.source)

    # -------------------------------------------------------------- top level
    @v_args(meta=True)
    def start(self, meta, funcs):
        return ir.Module(tuple(funcs), loc=self._loc(meta) or Loc(self.filename, 1, 1, None, self.source))

    @v_args(meta=True)
    def func(self, meta, ch):
        name, params, results, *items = ch
        return ir.Func(str(name), tuple(params or ()), tuple(results or ()), tuple(items),
                       loc=self._loc(meta))

    def params(self, ch):
        return tuple(ch)

    @v_args(meta=True)
    def param(self, meta, ch):
        name, ttype, view = ch
        if view is None:
            return ir.Param(str(name), ttype, loc=self._loc(meta))
        inner, view_rec = make_view(ttype, *view)
        return ir.Param(str(name), inner, view_rec, loc=self._loc(meta))

    @v_args(meta=True)
    def view(self, meta, ch):
        return tuple(d for d in ch if d is not None), self._loc(meta)

    @v_args(meta=True)
    def ttype(self, meta, ch):
        name, *dims = ch
        dims = [d for d in dims if d is not None]
        return ir.TensorType(self._dtype(name), tuple(dims), loc=self._loc(meta))

    def _dtype(self, tok: Token) -> ir.DType:
        try:
            return ir.DType(str(tok))
        except ValueError:
            known = ", ".join(d.value for d in ir.DType)
            raise GirError(f"unknown element type '{tok}'", self._tok_loc(tok),
                           [f"known element types: {known}"]) from None

    def dim_int(self, ch):
        tok = ch[0]
        if not str(tok).isdigit():
            raise GirError(f"dimension must be an integer or a size name, not '{tok}'", self._tok_loc(tok))
        return int(tok)

    def dim_sym(self, ch):
        return str(ch[0])

    @v_args(meta=True)
    def kernel(self, meta, ch):
        name, attrs, *body = ch
        pairs = tuple((k, _attr_text(v)) for k, (v, _) in (attrs or {}).items())
        return ir.Kernel(str(name), tuple(body), pairs, loc=self._loc(meta))

    # ------------------------------------------------------------- statements
    @v_args(meta=True)
    def assign(self, meta, ch):
        return ir.Assign(ch[0], ch[1], loc=self._loc(meta))

    @v_args(meta=True)
    def alloc(self, meta, ch):
        name, ttype, level, attrs = ch
        attrs = dict(attrs or {})
        slots = self._int_attr(attrs.pop("slots", None), "slots", 1)
        self._no_more(attrs, ("slots",))
        return ir.Alloc(str(name), ttype, self._level(level, ir.Level, "memory level"), loc=self._loc(meta),
                        slots=slots)

    def _level(self, tok: Token, enum, what: str):
        text = "global_" if str(tok) == "global" else str(tok)
        try:
            return enum[text]
        except KeyError:
            known = ", ".join(e.value for e in enum)
            raise GirError(f"unknown {what} '@{tok}'", self._tok_loc(tok), [f"known: {known}"]) from None

    def _move(self, kind, meta, ch):
        dst, src, attrs = ch
        attrs = dict(attrs or {})
        vec = self._int_attr(attrs.pop("vec", None), "vec", 1)
        mask = self._flag_attr(attrs.pop("mask", None))
        other = attrs.pop("other", None)
        async_ = self._flag_attr(attrs.pop("async", None))
        other_val = None
        if other is not None:
            other_val = other[0]
            if not isinstance(other_val, (int, float)):
                raise GirError("attribute 'other' takes a number", other[1])
        self._no_more(attrs, ("vec", "mask", "other", "async"))
        return ir.Move(kind, dst, src, vec=vec, mask=mask, other=other_val, loc=self._loc(meta), async_=async_)

    @v_args(meta=True)
    def load(self, meta, ch):
        return self._move("load", meta, ch)

    @v_args(meta=True)
    def store(self, meta, ch):
        return self._move("store", meta, ch)

    @v_args(meta=True)
    def copy(self, meta, ch):
        return self._move("copy", meta, ch)

    def _int_attr(self, entry, name, default):
        if entry is None:
            return default
        value, loc = entry
        if not isinstance(value, int) or isinstance(value, bool):
            raise GirError(f"attribute '{name}' takes an integer", loc)
        return value

    def _flag_attr(self, entry) -> bool:
        if entry is None:
            return False
        value, loc = entry
        if value is None:
            return True
        if isinstance(value, bool):
            return value
        raise GirError("a flag attribute takes true or false", loc)

    def _no_more(self, attrs, known):
        for key, (_, loc) in attrs.items():
            raise GirError(f"unknown attribute '{key}'", loc, [f"known here: {', '.join(known)}"])

    @v_args(meta=True)
    def xreduce(self, meta, ch):
        op, target, var, attrs = ch
        attrs = dict(attrs or {})
        width = self._int_attr(attrs.pop("width", None), "width", None)
        self._no_more(attrs, ("width",))
        return ir.XReduce(str(op), target, str(var), width, loc=self._loc(meta))

    @v_args(meta=True)
    def chain(self, meta, ch):
        op, target, src, var, status = ch
        return ir.Chain(str(op), target, src, str(var), status, loc=self._loc(meta))

    @v_args(meta=True)
    def sync(self, meta, ch):
        return ir.Sync(self._level(ch[0], ir.ParLevel, "parallel level"), loc=self._loc(meta))

    @v_args(meta=True)
    def parallel(self, meta, ch):
        var, lo, hi, level, *body = ch
        return ir.Parallel(str(var), lo, hi, self._level(level, ir.ParLevel, "parallel level"),
                           tuple(body), loc=self._loc(meta))

    @v_args(meta=True)
    def forloop(self, meta, ch):
        var, lo, hi, step, *body = ch
        step_val = 1 if step is None else self._int_token(step)
        return ir.For(str(var), lo, hi, tuple(body), step_val, loc=self._loc(meta))

    def _int_token(self, tok: Token) -> int:
        if not str(tok).isdigit():
            raise GirError(f"expected an integer, found '{tok}'", self._tok_loc(tok))
        return int(tok)

    @v_args(meta=True)
    def ifstmt(self, meta, ch):
        cond, *body, orelse = ch
        return ir.If(cond, tuple(body), tuple(orelse or ()), loc=self._loc(meta))

    def else_(self, ch):
        return tuple(ch)

    def attrs(self, ch):
        out = {}
        for key, value, loc in ch:
            if key in out:
                raise GirError(f"attribute '{key}' given twice", loc)
            out[key] = (value, loc)
        return out

    def attr(self, ch):
        key, value = ch
        return str(key), value, self._tok_loc(key)

    def pos_num(self, ch):
        return _number(ch[0])

    def neg_num(self, ch):
        return -_number(ch[0])

    def neg_name(self, ch):
        value = _NAMED_CONSTS.get(str(ch[0]))
        if not isinstance(value, float):
            raise GirError(f"cannot negate '{ch[0]}'", self._tok_loc(ch[0]))
        return -value

    def attr_name(self, ch):
        return _NAMED_CONSTS.get(str(ch[0]), str(ch[0]))

    # ------------------------------------------------------------ expressions
    @v_args(meta=True)
    def number(self, meta, ch):
        return ir.Const(_number(ch[0]), loc=self._loc(meta))

    @v_args(meta=True)
    def var(self, meta, ch):
        name = str(ch[0])
        if name in _NAMED_CONSTS:
            return ir.Const(_NAMED_CONSTS[name], loc=self._loc(meta))
        return ir.Var(name, loc=self._loc(meta))

    @v_args(meta=True)
    def ref(self, meta, ch):
        name, *index = ch
        index = [i for i in index if i is not None]
        return ir.Ref(str(name), tuple(index), loc=self._loc(meta))

    @v_args(meta=True)
    def slice(self, meta, ch):
        start, stop, step = ch
        step_val = 1 if step is None else self._int_token(step)
        if step_val == 0:
            raise GirError("slice step must not be zero", self._tok_loc(step))
        return ir.Slice(start, stop, step_val, loc=self._loc(meta))

    @v_args(meta=True)
    def call(self, meta, ch):
        name, *args = ch
        args = [a for a in args if a is not None]
        loc = self._loc(meta)
        positional = [a for a in args if not isinstance(a, tuple)]
        kwargs = [a for a in args if isinstance(a, tuple)]
        fn = str(name)
        if fn in SCANS:
            return make_scan(fn, positional, kwargs, loc)
        if fn in ir.REDUCTIONS and len(positional) == 1:
            axes = None
            for key, value, kloc in kwargs:
                if key not in ("axis", "axes") or axes is not None:
                    raise GirError(f"unexpected keyword '{key}' in {fn}()", kloc, ["reductions take axis=K or axis=[K, ...]"])
                axes = value
            return ir.Reduce(fn, positional[0], axes, loc=loc)
        if kwargs:
            key, _, kloc = kwargs[0]
            raise GirError(f"{fn}() takes no keyword '{key}'", kloc)
        return ir.Call(fn, tuple(positional), loc=loc)

    @v_args(meta=True)
    def kwarg(self, meta, ch):
        key, value = ch
        if not isinstance(value, ir.Const) or not isinstance(value.value, int) or isinstance(value.value, bool):
            raise GirError(f"keyword '{key}' takes an integer or a list of integers", self._loc(meta))
        return (str(key), (value.value,), self._tok_loc(key))

    @v_args(meta=True)
    def kwarg_list(self, meta, ch):
        key, *values = ch
        return (str(key), tuple(self._int_token(v) for v in values), self._tok_loc(key))

    @v_args(meta=True)
    def neg(self, meta, ch):
        (operand,) = ch
        adjacent = operand.loc is not None and operand.loc.line == meta.line and operand.loc.col == meta.column + 1
        if isinstance(operand, ir.Const) and not isinstance(operand.value, bool) and adjacent:
            return ir.Const(-operand.value, loc=self._loc(meta))
        return ir.UnOp("-", operand, loc=self._loc(meta))

    @v_args(meta=True)
    def not_(self, meta, ch):
        return ir.UnOp("not", ch[0], loc=self._loc(meta))


def _binop(op: str):
    @v_args(meta=True)
    def build(self, meta, ch):
        return ir.BinOp(op, ch[0], ch[1], loc=self._loc(meta))
    return build


for _name, _op in {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
                   "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
                   "and_": "and", "or_": "or"}.items():
    setattr(_Builder, _name, _binop(_op))


def _number(tok) -> int | float:
    text = str(tok)
    return int(text) if text.isdigit() else float(text)


def _attr_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "true"
    return str(value)


def _token_text(name: str) -> str:
    """A terminal's spelling for a diagnostic: `'->'` rather than `__ANON_0`."""
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    for term in _lark().terminals:
        if term.name == name and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return name.lower()


def _end_of(source: str) -> tuple[int, int]:
    """(line, col) just after the last character, as the lexer counts lines."""
    lines = source_lines(source.rstrip("\r\n"))
    return len(lines), len(lines[-1]) + 1


def _syntax_error(exc: UnexpectedInput, filename: str, source: str) -> GirError:
    line, col = getattr(exc, "line", 0) or 0, getattr(exc, "column", 0) or 0
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        found = "end of input" if tok.type == "$END" else f"'{tok}'"
        expected = sorted({_token_text(t) for t in exc.expected})
        if tok.type == "$END":
            line, col = _end_of(source)
        notes = [f"expected one of: {', '.join(expected[:12])}"] if expected else []
        if tok.type == "$END" and "RBRACE" in exc.expected:
            notes.insert(0, "a '{' block is not closed: missing '}'")
        end = col + len(str(tok)) if tok.type != "$END" else None
        return GirError(f"syntax error: unexpected {found}", Loc(filename, line, col, end, source), notes)
    if isinstance(exc, UnexpectedCharacters):
        ch = exc.char if getattr(exc, "char", None) else "?"
        return GirError(f"syntax error: unexpected character {describe_char(ch)}",
                        Loc(filename, line, col, None, source))
    if isinstance(exc, UnexpectedEOF):
        return GirError("syntax error: unexpected end of input", Loc(filename, *_end_of(source), None, source))
    return GirError(f"syntax error: {exc}", Loc(filename, line, col, None, source))


def parse_text(source: str, filename: str = "<string>", *, limits: bool = True) -> ir.Module:
    """Parse GIR text into a Module (no semantic checks; see `gir.verifier`). `limits=False` for text the
    compiler generated from a program that already passed them (a kernel nests a few levels deeper)."""
    try:
        tree = _lark().parse(source)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, filename, source) from None
    if not source.strip():
        raise GirError("the file defines no function", Loc(filename, 1, 1, None, source))
    if limits:
        check_tree(tree, filename, source)
    ensure_recursion_headroom()
    try:
        return _Builder(filename, source).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, GirError):
            raise exc.orig_exc from None
        raise


def lex_all(source: str) -> Iterator[Token]:
    """Every token of `source` in order, the ignored ones (COMMENT, WS) included: how `gir fmt` finds the
    comments that `parse_text` drops. A lexer pass of its own, so nothing is shared between parses."""
    return _lark().lex(source, dont_ignore=True)


def parse_file(path: str | Path) -> ir.Module:
    """Parse a file ("-" reads standard input); bytes that are not UTF-8 are a located error."""
    source, name = read_source(path)
    return parse_text(source, name)
