"""Measure every sample on the simulated MLU370: `python -m codegen.mlu.report > docs/results-mlu.md`.

Columns: simulated time of the fused schedule (pipelined), its ratio to the DMA roofline (compulsory bytes /
307 GB/s), the op-by-op baseline (one kernel per statement, through GDRAM), the same fused schedule without
software pipelining, and GDRAM traffic. Samples outside the row model run the scalar fallback at a small size.
"""
from __future__ import annotations

import glob
import sys

import numpy as np

from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from passes.schedule_mlu.rowmodel import NotRowModel, analyze_rows
from passes.schedule_mlu.schedule import specialize
from targets.mlu import MLU370
from targets.mlu.run import run_func

LARGE = {"M": 4096, "N": 1024}


def _err(out, ref):
    return max(float(np.max(np.abs(out[k].astype(np.float64) - ref[k].astype(np.float64))) /
                     (np.max(np.abs(ref[k].astype(np.float64))) + 1e-30)) for k in ref)


def main(argv=None) -> None:
    rows = []
    for path in sorted(glob.glob("samples/*.gir")):
        f = parse_file(path).funcs[0]
        name = f.name
        try:
            if set(f.size_symbols()) - set(LARGE):
                raise NotRowModel("sizes")
            analyze_rows(specialize(f, LARGE), {})
        except NotRowModel:
            rows.append(f"| {name} | scalar fallback (not in the row model) | | | | | |")
            continue
        x = random_inputs(f, LARGE, np.random.default_rng(0))
        fused = run_func(f, x, LARGE)
        nopipe = run_func(f, x, LARGE, pipeline=False)
        base = run_func(f, x, LARGE, mode="opbyop")
        ref = evaluate(f, x, LARGE)
        compulsory = sum(v.nbytes for v in x.values()) + sum(v.nbytes for v in ref.values())
        roof = compulsory / MLU370.gdram_bandwidth
        t = fused.stats["seconds"]
        rows.append(f"| {name} | {t * 1e6:.1f} | {t / roof:.3f} | {base.stats['seconds'] * 1e6:.1f} "
                    f"({base.stats['seconds'] / t:.2f}x) | {nopipe.stats['seconds'] * 1e6:.1f} "
                    f"({nopipe.stats['seconds'] / t:.2f}x) | {fused.stats['gdram_traffic_bytes'] / 1e6:.2f} | "
                    f"{_err(fused.outputs, ref):.1e} |")
    print("# MLU370 (simulated) results\n")
    print("Produced by `python -m codegen.mlu.report > docs/results-mlu.md`; sizes M=4096, N=1024 (f32 unless the "
          "sample says otherwise); times in microseconds of the simulator's timing model.\n")
    print("| sample | fused us | / roofline | op-by-op us (slower by) | no pipelining us (slower by) | "
          "GDRAM MB | max rel err |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
