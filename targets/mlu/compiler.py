"""Compiling a kernel's statements to Python closures ``run(c, f)``.

Every statement closure adds its scalar cost to ``c.sc`` and attaches its span to any `MluError` raised below it,
so the interpreter's per-statement overhead is a couple of Python calls. On-chip buffers are allocated statically
(``memory.layout`` at launch); their declarations execute as no-ops.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from . import syntax as S
from .core import ReturnSignal
from .dma import memcpy
from .errors import MluError, Span
from .exprs import INT, ExprCompiler, Fn, Sym, Type, converter, type_of
from .lang import (BUILTIN_CONSTS, BUILTIN_VARS, DIRECTIONS, ELEM_TYPES, FUSION_OPS, MEMCPY, SCALAR_FUNCS, SYNCS,
                   ElemType)
from .vector import VECTOR_OPS
from . import vector_shape  # noqa: F401  (registers reductions, transpose, conversions, matmul)
from . import vector_fusion  # noqa: F401  (registers __bang_fusion)

_PY_ERRORS = (ValueError, OverflowError, TypeError, ZeroDivisionError, FloatingPointError)


@dataclass(frozen=True)
class CompiledParam:
    name: str
    type: Type
    slot: int
    span: Span


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel ready to run: ``run(c, frame)`` executes its body for one task."""

    name: str
    params: tuple[CompiledParam, ...]
    buffers: tuple[tuple[str, str, ElemType, int, Span], ...]  # name, space, elem, count, span
    nslots: int
    body: Fn
    uses_barriers: bool

    def run(self, c, frame: list) -> None:
        try:
            self.body(c, frame)
        except ReturnSignal:
            pass
        c.end()


def compile_kernel(program: S.Program, name: str) -> CompiledKernel:
    """Compile (once; cached on the program) the kernel ``name``."""
    cache = program._compiled
    if name not in cache:
        cache[name] = _KernelCompiler(program).kernel(program.kernel(name))
    return cache[name]


def _located(fn: Fn, span: Span) -> Fn:
    def run(c, f):
        try:
            fn(c, f)
        except MluError as err:
            if err.span is None:
                raise err.located(span) from None
            raise
    return run


