"""Compile emitted CUDA with NVRTC, the run-time compiler `gir run --target cuda` uses through cupy, without a GPU:
libnvrtc through ctypes (the `nvidia-cuda-nvrtc` wheel of the test extra, or a CUDA toolkit's). NVRTC differs
from nvcc: no host headers, no math.h macros (INFINITY), no cuda_fp16.h unless included, no GCC builtins
(__builtin_huge_valf) -- kernels that nvcc accepts can fail here, and did on a real GPU."""
from __future__ import annotations

import ctypes
import glob
import os
import sysconfig

OPTIONS = ("-std=c++17", "--gpu-architecture=compute_90")   # as cupy.RawModule compiles for an H100/H200


def _library():
    candidates = []
    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        candidates += sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "lib", "libnvrtc.so*")))
        candidates += sorted(glob.glob(os.path.join(base, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*")))
    candidates += sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"))
    for path in candidates + ["libnvrtc.so"]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _headers() -> str | None:
    """A folder holding cuda_fp16.h / cuda_bf16.h (cupy passes its own copy to NVRTC the same way)."""
    found = sorted(glob.glob("/usr/local/cuda*/include/cuda_fp16.h"))
    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        found += sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "include", "cuda_fp16.h")))
    return os.path.dirname(found[0]) if found else None


_LIB = _library()
_HEADERS = _headers()


def available() -> bool:
    return _LIB is not None and _HEADERS is not None


def compile_errors(source: str, name: str = "kernel.cu") -> str:
    """NVRTC's log when `source` does not compile ('' when it does)."""
    lib = _LIB
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    if rc != 0:
        return f"nvrtcCreateProgram failed ({rc})"
    try:
        options = OPTIONS + (f"--include-path={_HEADERS}",)
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace")
        return "" if rc == 0 else "\n".join(l for l in text.splitlines() if "error" in l) or text
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
