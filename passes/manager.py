"""PassManager: runs a pipeline over a module, calls the instruments, verifies after every pass.

A pass that breaks the IR is named in the error, with a reproducer note:

    error: pass 'cse' produced invalid IR: use of undefined tensor 't'
      note: reproduce: gir opt softmax.gir --passes 'canonicalize,cse'
"""
from __future__ import annotations

import shlex
import time
import traceback
from typing import Iterable

from gir import ir
from gir.errors import Diagnostic, GirError
from gir.passes.base import ModulePass, PassContext
from gir.passes.instruments import PassInstrument
from gir.passes.pipeline import PassPipeline, parse_pipeline
from gir.passes.registry import Registry


def ir_kind(state) -> str:
    """'gir' for an ir.Module, 'idfg' for a ModuleGraph."""
    return "gir" if isinstance(state, ir.Module) else "idfg"


def as_module(state) -> ir.Module:
    """The GIR text view of a pipeline state (a graph prints as explicit GIR)."""
    return state if isinstance(state, ir.Module) else state.to_module()


def check_kinds(pipeline: PassPipeline, start: str = "gir", filename: str | None = None) -> str:
    """Raise a located GirError when a pass receives the wrong kind of IR; returns the pipeline's output kind."""
    kind = start
    for k, p in enumerate(pipeline.passes):
        if p.consumes != kind:
            hint = ("insert 'naive-lower' before it to build the IDFG" if p.consumes == "idfg"
                    else "it runs on GIR modules: put it before 'naive-lower' or after 'schedule'")
            raise pipeline.error_at(k, f"pass '{p.name}' works on {_KIND_TEXT[p.consumes]}, but the pipeline "
                                       f"holds {_KIND_TEXT[kind]} at this point", [hint])
        kind = p.produces
    return kind


_KIND_TEXT = {"gir": "GIR modules", "idfg": "the IDFG"}


class PassManager:
    """`PassManager(pipeline, instruments, verify_each).run(module, ctx)`; `pipeline` may be text. The pipeline
    state is a GIR module or an IDFG (ModuleGraph); passes declare which they consume and produce."""

    def __init__(self, pipeline: PassPipeline | str | Iterable[ModulePass],
                 instruments: Iterable[PassInstrument] = (), verify_each: bool = True,
                 registry: Registry | None = None):
        if isinstance(pipeline, str):
            pipeline = parse_pipeline(pipeline, registry)
        elif not isinstance(pipeline, PassPipeline):
            pipeline = PassPipeline(tuple(pipeline))
        self.pipeline = pipeline
        self.instruments = list(instruments)
        self.verify_each = verify_each

    def run(self, module, ctx: PassContext | None = None):
        ctx = ctx if ctx is not None else PassContext()
        check_kinds(self.pipeline, ir_kind(module))
        if self.verify_each:
            _verify(module)  # blame the input, not the first pass, for input errors
        for inst in self.instruments:
            inst.enter_pipeline(ctx, self.pipeline, module)
        try:
            for index, pass_ in enumerate(self.pipeline, 1):
                module = self._run_one(ctx, pass_, index, module)
        finally:
            for inst in self.instruments:
                inst.exit_pipeline(ctx, module)
        return module

    def _run_one(self, ctx: PassContext, pass_: ModulePass, index: int, module):
        for inst in self.instruments:
            inst.run_before_pass(ctx, pass_, index, module)
        start = time.perf_counter()
        try:
            result = pass_.apply(ctx, module)
        except GirError as exc:
            raise self._failure(ctx, pass_, index, "failed", exc.diagnostics) from exc
        except Exception as exc:
            where = _raise_site(exc)
            diag = Diagnostic(f"{type(exc).__name__}: {exc}", None, (f"raised at {where}",) if where else ())
            raise self._failure(ctx, pass_, index, "failed with an internal error", [diag]) from exc
        seconds = time.perf_counter() - start
        expected = _KIND_TYPES[pass_.produces]()
        if not isinstance(result, expected):
            diag = Diagnostic(f"apply() returned {type(result).__name__}, not {expected.__module__}."
                              f"{expected.__qualname__}")
            raise self._failure(ctx, pass_, index, "produced invalid IR", [diag])
        for inst in self.instruments:
            inst.run_after_pass(ctx, pass_, index, module, result, seconds)
        if self.verify_each:
            start = time.perf_counter()
            try:
                _verify(result)
            except GirError as exc:
                raise self._failure(ctx, pass_, index, "produced invalid IR", exc.diagnostics) from exc
            seconds = time.perf_counter() - start
            for inst in self.instruments:
                inst.run_after_verify(ctx, pass_, index, seconds)
        return result

    def _failure(self, ctx: PassContext, pass_: ModulePass, index: int, what: str,
                 diagnostics: list[Diagnostic]) -> GirError:
        first, rest = diagnostics[0], diagnostics[1:]
        notes = (*first.notes, f"reproduce: {reproducer(ctx.filename, self.pipeline.prefix(index))}")
        head = Diagnostic(f"pass '{pass_.name}' {what}: {first.message}", first.loc, notes)
        return GirError(diagnostics=[head, *rest])


def reproducer(filename: str | None, pipeline: PassPipeline) -> str:
    """`gir opt FILE --passes '...'`, the command that reruns `pipeline` on `filename`."""
    text = str(pipeline)
    quoted = f"'{text}'" if "'" not in text else shlex.quote(text)
    return f"gir opt {shlex.quote(filename) if filename else 'FILE'} --passes {quoted}"


def _module_type():
    return ir.Module


def _graph_type():
    from gir.passes.middle.graph import ModuleGraph
    return ModuleGraph


_KIND_TYPES = {"gir": _module_type, "idfg": _graph_type}


def _verify(state) -> None:
    if isinstance(state, ir.Module):
        from gir.verifier import verify_module
        verify_module(state)
    else:
        from gir.passes.middle.verify import verify_graph
        verify_graph(state)


def _raise_site(exc: BaseException) -> str | None:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"
