"""Accuracy of GIR's element-wise math builtins on every runnable target, against float64 numpy.

    python3 samples/python/math_accuracy.py [--targets sim,cuda_emu,mlu-sim] [--funcs sin,cos,...] [--worst]

Each builtin runs as the one-statement program `y[i, j] = FN(x[i, j])` (clamp: `clamp(x[i, j], -1.5, 2.0)`) on
f32 inputs: a seeded grid of ~3,600 values (a fine linear sweep of [-10, 10], +-1e-30 .. +-1e30 in 241
logarithmic steps, the ties k + 0.5 for round, the softplus switch at 20, +-0, +-inf, NaN, and 1,000 standard
normals x 3). The reference is `gir.evaluate.UNARY_FLOAT[FN]` (the builtin's definition in numpy) evaluated in
float64 on the same f32 inputs. Columns per target: the largest error in f32 ulps of the exact result (an ulp is
2^(e-23) for a result in [2^e, 2^(e+1))) and the largest relative error, both where the exact result is a normal
f32 (|r| >= 2^-126; below it every target may flush to 0, an absolute error under 1.2e-38, printed with
--worst), and whether every special value (NaN, +-inf, an exact result beyond f32's range) came out as the
reference's. The targets: sim (the SIMT simulator, which computes with numpy in f32), cuda_emu (the emitted
CUDA compiled by g++ and run on the host: glibc's sinf, expf, erfcf, ...; an NVIDIA GPU's libdevice differs,
see docs/gir.md) and mlu-sim (the simulated MLU's vector ops). docs/gir.md, "Math builtins", holds the table
this prints.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gir.evaluate import UNARY_FLOAT  # noqa: E402

FUNCS = ("sin", "cos", "log1p", "expm1", "softplus", "silu", "gelu", "gelu_tanh", "floor", "ceil", "round", "clamp")
TARGETS = ("sim", "cuda_emu", "mlu-sim")
COLS = 64
CLAMP = (-1.5, 2.0)


def grid(seed: int = 0) -> np.ndarray:
    """The inputs, as an [M, 64] f32 array (padded with normals)."""
    rng = np.random.default_rng(seed)
    mags = np.logspace(-30, 30, 241)
    parts = [np.linspace(-10, 10, 2001), mags, -mags, np.arange(-8.5, 9.0, 1.0), [19.999998, 20.0, 20.000002, -20.0],
             [0.0, -0.0, np.inf, -np.inf, np.nan], rng.standard_normal(1000) * 3]
    x = np.concatenate([np.asarray(p, np.float64) for p in parts])
    pad = -len(x) % COLS
    x = np.concatenate([x, rng.standard_normal(pad) * 3]).astype(np.float32)
    return x.reshape(-1, COLS)


def program(fn: str) -> str:
    call = f"clamp(x[i, j], {CLAMP[0]}, {CLAMP[1]})" if fn == "clamp" else f"{fn}(x[i, j])"
    return f"func f(x: f32[M, N]) -> (y: f32[M, N]) {{\n  y[i, j] = {call}\n}}\n"


def reference(fn: str, x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if fn == "clamp":
            return np.minimum(np.maximum(x, CLAMP[0]), CLAMP[1])
        return UNARY_FLOAT[fn](x)


def run(target: str, fn: str, x: np.ndarray) -> np.ndarray:
    import gir
    sizes = {"M": x.shape[0], "N": x.shape[1]}
    if target == "cuda_emu":
        from gir.passes.schedule import lower_module
        from gir.targets.cuda_emu import run_func
        module = gir.parse_text(program(fn))
        explicit = lower_module(module, "cuda", {"sizes": sizes}).funcs[0]
        return run_func(explicit, {"x": x.copy()}, sizes).outputs["y"]
    kernel = gir.compile(program(fn), target=target, sizes=sizes, cache=False)
    return np.asarray(kernel(x=x.copy()))


def errors(got: np.ndarray, ref: np.ndarray) -> dict:
    """max ulp, max relative error (normal results), special values all agreeing, and the worst input index."""
    got, ref = got.astype(np.float64).ravel(), ref.ravel()
    with np.errstate(all="ignore"):
        ref32 = ref.astype(np.float32).astype(np.float64)
    special = ~np.isfinite(ref32)
    same_special = bool(np.all((np.isnan(got) & np.isnan(ref32))[special] | (got == ref32)[special]))
    finite = ~special
    same_special &= bool(np.all(np.isfinite(got[finite])))
    normal = finite & np.isfinite(got) & (np.abs(ref) >= 2.0 ** -126)
    _, e = np.frexp(np.where(normal, np.abs(ref), 1.0))
    err = np.where(normal, np.abs(np.where(normal, got, 0.0) - np.where(normal, ref, 0.0)), 0.0)
    ulps = err / np.ldexp(1.0, e - 24)
    rel = err / np.where(normal, np.abs(ref), 1.0)
    tiny = finite & np.isfinite(got) & ~normal
    return {"ulp": float(ulps.max()), "rel": float(rel.max()), "special": same_special, "worst": int(ulps.argmax()),
            "tiny": float(np.abs(got - ref)[tiny].max(initial=0.0))}


def measure(targets=TARGETS, funcs=FUNCS) -> dict:
    x = grid()
    out = {}
    for fn in funcs:
        ref = reference(fn, x)
        for t in targets:
            out[fn, t] = errors(run(t, fn, x), ref)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--funcs", default=",".join(FUNCS))
    p.add_argument("--worst", action="store_true", help="also print the input of the largest ulp error")
    args = p.parse_args(argv)
    targets, funcs = args.targets.split(","), args.funcs.split(",")
    res = measure(targets, funcs)
    x = grid().ravel()
    print("| builtin | " + " | ".join(f"{t}: max ulp (max rel.)" for t in targets) + " | special values |")
    print("|---|" + "---|" * len(targets) + "---|")
    for fn in funcs:
        cells = []
        for t in targets:
            r = res[fn, t]
            cell = f"{r['ulp']:.3g} ({r['rel']:.1e})"
            cells.append(cell + (f" at x={x[r['worst']]:.7g}; tiny {r['tiny']:.1e}" if args.worst else ""))
        specials = "agree" if all(res[fn, t]["special"] for t in targets) else \
            "differ: " + ", ".join(t for t in targets if not res[fn, t]["special"])
        print(f"| `{fn}` | " + " | ".join(cells) + f" | {specials} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
