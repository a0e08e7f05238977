"""Run the CUDA that codegen emits on the host CPU: the exact source, compiled as C++20 by g++ against
`gir_cuda_emu.h` (fibers for threads, see docs/cuda-emulation.md), launched through ctypes.

    if available():
        res = run_func(func, {"x": x}, sizes=None)
        res.outputs["y"]      # numpy arrays of the declared dtypes
        res.unwritten["y"]    # elements the kernels never wrote (still holding the poison pattern)

Every output and global temporary starts as a poison NaN (bit pattern POISON) and sits between guard bytes;
a write outside a tensor raises GirError. Compiled libraries are cached by source hash in a temp directory.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gir import ir
from gir.errors import GirError

HERE = Path(__file__).parent
HEADER = HERE / "gir_cuda_emu.h"
STUBS = HERE / "include"
FLAGS = ("-std=c++20", "-O1", "-fno-strict-aliasing", "-fno-ipa-reference", "-fvisibility=hidden", "-U_FORTIFY_SOURCE",
         "-shared", "-fPIC", "-w")
ALIGN, GUARD = 256, 256          # cudaMalloc alignment; guard bytes on each side of a tensor
GUARD_BYTE = 0xA5
# Poison bit patterns (a NaN no arithmetic produces) per dtype; ints get an unlikely value.
POISON = {"f32": 0x7FA0DEAD, "f64": 0x7FF4DEAD7FF4DEAD, "f16": 0x7DEA, "bf16": 0x7FAD, "i32": 0x7EADBEEF, "i64": 0x7EADBEEF7EADBEEF,
          "bool": 0xA5}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_LOCK = threading.Lock()
_LIBS: dict[str, ctypes.CDLL] = {}


def _compiler() -> str | None:
    return os.environ.get("GIR_EMU_CXX") or shutil.which("g++")


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """True if a g++ that takes -std=c++20 and has _Float16 is installed."""
    cxx = _compiler()
    if not cxx:
        return False
    probe = "#include <ucontext.h>\n_Float16 h = (_Float16)1.5f; int main() { return (int)h != 1; }\n"
    try:
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([cxx, "-std=c++20", "-x", "c++", "-", "-o", os.path.join(d, "a.out")],
                               input=probe, capture_output=True, text=True, timeout=60)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def cache_dir() -> Path:
    d = Path(os.environ.get("GIR_EMU_CACHE") or Path(tempfile.gettempdir()) / f"gir_cuda_emu_{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def launcher_source(source: str, kernel_names: list[str]) -> str:
    """The emitted source followed by one exported launcher per kernel (the source itself is unchanged)."""
    return source + "\n" + "".join(f"GIR_EMU_LAUNCHER({n})\n" for n in kernel_names)


def compile_source(source: str, kernel_names: list[str]) -> ctypes.CDLL:
    """Compile (or fetch from the cache) the emitted source plus launchers; returns the loaded library."""
    text = launcher_source(source, kernel_names)
    key = hashlib.sha256((HEADER.read_text() + "\0" + " ".join(FLAGS) + "\0" + text).encode()).hexdigest()[:24]
    if key in _LIBS:
        return _LIBS[key]
    so = cache_dir() / f"{key}.so"
    if not so.exists():
        cxx = _compiler()
        if not cxx:
            raise GirError("cuda emulation needs g++ (not found)")
        src = cache_dir() / f"{key}.{os.getpid()}.cu"   # (test workers may compile the same source at once)
        src.write_text(text)
        tmp = so.with_suffix(f".{os.getpid()}.tmp")
        cmd = [cxx, *FLAGS, "-I", str(STUBS), "-I", str(HERE), "-include", str(HEADER), "-x", "c++", str(src),
               "-o", str(tmp), "-lpthread"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise GirError(f"g++ failed on the emitted CUDA ({src}):\n{r.stderr[-4000:]}")
        os.replace(tmp, so)
        os.replace(src, so.with_suffix(".cu"))   # kept for debugging (docs/cuda-emulation.md)
    lib = ctypes.CDLL(str(so))
    _LIBS[key] = lib
    return lib


class DeviceBuffer:
    """A 256-byte aligned host array between guard bytes, standing in for cudaMalloc memory."""

    def __init__(self, shape: tuple[int, ...], dtype: ir.DType, init: np.ndarray | None = None):
        self.dtype = dtype
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.nbytes
        self.raw = np.empty(nbytes + 2 * GUARD + ALIGN, dtype=np.uint8)
        start = (-self.raw.ctypes.data) % ALIGN + GUARD
        self.raw[:] = GUARD_BYTE
        self.bytes = self.raw[start:start + nbytes]
        self.guard = (self.raw[start - GUARD:start], self.raw[start + nbytes:start + nbytes + GUARD])
        self.array = self.bytes.view(dtype.numpy).reshape(shape)
        if init is not None:
            self.array[...] = init
        else:
            self.bits()[...] = POISON[dtype.value]

    def bits(self) -> np.ndarray:
        return self.bytes.view(_UINT[self.dtype.nbytes])

    def pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.bytes.ctypes.data)

    def guards_intact(self) -> bool:
        return all(bool((g == GUARD_BYTE).all()) for g in self.guard)

    def unwritten(self) -> int:
        return int((self.bits() == _UINT[self.dtype.nbytes](POISON[self.dtype.value])).sum())


def launch(lib: ctypes.CDLL, name: str, grid: tuple[int, ...], block: tuple[int, ...],
           args: list, order: int = 0) -> None:
    """Run kernel `name` of a library from compile_source. args: DeviceBuffer (a pointer), np.int32 or np.int64
    (a size) in kernel parameter order. Raises GirError with the emulator's reason on a failed launch."""
    values, keep = [], []
    for a in args:
        if isinstance(a, DeviceBuffer):
            v = a.pointer()
        elif isinstance(a, (np.int64, np.int32)):
            v = (ctypes.c_int64 if isinstance(a, np.int64) else ctypes.c_int32)(int(a))
        else:
            raise TypeError(f"kernel argument {a!r}: pass a DeviceBuffer, np.int32 or np.int64")
        keep.append(v)
        values.append(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p))
    argv = (ctypes.c_void_p * max(1, len(values)))(*values)
    grid3 = (ctypes.c_longlong * 3)(*(tuple(grid) + (1, 1, 1))[:3])
    block3 = (ctypes.c_int * 3)(*(tuple(block) + (1, 1, 1))[:3])
    err = ctypes.create_string_buffer(1024)
    fn = getattr(lib, f"gir_launch_{name}")
    fn.restype = ctypes.c_int
    with _LOCK:
        rc = fn(argv, grid3, block3, ctypes.c_int(order), err, ctypes.c_int(len(err)))
    if rc != 0:
        raise GirError(f"emulated kernel '{name}' (grid {tuple(grid)}, block {tuple(block)}) failed: "
                       f"{err.value.decode(errors='replace')}")


