"""The Python API: `gir.compile(source_or_path, target=..., sizes=...)` returns a callable `Kernel`.

    import numpy as np, gir
    softmax = gir.compile("samples/softmax.gir", target="sim")
    y = softmax(np.random.default_rng(0).standard_normal((64, 100), dtype=np.float32))

A call binds the function's symbolic sizes from its arguments' shapes (and the `sizes` given to compile),
checks every argument's shape and dtype against its declared type (a GirError names the argument), compiles
the program for that binding (once per binding: memoised in the Kernel and cached on disk by gir.cache) and
runs it on the target: numpy arrays on `sim` and `mlu-sim`; on `cuda`, any DLPack tensor (torch, cupy, jax)
viewed in place, results allocated on the same device or written into `out=`. docs/api.md is the manual.

The compilation is the pipeline of `gir run`/`gir compile`: the default pass pipeline of passes.middle for
every target (sim, cuda, mlu-sim: `gir passes --default --target T`), then codegen.emit_module for cuda.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gir import ir
from gir.errors import GirError
from gir.views import outer_type, user_sizes
from gir.runtimes import _DeviceRuntime, _HostRuntime, _cuda_device, _type_name

RUNNABLE = ("sim", "cuda", "mlu-sim")


class MissedOptimization(UserWarning):
    """A missed-optimisation remark of the compiler (a group left unfused or scalar, traffic above the floor),
    issued as a Python warning when a program is compiled (or loaded from the cache)."""


@dataclass
class Program:
    """One compiled program: the function at one size binding."""
    sizes: dict[str, int]
    explicit: ir.Func                       # the kernels (explicit GIR) the target runs
    kernels: list = field(default_factory=list)   # cuda: codegen.KernelSource per kernel, in launch order
    remarks: list[dict] = field(default_factory=list)  # {"kind": passed|missed|analysis, "text": formatted}
    from_cache: bool = False                # loaded from the on-disk cache rather than compiled
    key: str | None = None                  # its cache key (None with cache=False)
    empty: object = None                    # a binding with zero-size dimensions: (gir.empty.Empty, the Kernel of
    #                                         what remains or None); `explicit` is then None


def compile(source_or_path, target: str = "sim", sizes: dict[str, int] | None = None, func: str | None = None, *,
            cache: bool = True, machine: str | None = None, check: bool = True, index_type: str = "auto",
            check_races: bool = False) -> "Kernel":
    """Compile a GIR program into a callable Kernel.

    source_or_path: GIR text (a str holding "func " or a newline) or the path of a .gir file (str or Path).
    target: "sim" (SIMT simulator), "mlu-sim" (alias "mlu"), "cuda" (an NVIDIA GPU through cupy).
    sizes: bindings of symbolic sizes ({"M": 4096}); the others are bound from each call's argument shapes.
        When every size is bound here the program is compiled now, otherwise at the first call.
    func: the function to compile (default: the first of the file).
    cache: use the on-disk compile cache (gir.cache; `$GIR_CACHE_DIR`, cleared by `gir cache clear`).
    machine: the GPU machine description to compile for (h200, h100, a100; default the target's).
    check: prove every scheduled kernel safe (bounds, races, barriers, ...) while compiling, as gir compile does.
    index_type: the C index type of emitted CUDA (auto, int32, int64).
    check_races: on sim, also detect races dynamically while running (slower).
    """
    from gir.targets.registry import canonical

    name = canonical(str(target))
    if name not in RUNNABLE:
        hint = "; `gir compile --target hip` emits HIP source" if name == "hip" else ""
        raise GirError(f"gir.compile: unknown or non-runnable target '{target}' (targets: {', '.join(RUNNABLE)}; "
                       f"'mlu' is an alias of 'mlu-sim'){hint}")
    if machine is not None and name == "mlu-sim":
        raise GirError("gir.compile: machine= selects a GPU description; mlu-sim always simulates the MLU370")
    if index_type not in ("auto", "int32", "int64"):
        raise GirError(f"gir.compile: index_type must be auto, int32 or int64, not {index_type!r}")
    text, filename = _read(source_or_path)
    module = _load(text, filename)
    try:
        f = module.func(func)
    except KeyError:
        raise GirError(f"gir.compile: no function '{func}' in {filename} (functions: "
                       f"{', '.join(g.name for g in module.funcs)})") from None
    fixed = _check_sizes(sizes, f, filename)
    options = {"machine": machine or "", "check": bool(check)}
    if name == "cuda":
        options["index_type"] = index_type
    kernel = Kernel(text, filename, f, name, fixed, options, cache, check_races)
    if all(s in fixed for s in kernel.size_names):
        kernel.compile_for(fixed)
    return kernel


class Kernel:
    """A compiled GIR function: call it with arrays (positionally or by parameter name).

    Returns the result array, or a tuple of them in declaration order when the function has several results.
    `out=` (an array, or a tuple with one per result) receives the results instead, and is returned."""

    def __init__(self, source: str, filename: str, func: ir.Func, target: str, sizes: dict[str, int],
                 options: dict, cache: bool, check_races: bool):
        self.source = source
        self.filename = filename
        self.func = func
        self.target = target
        self.sizes = dict(sizes)
        self.options = dict(options)
        self.cache = cache
        self.check_races = check_races
        self.programs: dict[tuple, Program] = {}   # by sorted size binding
        self._device = None

    @property
    def name(self) -> str:
        return self.func.name

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.func.params)

    @property
    def results(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.func.results)

    @property
    def size_names(self) -> tuple[str, ...]:
        """The sizes a binding gives (a reshape view's derived sizes, gir/views.py, are computed from them)."""
        from gir.views import user_sizes

        return user_sizes(self.func)

    def __repr__(self) -> str:
        sig = lambda ps: ", ".join(f"{p.name}: {_type_text(p.type)}" for p in ps)  # noqa: E731
        return f"<gir.Kernel {self.name}({sig(self.func.params)}) -> ({sig(self.func.results)}) on {self.target}>"

    # -- compiling ---------------------------------------------------------------------------------------------

    def compile_for(self, sizes: dict[str, int]) -> Program:
        """The program for a complete size binding (compiled, or loaded from the cache, once per binding)."""
        from gir.views import complete_sizes, derived_sizes

        derived = derived_sizes(self.func)  # a reshape view's sizes, computed (and checked) from the others
        given = {k: v for k, v in sizes.items() if k not in derived}
        sizes = {**self.sizes, **_check_sizes(given, self.func, self.filename)}
        missing = [s for s in self.size_names if s not in sizes]
        if missing:
            raise GirError(f"'{self.name}': size {', '.join(repr(s) for s in missing)} is bound by no argument's "
                           f"shape; give it to gir.compile, e.g. sizes={{{missing[0]!r}: 1024}}", self.func.loc)
        complete_sizes(self.func, sizes)
        binding = tuple(sorted((s, sizes[s]) for s in self.size_names + tuple(derived)))
        program = self.programs.get(binding)
        if program is None and _has_empty(self.func, dict(binding)):
            program = self.programs[binding] = self._empty_program(dict(binding))
        if program is None:
            program = self.programs[binding] = _program(self, dict(binding))
            for r in program.remarks:
                if r["kind"] == "missed":
                    warnings.warn(r["text"], MissedOptimization, stacklevel=3)
        return program

    # -- calling -----------------------------------------------------------------------------------------------

    def __call__(self, *args, out=None, **kwargs):
        if "out" in self.params:  # a parameter named `out` is that parameter, not the results' destination
            if out is not None:
                kwargs["out"] = out
            out = None
        values = self._arguments(args, kwargs)
        runtime = self._runtime()
        arrays = {name: runtime.convert(f"argument '{name}'", v) for name, v in values.items()}
        sizes = bind_arguments(self.func, arrays, self.sizes)
        outs = self._outs(out, runtime, sizes)
        program = self.compile_for(sizes)
        from gir.views import outer_shape, to_view

        arrays = to_view(self.func, arrays, sizes)  # reshape views: the same bytes, seen in the body's shape
        if program.empty is not None:
            results = self._run_empty(program, runtime, values, arrays, outs, sizes)
        else:
            results = runtime.run(self, program, values, arrays, outs, sizes)
        if outs is None:
            results = [r if p.view is None else r.reshape(outer_shape(p, sizes))
                       for p, r in zip(self.func.results, results)]
        return results[0] if len(results) == 1 else tuple(results)

    def _empty_program(self, sizes: dict[str, int]) -> Program:
        from gir.empty import empty_program
        return empty_program(self, sizes)

    def _run_empty(self, program: Program, runtime, values: dict, arrays: dict, outs, sizes) -> list:
        from gir.empty import run_empty
        return run_empty(self, program, runtime, values, arrays, outs, sizes)

    def _arguments(self, args: tuple, kwargs: dict) -> dict:
        params = self.params
        if len(args) > len(params):
            raise GirError(f"'{self.name}' takes {len(params)} argument{'s' * (len(params) != 1)} "
                           f"({', '.join(params)}), got {len(args)}")
        values = dict(zip(params, args))
        for k, v in kwargs.items():
            if k not in params:
                raise GirError(f"unknown argument '{k}': '{self.name}' takes {', '.join(params) or 'none'}")
            if k in values:
                raise GirError(f"argument '{k}' given twice (by position and by name)")
            values[k] = v
        missing = [p for p in params if p not in values]
        if missing:
            raise GirError(f"missing argument{'s' * (len(missing) > 1)} {', '.join(repr(m) for m in missing)} of "
                           f"'{self.name}'")
        return {p: values[p] for p in params}

    def _outs(self, out, runtime, sizes) -> list | None:
        if out is None:
            return None
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(self.func.results):
            raise GirError(f"out= needs {len(self.func.results)} array(s), one per result "
                           f"({', '.join(self.results)}), got {len(outs)}")
        checked = []
        for p, o in zip(self.func.results, outs):
            what = f"out '{p.name}'"
            arr = runtime.convert(what, o)
            check_array(what, outer_type(p), arr, sizes)
            checked.append((o, arr))
        return checked

    def _runtime(self):
        if self.target == "cuda":
            if self._device is None:
                self._device = _cuda_device()
            return _DeviceRuntime(self._device)
        return _HostRuntime(self.target)


# -- arguments -------------------------------------------------------------------------------------------------

def bind_arguments(func: ir.Func, arrays: dict, fixed: dict[str, int]) -> dict[str, int]:
    """Bind the symbolic sizes from the arguments' shapes (in parameter order; `fixed` first), then check every
    argument's shape and dtype against its declared type at that binding. GirError naming the argument."""
    from gir.views import complete_sizes

    sizes = dict(fixed)
    for p in func.params:
        shape = tuple(arrays[p.name].shape)
        declared = outer_type(p)  # a reshape view's argument comes in its declared shape
        if len(shape) == declared.rank:
            for d, n in zip(declared.shape, shape):
                if isinstance(d, str) and d not in sizes and n >= 0:
                    sizes[d] = int(n)
    complete_sizes(func, sizes)
    for p in func.params:
        check_array(f"argument '{p.name}'", outer_type(p), arrays[p.name], sizes)
    return sizes


def check_array(what: str, ttype: ir.TensorType, array, sizes: dict[str, int]) -> None:
    """GirError `argument 'x': expected f32[4, 7], got float64[4, 8]` unless `array` (anything with `shape` and
    a numpy `dtype`) has exactly the declared element type and, at `sizes`, the declared shape."""
    shape = tuple(int(n) for n in array.shape)
    dtype = np.dtype(array.dtype)
    want = tuple(d if isinstance(d, int) else sizes.get(d, d) for d in ttype.shape)
    bits = ttype.dtype == ir.DType.bf16 and dtype == np.int16 and not isinstance(array, np.ndarray)
    if (dtype != ttype.dtype.numpy and not bits) or shape != want:   # bits: a device's bf16 (cupy has none)
        got = f"{dtype.name}[{', '.join(map(str, shape))}]"
        notes = []
        raise GirError(f"{what}: expected {ttype.dtype.value}[{', '.join(map(str, want))}], got {got}",
                       None, notes)


def _has_empty(func: ir.Func, sizes: dict[str, int]) -> bool:
    from gir.empty import has_empty

    return not func.is_explicit and has_empty(func, sizes)


def _type_text(t: ir.TensorType) -> str:
    return f"{t.dtype.value}[{', '.join(map(str, t.shape))}]"


def _read(source_or_path) -> tuple[str, str]:
    if isinstance(source_or_path, str) and ("func " in source_or_path or "\n" in source_or_path):
        return source_or_path, "<string>"
    if isinstance(source_or_path, (str, Path)):
        from gir.source import read_source

        return read_source(source_or_path)
    raise GirError(f"gir.compile: expected GIR text or a path, got a {_type_name(source_or_path)}")


def _load(text: str, filename: str) -> ir.Module:
    from gir.limits import check_tensor_sizes
    from gir.parser import parse_text
    from gir.verifier import verify_module

    module = parse_text(text, filename)
    verify_module(module)
    check_tensor_sizes(module, {})
    return module


def _check_sizes(sizes, func: ir.Func, filename: str) -> dict[str, int]:
    """A copy of `sizes`, each an int from 0 (an empty dimension, gir/empty.py) to 2^62 naming a size `func`
    uses."""
    from gir.limits import MAX_SIZE

    out: dict[str, int] = {}
    known = set(user_sizes(func))
    for k, v in dict(sizes or {}).items():
        if k not in known:
            raise GirError(f"sizes binds '{k}', which '{func.name}' in {filename} does not use (its sizes: "
                           f"{', '.join(sorted(known)) or 'none: every shape is a literal'})")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= MAX_SIZE:
            raise GirError(f"size {k}={v!r} must be an integer from 0 to 2^62")
        out[k] = int(v)
    if out:
        from gir.limits import check_tensor_sizes

        check_tensor_sizes(ir.Module((func,)), out)
    return out


# -- the compilation itself, behind the cache ---------------------------------------------------------------------

def _program(kernel: Kernel, sizes: dict[str, int]) -> Program:
    from gir import cache

    if kernel.target != "cuda":
        from gir.evaluate import check_footprint

        check_footprint(kernel.func, sizes)  # the simulators allocate every tensor on the host
    key = None
    if kernel.cache:
        key = cache.key(kernel.source, kernel.target, kernel.name, sizes, kernel.options, _machine(kernel))
        entry = cache.load(key)
        if entry is not None:
            program = _from_entry(entry, kernel.name, sizes, key)
            if program is not None:
                return program
    program = _compile_program(kernel, sizes)
    program.key = key
    if key is not None:
        cache.store(key, _to_entry(kernel, program))
    return program


def _machine(kernel: Kernel) -> dict:
    """The machine description the target compiles for (part of the cache key)."""
    import dataclasses

    if kernel.target == "mlu-sim":
        from gir.passes.machines import machine_data

        return machine_data("mlu370")
    from gir.passes.machines import machine_for

    return dataclasses.asdict(machine_for(kernel.target, kernel.options["machine"] or None))


def _compile_program(kernel: Kernel, sizes: dict[str, int]) -> Program:
    func, remarks = kernel.func, []
    if func.is_explicit:
        if kernel.options["check"]:
            from gir.passes.analysis.checks import check_module

            family = "mlu" if kernel.target == "mlu-sim" else "cuda"
            for w in check_module(ir.Module((func,)), family, sizes, False,
                                  kernel.options.get("index_type", "auto")):
                remarks.append({"kind": "missed", "text": w.format()})
        explicit = func
    else:   # every target: its default pipeline (`gir passes --default --target T`)
        from gir.passes.manager import as_module
        from gir.passes.middle import run_default

        opts = {"sizes": sizes, "machine": kernel.options["machine"] or "", "check": kernel.options["check"]}
        state, ctx = run_default(ir.Module((func,)), kernel.target, opts)
        explicit = as_module(state).func(func.name)
        remarks = [{"kind": r.kind, "text": r.format()} for r in ctx.remarks]
    kernels = []
    if kernel.target == "cuda":
        from gir.codegen import emit_module

        kernels = emit_module(ir.Module((explicit,)), "cuda", sizes, {"index_type": kernel.options["index_type"]})
    return Program(dict(sizes), explicit, list(kernels), remarks)


def _to_entry(kernel: Kernel, program: Program) -> dict:
    from gir.printer import print_module

    return {"target": kernel.target, "func": kernel.name, "sizes": program.sizes,
            "explicit": print_module(ir.Module((program.explicit,))),
            "kernels": [{"name": k.name, "source": k.source, "meta": k.meta, "body": k.body, "prelude": k.prelude,
                         "chain": k.chain}
                        for k in program.kernels],
            "remarks": program.remarks}


def _from_entry(entry: dict, name: str, sizes: dict[str, int], key: str) -> Program | None:
    """The program of a cache entry; None (a miss) if the entry does not hold one."""
    from gir.codegen import KernelSource
    from gir.parser import parse_text

    try:
        module = parse_text(entry["explicit"], f"<gir cache {key[:12]}>", limits=False)
        explicit = module.func(name)
        kernels = [KernelSource(k["name"], "cuda", k["source"], k["meta"], k.get("body", ""), k.get("prelude", ""),
                                k.get("chain", False))
                   for k in entry["kernels"]]
        remarks = [{"kind": r["kind"], "text": r["text"]} for r in entry["remarks"]]
    except (GirError, KeyError, TypeError, ValueError):
        return None
    if entry.get("func") != name:
        return None
    return Program(dict(sizes), explicit, kernels, remarks, from_cache=True, key=key)


__all__ = ["compile", "Kernel", "Program", "MissedOptimization", "bind_arguments", "check_array"]
