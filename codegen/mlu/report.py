"""Measure every sample on the simulated MLU370: `python -m codegen.mlu.report > docs/results-mlu.md`.

Timing runs use the simulator's timing-only mode (`run_func(..., values=False)`: shapes only, nothing allocated)
at a large size per sample (LARGE / SIZES below). Columns: simulated time of the fused schedule (pipelined), its
ratio to the DMA roofline (compulsory bytes / `gdram_bandwidth`), the op-by-op baseline (one kernel per
statement, through GDRAM), the same fused schedule without software pipelining, GDRAM traffic, and the maximum
relative error against `gir.evaluate` of a value-simulated run at a smaller size (CHECK). Samples that only
have the scalar fallback are listed without timings (the fallback is far from the roofline by construction).
"""
from __future__ import annotations

import glob
import sys

import numpy as np

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from passes.schedule_mlu import schedule_mlu
from targets.mlu import MLU370
from targets.mlu.run import run_func

LARGE = {"M": 4096, "N": 4096, "C": 4096}
SIZES = {"reduce_mid": {"B": 16, "S": 1024, "D": 4096}, "scaled_causal_softmax": {"B": 4, "H": 16, "S": 1024}, "permute0213": {"B": 8, "S": 1024, "H": 16, "D": 64}}
CHECK = {"M": 257, "N": 1000, "C": 1000, "B": 3, "S": 130, "D": 200, "H": 5}
LIMIT = 1.15
REASONS = {   # why a row is above LIMIT (checked against the simulator's pipe_busy; see docs/mlu.md, Known gaps)
    "cross_entropy": "compute-bound: exp (special class) plus the iota broadcast, per-row compare and mask multiply "
                     "per element, with only 4 bytes/elem of traffic",
    "elementwise_chain": "compute-bound: ~10 special-class (8 cycles/unit) vector ops per element (sigmoid, tanh, "
                         "sqrt, pow, log, exp) exceed the per-core DMA share",
    "softmax_f16": "nearly compute-bound: 2 byte/elem of traffic each way, but f16<->f32 conversions plus exp leave "
                   "the compute pipe ~as busy as the IO pipe",
}
FALLBACK = {   # samples without a fused MLU schedule yet, and what is missing
    "group_norm": "reduction over two axes (CG, HW) with per-(g, c) parameters: not yet in the row model",
    "masked_softmax": "bool input: the vector ISA has no uint8 conversion (needs a byte-spreading NRAM copy)",
    "relu_mask": "bool and i32 outputs (no float->uint8 vector conversion)",
    "reverse_rows": "no reversing copy or vector op in the MLU language (would need a permutation matmul)",
}


def _err(out, ref):
    return max(float(np.max(np.abs(out[k].astype(np.float64) - ref[k].astype(np.float64)), initial=0.0) /
                     (np.max(np.abs(ref[k].astype(np.float64))) + 1e-30)) for k in ref)


def _compulsory(f, sizes) -> int:
    total = 0
    for p in f.params + f.results:
        n = 1
        for d in p.type.shape:
            n *= d if isinstance(d, int) else sizes[d]
        total += n * (1 if p.type.dtype.value == "bool" else p.type.dtype.nbytes)
    return total


def _fused_kind(f, sizes) -> str:
    e = schedule_mlu(f, sizes)
    names = [k.name for k in e.kernels]
    if any(n.endswith("_k0") for n in names):
        return "fallback"
    return "fused"


def measure(path: str):
    f = parse_file(path).funcs[0]
    name = f.name
    sizes = {s: SIZES.get(name, LARGE)[s] for s in f.size_symbols()} if all(
        s in SIZES.get(name, LARGE) for s in f.size_symbols()) else None
    if sizes is None or _fused_kind(f, sizes) != "fused":
        return name, sizes, None
    fused = run_func(f, None, sizes, values=False)
    nopipe = run_func(f, None, sizes, pipeline=False, values=False)
    base = run_func(f, None, sizes, mode="opbyop", values=False)
    small = {s: CHECK[s] for s in f.size_symbols()}
    x = random_inputs(f, small, np.random.default_rng(0))
    err = _err(run_func(f, x, small).outputs, evaluate(f, x, small))
    roof = _compulsory(f, sizes) / MLU370.gdram_bandwidth
    return name, sizes, (fused.stats, nopipe.stats, base.stats, roof, err)


def main(argv=None) -> None:
    rows, over = [], []
    for path in sorted(glob.glob("samples/*.gir")):
        name, sizes, m = measure(path)
        if m is None:
            rows.append(f"| {name} | scalar fallback: {FALLBACK.get(name, 'outside the fused schedules')} "
                        f"| | | | | | |")
            continue
        fused, nopipe, base, roof, err = m
        t = fused["seconds"]
        size_text = " ".join(f"{k}={v}" for k, v in sizes.items())
        mark = " **!**" if t / roof > LIMIT else ""
        if mark:
            over.append(name)
        rows.append(f"| {name} | {size_text} | {t * 1e6:.1f} | {t / roof:.3f}{mark} | {base['seconds'] * 1e6:.1f} "
                    f"({base['seconds'] / t:.2f}x) | {nopipe['seconds'] * 1e6:.1f} "
                    f"({nopipe['seconds'] / t:.2f}x) | {fused['gdram_traffic_bytes'] / 1e6:.2f} | {err:.1e} |")
    print("# MLU370 (simulated) results\n")
    print("Produced by `python -m codegen.mlu.report > docs/results-mlu.md` (see codegen/mlu/report.py). Times are "
          "microseconds of the simulator's timing model, measured in timing-only mode (`values=False`) at the sizes "
          "given per row (f32 unless the sample says otherwise). Roofline = compulsory bytes (every input read "
          f"once, every output written once) / {MLU370.gdram_bandwidth / 1e9:.0f} GB/s. `max rel err` is a "
          f"value-simulated run against `gir.evaluate` at {', '.join(f'{k}={v}' for k, v in CHECK.items())}. "
          f"**!** marks a ratio above {LIMIT}.\n")
    print("| sample | sizes | fused us | / roofline | op-by-op us (speed-up) | no pipelining us (speed-up) | "
          "GDRAM MB | max rel err |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if over:
        print(f"\nAbove {LIMIT}x:\n")
        for name in over:
            print(f"* {name}: {REASONS.get(name, 'not analysed')}")


if __name__ == "__main__":
    main(sys.argv[1:])