class _KernelCompiler:
    def __init__(self, program: S.Program):
        self.program = program
        self.scopes: list[dict[str, Sym]] = []
        self.nslots = 0
        self.buffers: list[tuple[str, str, ElemType, int, Span]] = []
        self.uses_barriers = False
        self.exprs = ExprCompiler(self.lookup)

    # ------------------------------------------------------------ scopes
    def lookup(self, name: str) -> Sym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, sym: Sym, span: Span) -> Sym:
        if name in BUILTIN_VARS or name in BUILTIN_CONSTS or name in DIRECTIONS or name in FUSION_OPS:
            raise MluError(f"'{name}' is a built-in name and cannot be redeclared", span)
        scope = self.scopes[-1]
        if name in scope:
            prev = scope[name].span
            notes = (f"previous declaration at line {prev.line}",) if prev else ()
            raise MluError(f"'{name}' is already declared in this scope", span, notes)
        scope[name] = sym
        return sym

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    # ------------------------------------------------------------ kernel
    def kernel(self, k: S.Kernel) -> CompiledKernel:
        self.scopes.append({})
        for decl in self.program.consts:
            self.const_decl(decl)
        self.scopes.append({})
        params = []
        for p in k.params:
            typ = type_of(p.type, p.span)
            sym = self.declare(p.name, Sym("var", typ, self.new_slot(), span=p.span), p.span)
            params.append(CompiledParam(p.name, typ, sym.slot, p.span))
        body = self.block(k.body, top=True)
        return CompiledKernel(k.name, tuple(params), tuple(self.buffers), self.nslots, body, self.uses_barriers)

    def block(self, b: S.Block, top: bool = False) -> Fn:
        if not top:
            self.scopes.append({})
        stmts = [self.stmt(s, top) for s in b.stmts]
        if not top:
            self.scopes.pop()
        stmts = [s for s in stmts if s is not None]
        if len(stmts) == 1:
            return stmts[0]

        def run(c, f):
            for s in stmts:
                s(c, f)
        return run

    def stmt(self, s: S.Stmt, top: bool = False) -> Fn | None:
        if isinstance(s, S.OnChipDecl):
            if not top:
                raise MluError("on-chip buffers must be declared at the top level of the kernel body", s.span)
            return self.onchip_decl(s)
        if isinstance(s, S.VarDecl) and s.const:
            self.const_decl(s)
            return None
        if isinstance(s, S.Block):
            return self.block(s)
        method = getattr(self, "_" + type(s).__name__.lower())
        return _located(method(s), s.span)

    # ------------------------------------------------------------ declarations
    def onchip_decl(self, s: S.OnChipDecl) -> None:
        count = self.exprs.const_int(s.size, "buffer size")
        if count <= 0:
            raise MluError(f"buffer size must be positive, got {count}", s.size.span)
        elem = ELEM_TYPES[s.elem]
        self.declare(s.name, Sym("buffer", Type("ptr", elem), len(self.buffers), span=s.span), s.span)
        self.buffers.append((s.name, s.space, elem, count, s.span))
        return None

    def const_decl(self, s: S.VarDecl) -> None:
        typ = type_of(s.type, s.span)
        if typ.kind == "ptr":
            raise MluError("const pointers are not supported; use a plain pointer variable", s.span)
        _, vtype, value = self.exprs.expr(s.init)
        if value is None:
            raise MluError(f"initializer of const '{s.name}' must be a constant expression", s.init.span)
        conv = converter(typ, vtype, s.span, f"const '{s.name}'")
        value = conv(value) if conv else value
        self.declare(s.name, Sym("const", typ, value=value, span=s.span), s.span)

    def _vardecl(self, s: S.VarDecl) -> Fn:
        typ = type_of(s.type, s.span)
        if s.init is None:
            if typ.kind == "ptr":
                raise MluError(f"pointer '{s.name}' must be initialized", s.span)
            init, itype = (lambda c, f: 0), INT
        else:
            init, itype, _ = self.exprs.expr(s.init)
        conv = converter(typ, itype, s.span, f"initialization of '{s.name}'")
        slot = self.declare(s.name, Sym("var", typ, self.new_slot(), span=s.span), s.span).slot
        if conv is None:
            def run(c, f):
                c.sc += 1
                f[slot] = init(c, f)
        else:
            def run(c, f):
                c.sc += 1
                f[slot] = conv(init(c, f))
        return run

    # ------------------------------------------------------------ assignments
    def _assign(self, s: S.Assign) -> Fn:
        op = s.op[:-1] if s.op != "=" else None
        value = s.value if op is None else S.Binary(s.span, op, s.target, s.value)
        vf, vtype, _ = self.exprs.expr(value)
        if isinstance(s.target, S.Name):
            sym = self.lookup(s.target.name)
            if sym is None or sym.kind != "var":
                what = "undeclared" if sym is None and s.target.name not in BUILTIN_VARS else "read-only"
                raise MluError(f"cannot assign to {what} name '{s.target.name}'", s.target.span)
            conv = converter(sym.type, vtype, s.span, f"assignment to '{s.target.name}'")
            slot = sym.slot
            if conv is None:
                def run(c, f):
                    c.sc += 1
                    f[slot] = vf(c, f)
            else:
                def run(c, f):
                    c.sc += 1
                    f[slot] = conv(vf(c, f))
            return run
        return self._element_store(s.target, vf, vtype, s.span)

    def _element_store(self, target: S.Index, vf: Fn, vtype: Type, span: Span) -> Fn:
        base, ptype = self.exprs.pointer(target.name, target.span)
        idx, itype, _ = self.exprs.expr(target.index)
        if itype.kind != "int":
            raise MluError(f"array index must be int, got {itype}", target.index.span)
        if vtype.kind == "ptr":
            raise MluError(f"cannot store a pointer into an element of {ptype}", span)
        elem = ptype.elem
        size = elem.itemsize
        conv = converter(Type("float" if elem.is_float else "int", elem), vtype, span, "element store")

        def run(c, f):
            c.sc += 1
            value = vf(c, f)
            ptr = base(c, f).add(idx(c, f))
            c.scalar_access(ptr, True, span)
            off = ptr.off
            if off < 0 or off + size > ptr.region.size:
                raise MluError(f"element store at byte {off} is out of bounds of {ptr.region.describe()}")
            if ptr.region.data is None:  # timing-only mode: no values
                return
            ptr.region.data[off:off + size].view(elem.dtype)[0] = conv(value) if conv else value
        return run

    # ------------------------------------------------------------ control flow
    def _if(self, s: S.If) -> Fn:
        cond, ctype, cval = self.exprs.expr(s.cond)
        _scalar_cond(ctype, s.cond.span)
        then = self.block(s.then)
        other = self.stmt(s.other) if s.other is not None else None

        def run(c, f):
            c.sc += 1
            if cond(c, f):
                then(c, f)
            elif other is not None:
                other(c, f)
        return run

    def _for(self, s: S.For) -> Fn:
        self.scopes.append({})
        init = self.stmt(s.init) if s.init is not None else None
        cond, ctype, _ = self.exprs.expr(s.cond)
        _scalar_cond(ctype, s.cond.span)
        step = self.stmt(s.step) if s.step is not None else None
        body = self.block(s.body)
        self.scopes.pop()

        def run(c, f):
            if init is not None:
                init(c, f)
            while cond(c, f):
                c.sc += 1
                body(c, f)
                if step is not None:
                    step(c, f)
            c.sc += 1
        return run

    def _return(self, s: S.Return) -> Fn:
        def run(c, f):
            c.sc += 1
            raise ReturnSignal()
        return run

    # ------------------------------------------------------------ built-in calls
    def _callstmt(self, s: S.CallStmt) -> Fn:
        call = s.call
        name = call.name
        if name in SYNCS:
            return self.sync_call(call)
        if name in MEMCPY:
            return self.memcpy_call(call)
        if name in VECTOR_OPS:
            return self.vector_call(call)
        if name in SCALAR_FUNCS:
            raise MluError(f"result of '{name}' is unused", call.span)
        known = list(SYNCS) + list(MEMCPY) + list(VECTOR_OPS)
        hint = difflib.get_close_matches(name, known, 1)
        extra = f"; did you mean '{hint[0]}'?" if hint else ""
        raise MluError(f"unknown built-in '{name}'{extra}", call.span)

    def sync_call(self, call: S.Call) -> Fn:
        if call.args:
            raise MluError(f"{call.name} takes no arguments", call.span)
        wait_io, wait_compute, scope = SYNCS[call.name]
        span = call.span
        if scope is not None:
            self.uses_barriers = True

            def barrier(c, f):
                c.sc += 1
                c.barrier(scope, span)
            return barrier

        def run(c, f):
            c.sc += 1
            c.sync(wait_io, wait_compute)
        return run

    def memcpy_call(self, call: S.Call) -> Fn:
        is_async = call.name == "__memcpy_async"
        args = call.args
        if len(args) not in (4, 7, 10):
            raise MluError(f"{call.name} takes 4 (dst, src, bytes, DIR), 7 (+ dst_stride, src_stride, segnum) or 10 "
                           f"(+ dst_stride1, src_stride1, segnum1) arguments, got {len(args)}", call.span)
        direction = args[3]
        if not isinstance(direction, S.Name) or direction.name not in DIRECTIONS:
            raise MluError(f"{call.name}: 4th argument must be a direction, one of {', '.join(DIRECTIONS)}",
                           direction.span)
        dst, src = (self._arg(a, "p", call.name, i) for i, a in enumerate(args[:2]))
        ints = [self._arg(a, "i", call.name, i + 2) for i, a in enumerate(args[2:3] + args[4:])]
        size = ints[0]
        levels = [tuple(ints[i:i + 3]) for i in range(1, len(ints), 3)]
        dir_name = direction.name
        span = call.span

        def run(c, f):
            c.sc += 1
            lv = tuple((a(c, f), b(c, f), n(c, f)) for a, b, n in levels)
            memcpy(c, dst(c, f), src(c, f), size(c, f), dir_name, lv, is_async, span)
        return run

    def vector_call(self, call: S.Call) -> Fn:
        op = VECTOR_OPS[call.name]
        kinds = op.params.replace("?", "")   # kinds after a '?' are optional trailing arguments
        least = op.params.find("?") if "?" in op.params else len(kinds)
        if not least <= len(call.args) <= len(kinds):
            count = f"{least} or {len(kinds)}" if least < len(kinds) else f"{len(kinds)}"
            raise MluError(f"{call.name} takes {count} arguments, got {len(call.args)}", call.span)
        fns = [self._arg(a, kind, call.name, i) for i, (a, kind) in enumerate(zip(call.args, kinds))]
        impl, span, name = op.run, call.span, call.name

        def run(c, f):
            c.sc += 1
            try:
                impl(c, tuple(fn(c, f) for fn in fns), span)
            except _PY_ERRORS as err:
                raise MluError(f"{name}: {err}") from None
        return run

    def _arg(self, e: S.Expr, kind: str, name: str, index: int) -> Fn:
        """Kinds: 'p' pointer, 'i' int, 'x' number, 'a' pointer or number, 'o' a FUSION_* name."""
        if kind == "o":
            if not isinstance(e, S.Name) or e.name not in FUSION_OPS:
                raise MluError(f"{name}: argument {index + 1} must be a fusion operation, one of "
                               f"{', '.join(FUSION_OPS)}", e.span)
            value = e.name
            return lambda c, f: value
        fn, typ, _ = self.exprs.expr(e)
        want = {"p": "ptr", "i": "int"}.get(kind)
        ok = typ.kind == want if want else typ.kind in (("int", "float", "ptr") if kind == "a" else ("int", "float"))
        if not ok:
            expected = {"p": "a pointer", "i": "an int", "x": "a number", "a": "a pointer or a number"}[kind]
            raise MluError(f"{name}: argument {index + 1} must be {expected}, got {typ}", e.span)
        return fn


def _scalar_cond(typ: Type, span: Span) -> None:
    if typ.kind == "ptr":
        raise MluError("condition must be a number, not a pointer", span)
