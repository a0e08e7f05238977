"""Code generation: explicit GIR kernels → CUDA / HIP source plus launch metadata.

    from gir.codegen import emit_module
    for ks in emit_module(module, "cuda"):
        ks.name, ks.source, ks.meta          # meta is JSON-serialisable (ks.to_json())

The MLU backend lives in `codegen/mlu/` and is not reached from here.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from gir import ir
from gir.errors import GirError, UsageError

TARGETS = ("cuda", "hip")
INT32_MAX = 2**31 - 1


@dataclass
class KernelSource:
    """One kernel: its complete translation unit (`source`), the kernel body alone (`body`) and its
    launch metadata (`meta`: grid size expressions, block dims, shared bytes, argument order)."""
    name: str
    target: str
    source: str
    meta: dict = field(default_factory=dict)
    body: str = ""
    prelude: str = ""
    chain: bool = False   # the prelude holds the look-back helpers of `chain` (cstyle.CHAIN_HELPERS)

    def to_json(self) -> str:
        return json.dumps(self.meta, indent=2) + "\n"

    @property
    def extension(self) -> str:
        return printer_for(self.target).extension


def printer_for(target: str):
    if target == "cuda":
        from gir.codegen.cuda import CudaPrinter
        return CudaPrinter()
    if target == "hip":
        from gir.codegen.hip import HipPrinter
        return HipPrinter()
    raise UsageError(f"unknown target '{target}' (known: {', '.join(TARGETS)})")


def choose_index_type(func: ir.Func, sizes: dict[str, int], option: str | None = None) -> str:
    """int32 unless asked for int64, or some tensor has more than 2^31-1 elements at the given sizes."""
    if option == "int64":
        return option
    if option not in (None, "auto", "int32"):
        raise GirError(f"index_type must be int32, int64 or auto, not '{option}'")
    tensors = [(p.name, p.type) for p in func.params + func.results] + \
              [(a.name, a.type) for a in func.body if isinstance(a, ir.Alloc)]
    for name, t in tensors:
        dims = [d if isinstance(d, int) else sizes.get(d) for d in t.shape]
        if None not in dims and math.prod(dims) > INT32_MAX:
            if option == "int32":
                raise GirError(f"index type int32 cannot address '{name}' ({math.prod(dims)} elements at these "
                               "sizes, more than 2^31-1): use --index-type int64 or auto", func.loc)
            return "int64"
    return "int32"


def emit_func(func: ir.Func, target: str = "cuda", sizes: dict[str, int] | None = None,
              options: dict | None = None) -> list[KernelSource]:
    from gir.codegen.lower import KernelLowerer, describe_grid

    if not func.is_explicit:
        raise GirError(f"func '{func.name}' is at the operator layer; lower it first "
                       "(gir compile does this through passes.schedule)", func.loc)
    for item in func.body:
        if isinstance(item, ir.Assign):
            raise GirError("operator-layer statements cannot be mixed with kernels for code generation",
                           item.loc)
    sizes = dict(sizes or {})
    options = dict(options or {})
    printer = printer_for(target)
    index_type = choose_index_type(func, sizes, options.get("index_type"))
    roles = {p.name: "input" for p in func.params}
    roles.update({p.name: "output" for p in func.results})
    types = {p.name: p.type for p in func.params + func.results}
    for item in func.body:
        if isinstance(item, ir.Alloc):
            roles[item.name], types[item.name] = "temp", item.type
    from gir.printer import format_expr
    from gir.views import derived_sizes, outer_type
    derived = {n: format_expr(e) for n, e in derived_sizes(func).items()}
    views = {p.name: list(outer_type(p).shape) for p in func.params + func.results if p.view is not None}
    out = []
    for kernel in func.kernels:
        kernel_index = index_type
        if dict(kernel.attrs).get("index") == "int64" and options.get("index_type") != "int32":
            kernel_index = "int64"  # `kernel NAME with index=int64`
        lw = KernelLowerer(func, kernel, printer, kernel_index, sizes)
        kfunc = lw.lower()
        prelude = printer.prelude(printer.declared_dtypes(kfunc), chain=lw.uses_chain)
        body = printer.kernel(kfunc)
        names = {_cname(n): n for n in types} | {_cname(n): n for n in func.size_symbols()}
        args = []
        for p in kfunc.params:
            name = names[p.name]
            if p.kind == "tensor":
                t = types[name]
                arg = {"name": name, "kind": "tensor", "dtype": t.dtype.value, "shape": list(t.shape),
                       "role": roles[name], "const": p.const}
                if name in views:   # a reshape view: the caller's array has the declared shape (same bytes)
                    arg["declared_shape"] = views[name]
                args.append(arg)
            else:
                args.append({"name": name, "kind": "size", "dtype": "i64" if kernel_index == "int64" else "i32"})
                if name in derived:   # a view's compound dimension, computed from the caller's sizes
                    args[-1]["value"] = derived[name]
        shared = sum(-(-d.size * ir.DType(d.ctype).nbytes // 16) * 16 for d in kfunc.shared)
        meta = {"name": kernel.name, "func": func.name, "target": target, "grid": describe_grid(lw.plan),
                "block": list(lw.block), "shared_bytes": {"static": shared, "dynamic": 0},
                "index_type": kernel_index, "args": args}
        out.append(KernelSource(kernel.name, target, prelude + "\n" + body, meta, body, prelude, lw.uses_chain))
    return out


def emit_module(module: ir.Module, target: str = "cuda", sizes: dict[str, int] | None = None,
                options: dict | None = None) -> list[KernelSource]:
    """Every kernel of every (explicit) func of `module`, in order."""
    return [ks for f in module.funcs for ks in emit_func(f, target, sizes, options)]


def combined_source(kernels: list[KernelSource]) -> str:
    """All kernels in one translation unit (headers and helpers once)."""
    if not kernels:
        return ""
    includes: list[str] = []
    for ks in kernels:
        for line in ks.prelude.splitlines():
            if line.startswith("#include") and line not in includes:
                includes.append(line)
    from gir.codegen.cstyle import CHAIN_HELPERS, HELPERS
    helpers = HELPERS + (CHAIN_HELPERS if any(ks.chain for ks in kernels) else "")
    return "\n".join(includes) + "\n\n" + helpers + "\n" + "\n".join(ks.body for ks in kernels)


def _cname(name: str) -> str:
    from gir.codegen.exprs import cname
    return cname(name)


__all__ = ["KernelSource", "emit_module", "emit_func", "combined_source", "choose_index_type", "TARGETS"]