@dataclass
class EmuResult:
    outputs: dict[str, np.ndarray]
    unwritten: dict[str, int]                 # per output: elements still holding the poison pattern
    sources: dict[str, str] = field(default_factory=dict)
    launches: list[tuple[str, tuple, tuple]] = field(default_factory=list)  # (kernel, grid, block)


def run_func(func: ir.Func, inputs: dict[str, np.ndarray], sizes: dict[str, int] | None = None,
             options: dict | None = None, order: int = 0, max_threads: int = 1 << 22) -> EmuResult:
    """Emit CUDA for the explicit `func`, compile it with g++ and run every kernel in order on the CPU.

    order: thread scheduling between barriers: 0 thread order, 1 reverse, >= 2 random (seed) — running a
    kernel under several orders exposes missing barriers. max_threads bounds grid x block (the emulator
    runs about a million thread-barrier steps per second)."""
    from gir.codegen import combined_source, emit_func
    from gir.codegen.launch import eval_size_expr
    from gir.evaluate import bind_sizes, shape_of
    from gir.views import enter, to_outer

    inputs, sizes = enter(func, inputs, sizes)   # reshape views: declared-shape arrays seen in the view's shape
    sizes = bind_sizes(func, inputs, sizes)
    kernels = emit_func(func, "cuda", sizes, options)
    lib = compile_source(combined_source(kernels), [ks.name for ks in kernels])
    bufs = {p.name: DeviceBuffer(shape_of(p.type, sizes), p.type.dtype, np.asarray(inputs[p.name]))
            for p in func.params}
    for p in func.results:
        bufs[p.name] = DeviceBuffer(shape_of(p.type, sizes), p.type.dtype)
    for item in func.body:
        if isinstance(item, ir.Alloc):
            bufs[item.name] = DeviceBuffer(shape_of(item.type, sizes), item.type.dtype)
    originals = {p.name: bufs[p.name].bytes.copy() for p in func.params}
    launches = []
    for ks in kernels:
        meta = ks.meta
        grid = tuple(eval_size_expr(g, sizes) for g in meta["grid"])
        block = tuple(meta["block"])
        if min(grid) <= 0:
            launches.append((ks.name, grid, block))
            continue  # an empty grid launches nothing
        if int(np.prod(grid)) * int(np.prod(block)) > max_threads:
            raise GirError(f"kernel '{ks.name}': grid {grid} x block {block} exceeds max_threads={max_threads}")
        args = [bufs[a["name"]] if a["kind"] == "tensor" else
                (np.int64 if a["dtype"] == "i64" else np.int32)(sizes[a["name"]]) for a in meta["args"]]
        launch(lib, ks.name, grid, block, args, order)
        for name, b in bufs.items():
            if not b.guards_intact():
                raise GirError(f"emulated kernel '{ks.name}' wrote outside tensor '{name}'")
        launches.append((ks.name, grid, block))
    for name, raw in originals.items():
        if not np.array_equal(raw, bufs[name].bytes):
            raise GirError(f"emulated kernels of '{func.name}' modified input '{name}'")
    outputs = {p.name: bufs[p.name].array.copy() for p in func.results}
    unwritten = {p.name: bufs[p.name].unwritten() for p in func.results}
    return EmuResult(to_outer(func, outputs, sizes), unwritten, {ks.name: ks.source for ks in kernels}, launches)


__all__ = ["available", "run_func", "EmuResult", "compile_source", "launcher_source", "DeviceBuffer", "POISON", "launch"]
