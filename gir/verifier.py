"""The verifier: every rule of both layers, reported as located diagnostics.

`verify_module` raises one GirError carrying every diagnostic found.
"""
from __future__ import annotations

from gir import ir
from gir.errors import DiagnosticCollector
from gir.shapes import analyze_func
from gir.verify_kernel import Buffer, KernelVerifier
from gir.views import check_func as check_views


def verify_func(func: ir.Func, diag: DiagnosticCollector) -> None:
    info = analyze_func(func, diag)
    check_views(func, diag)
    sizes = set(func.size_symbols())
    buffers = {p.name: Buffer(p.name, p.type, ir.Level.global_) for p in func.params + func.results}
    kernel_names: set[str] = set()
    for item in func.body:
        if isinstance(item, ir.Alloc):
            if not item.level.off_chip:
                diag.error(f"function-level buffers live in @global or @gdram, not @{item.level.value}", item.loc,
                           "allocate on-chip buffers inside a kernel's parallel scope")
            for d in item.type.shape:
                if isinstance(d, str) and d not in sizes:
                    diag.error(f"size '{d}' of '{item.name}' is not the size of any input", item.type.loc or item.loc)
            buffers[item.name] = Buffer(item.name, item.type, item.level)
        elif isinstance(item, ir.Assign) and item.target.name in info.types and item.target.name not in buffers:
            # an operator-layer intermediate is a global tensor that later kernels may read
            name = item.target.name
            buffers[name] = Buffer(name, info.types[name], ir.Level.global_)
        elif isinstance(item, ir.Kernel):
            if item.name in kernel_names:
                diag.error(f"duplicate kernel name '{item.name}'", item.loc)
            kernel_names.add(item.name)
            KernelVerifier(func, buffers, diag).kernel(item)


def verify_module(module: ir.Module) -> None:
    diag = DiagnosticCollector()
    names: dict[str, ir.Func] = {}
    for f in module.funcs:
        if f.name in names:
            diag.error(f"duplicate function '{f.name}'", f.loc, f"first defined at {names[f.name].loc}")
        names[f.name] = f
        verify_func(f, diag)
    if not module.funcs:
        diag.error("the file defines no function", module.loc)
    diag.raise_if_any()
