"""Measure every sample on the simulated MLU370: `python -m gir.codegen.mlu.report > docs/results-mlu.md`.

Timing runs use the simulator's timing-only mode (`run_func(..., values=False)`: shapes only, nothing allocated)
at a large size per sample (LARGE / SIZES). Columns: the schedule kind, simulated time of the fused schedule
(pipelined), its ratio to the DMA roofline (compulsory bytes / `gdram_bandwidth`), the op-by-op baseline (every
statement scheduled alone with the same schedules, intermediates through GDRAM), the same schedule without
software pipelining, the pipes' busy time relative to the roofline, GDRAM traffic, and the maximum relative
error against `gir.evaluate` of a value-simulated run at a smaller size (CHECK). Next to the DMA roofline (the
issue's criterion) stands the arithmetic floor: the vector work the operator-layer source asks for
(passes/schedule_mlu/workcount.py, counted from the source so a wasteful kernel cannot raise it) at all cores' compute
rate; time / max(roofline, arithmetic floor) says how far a kernel is from what this machine allows.

Every simulation runs under a wall-clock cap (CAP_S, a SIGALRM timer): scalar fallback kernels interpret every
element (about 250 us of wall time per element: a 256 x 256 scalar kernel takes ~17 s, a 4096 x 4096 one would
take ~70 min). A sample whose fused run hits the cap is measured at PROBE sizes instead (stated in its row);
any other run that hits the cap shows "capped" and is compared with the fused schedule at the PROBE sizes.
"""
from __future__ import annotations

import glob
import re
import signal
import sys
import time

import numpy as np

from gir.errors import GirError
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_file
from gir.views import complete_sizes, user_sizes
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func
from gir.passes.schedule_mlu.workcount import count_work

LARGE = {"M": 4096, "N": 4096, "C": 4096}
SIZES = {"reduce_mid": {"B": 16, "S": 1024, "D": 4096}, "scaled_causal_softmax": {"B": 4, "H": 16, "S": 1024},
         "permute0213": {"B": 8, "S": 1024, "H": 16, "D": 64}, "group_norm": {"N": 16, "G": 32, "CG": 8, "HW": 4096},
         # the generality programs of the GPU middle (samples added with it; the MLU path is not on it yet)
         "softmax_axis0": {"N": 256, "B": 16, "C": 1024}, "softmax_mid": {"B": 16, "N": 256, "C": 1024},
         "layernorm_bwd": {"M": 4096, "N": 1024}, "rope": {"B": 2, "S": 512, "H": 32, "K": 64},
         "broadcast_scale": {"A": 64, "B": 64, "C": 32, "D": 32}, "channel_stats": {"N": 16, "C": 512, "H": 32, "W": 32},
         "group_norm_affine": {"N": 16, "G": 32, "CG": 8, "HW": 1024},
         # the language constructs of issue 13 (quasi-affine indices need D = 2K; the view needs C % 4 == 0)
         "rope_flat": {"S": 4096, "D": 1024, "K": 512}, "group_norm_view": {"N": 16, "C": 256, "H": 32, "W": 32}}
CHECK = {"M": 257, "N": 1000, "C": 1000, "B": 3, "S": 130, "D": 200, "H": 5}
CHECK_SIZES = {"group_norm": {"N": 3, "G": 4, "CG": 5, "HW": 130}, "rope": {"B": 2, "S": 33, "H": 3, "K": 7},
               "broadcast_scale": {"A": 3, "B": 7, "C": 33, "D": 5},
               "channel_stats": {"N": 3, "C": 7, "H": 5, "W": 33},
               "group_norm_affine": {"N": 3, "G": 4, "CG": 5, "HW": 130},
               "rope_flat": {"S": 33, "D": 130, "K": 65}, "group_norm_view": {"N": 3, "C": 20, "H": 5, "W": 13}}
PROBE = {"M": 128, "N": 128, "C": 128, "B": 2, "S": 64, "D": 64, "H": 2}
PROBE_SIZES = {"group_norm": {"N": 2, "G": 2, "CG": 4, "HW": 64}, "rope": {"B": 2, "S": 16, "H": 2, "K": 8},
               "broadcast_scale": {"A": 2, "B": 4, "C": 8, "D": 8}, "channel_stats": {"N": 2, "C": 4, "H": 4, "W": 8},
               "group_norm_affine": {"N": 2, "G": 2, "CG": 4, "HW": 64},
               "rope_flat": {"S": 16, "D": 64, "K": 32}, "group_norm_view": {"N": 2, "C": 8, "H": 4, "W": 8}}
CAP_S = 30.0
LIMIT = 1.15
REASONS = {   # why a row is above LIMIT (see the pipe columns and docs/mlu.md, Known gaps)
    "elementwise_chain": "6 special-class (8 cycles/unit) vector ops per element (sigmoid, tanh, sqrt, pow, log, "
                         "exp) alone exceed the per-core DMA share; the kernel issues more simple-class ops than "
                         "the floor counts (one mul+sub pair not adjacent)",
    "softmax_f16": "nearly compute-bound: 2 byte/elem of traffic each way, but f16<->f32 conversions plus exp leave "
                   "the compute pipe ~as busy as the IO pipe",
}


FALLBACK: dict[str, str] = {}   # samples some statement of which runs as a scalar kernel, and what is missing
#                                (reverse_rows was one until passes/schedule_mlu/reverse.py: __bang_mirror row tiles)


class Capped(Exception):
    """A simulation ran past CAP_S seconds of wall time."""


def _alarm(signum, frame):
    raise Capped()


def capped(fn, *args, **kw):
    """fn(*args, **kw) under the wall-clock cap; raises Capped."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CAP_S)
    try:
        return fn(*args, **kw)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _err(out, ref):
    return max(float(np.max(np.abs(out[k].astype(np.float64) - ref[k].astype(np.float64)), initial=0.0) /
                     (np.max(np.abs(ref[k].astype(np.float64))) + 1e-30)) for k in ref)


def compulsory_bytes(f, sizes) -> int:
    """Every input read once, every output written once (bool: 1 byte)."""
    total = 0
    for p in f.params + f.results:
        n = 1
        for d in p.type.shape:
            n *= d if isinstance(d, int) else sizes[d]
        total += n * p.type.dtype.nbytes
    return total


_compulsory = compulsory_bytes   # the name the tests use


def schedule_kind(f, sizes, mode: str = "fused") -> str:
    """'fused' (the fused schedules cover the function), 'per-statement' (only statement by statement), or
    'scalar fallback' (some statement runs as a scalar kernel)."""
    names = [k.name for k in schedule_mlu(f, sizes, mode).kernels]
    if any(re.search(r"_k\d+$", n) for n in names):
        return "scalar fallback"
    if any(re.search(r"_s\d+_", n) for n in names):
        return "per-statement"
    return "fused"


def _sizes(f, table, default):
    """The sizes the table gives for `f` (its own entry, else the default), with the derived sizes of its views;
    None when a size is missing."""
    want, names = table.get(f.name, default), user_sizes(f)
    return complete_sizes(f, {s: want[s] for s in names}) if all(s in want for s in names) else None


def measure(path: str) -> dict:
    f = parse_file(path).funcs[0]
    row = {"name": f.name, "note": ""}
    sizes = _sizes(f, SIZES, LARGE)
    if sizes is None:
        row["note"] = "no report size for its size symbols"
        return row
    try:
        row["kind"] = schedule_kind(f, sizes)
    except GirError as exc:   # refused by the MLU target (e.g. f64), located: the row says why
        row["note"] = "refused by the MLU target: " + exc.diagnostics[0].message
        return row
    t0 = time.perf_counter()
    try:
        fused = capped(run_func, f, None, sizes, values=False)
    except Capped:
        row["note"] = (f"the fused run at {_fmt(sizes)} exceeded the {CAP_S:.0f} s simulation cap "
                       f"({row['kind']}); measured at reduced sizes")
        sizes = _sizes(f, PROBE_SIZES, PROBE)
        row["kind"] = schedule_kind(f, sizes)
        t0 = time.perf_counter()
        fused = capped(run_func, f, None, sizes, values=False)
    row["wall"] = time.perf_counter() - t0
    row["sizes"], row["fused"] = sizes, fused.stats
    for key, kw in (("nopipe", dict(pipeline=False)), ("base", dict(mode="opbyop"))):
        try:
            row[key] = capped(run_func, f, None, sizes, values=False, **kw).stats
        except Capped:   # compare both schedules at the reduced sizes instead (same sizes, so the ratio is fair)
            row[key] = None
            probe = _sizes(f, PROBE_SIZES, PROBE)
            if probe and probe != sizes:
                try:
                    row[key + "_probe"] = (probe, capped(run_func, f, None, probe, values=False, **kw).stats,
                                           capped(run_func, f, None, probe, values=False).stats)
                    if key == "base" and schedule_kind(f, probe, "opbyop") == "scalar fallback":
                        row["note"] += ("op-by-op: some statements alone are outside the vector schedules and run "
                                        "as scalar kernels, hence the cap and the large ratio")
                except Capped:
                    pass
    small = _sizes(f, CHECK_SIZES, CHECK)
    for attempt in (small, _sizes(f, PROBE_SIZES, PROBE)):
        x = random_inputs(f, attempt, np.random.default_rng(0))
        try:
            row["err"] = _err(capped(run_func, f, x, attempt).outputs, evaluate(f, x, attempt))
            row["check"] = attempt
            break
        except Capped:
            row["err"], row["check"] = None, None
    row["roof"] = compulsory_bytes(f, sizes) / MLU370.gdram_bandwidth
    row["arith"] = count_work(f, sizes).seconds(MLU370)
    return row


def floor_columns(t: float, roof: float, arith: float) -> str:
    """The report's `arith floor us | / floor` cells: the arithmetic floor and time / max(roofline, floor)."""
    return f"{arith * 1e6:.1f} | {t / max(roof, arith):.3f}"


def _fmt(sizes) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def _vs(stats, t, probe=None) -> str:
    if stats is None and probe is not None:
        sizes, other, fused = probe
        return (f"capped (> {CAP_S:.0f} s to simulate); at {_fmt(sizes)}: {other['seconds'] * 1e6:.1f} vs fused "
                f"{fused['seconds'] * 1e6:.1f} ({other['seconds'] / fused['seconds']:.2f}x)")
    if stats is None:
        return f"capped (> {CAP_S:.0f} s to simulate)"
    return f"{stats['seconds'] * 1e6:.1f} ({stats['seconds'] / t:.2f}x)"


def _pipes(stats, roof) -> str:
    busy = stats.get("pipe_busy", {})
    per_core = {k: v / 32 / MLU370.clock_hz / roof for k, v in busy.items()}   # mean over the 32 cores
    return " / ".join(f"{per_core.get(k, 0):.2f}" for k in ("io", "compute", "scalar"))


def main(argv=None) -> None:
    start = time.perf_counter()
    rows = [measure(p) for p in (argv or sorted(glob.glob("samples/*.gir")))]   # argv: some samples only
    lines, over = [], []
    for r in rows:
        if "fused" not in r:
            lines.append(f"| {r['name']} | | | | | | | | | | | | {r['note']} |")
            continue
        t = r["fused"]["seconds"]
        ratio = t / r["roof"]
        mark = " **!**" if ratio > LIMIT else ""
        if mark:
            over.append(r)
        check = "capped" if r["err"] is None else f"{r['err']:.1e}"
        if r["err"] is not None and r["check"] != _sizes(parse_file(f"samples/{r['name']}.gir").funcs[0],
                                                         CHECK_SIZES, CHECK):
            check += f" (at {_fmt(r['check'])})"
        lines.append(f"| {r['name']} | {_fmt(r['sizes'])} | {r['kind']} | {t * 1e6:.1f} | {ratio:.3f}{mark} | "
                     f"{floor_columns(t, r['roof'], r['arith'])} | {_vs(r['base'], t, r.get('base_probe'))} | {_vs(r['nopipe'], t, r.get('nopipe_probe'))} | "
                     f"{_pipes(r['fused'], r['roof'])} | "
                     f"{r['fused']['gdram_traffic_bytes'] / 1e6:.2f} | {check} | {r['note']} |")
    total = time.perf_counter() - start
    print("# MLU370 (simulated) results\n")
    print("Produced by `python -m gir.codegen.mlu.report > docs/results-mlu.md` (codegen/mlu/report.py; "
          f"{total:.0f} s of wall time on the 2-core dev host). Times are microseconds of the simulator's timing "
          "model, measured in timing-only mode (`values=False`) at the sizes given per row: "
          f"{_fmt(LARGE)} unless the row says otherwise (f32 unless the sample says otherwise). Roofline = "
          f"compulsory bytes (every input read once, every output written once; bool 1 byte) / "
          f"{MLU370.gdram_bandwidth / 1e9:.0f} GB/s. **!** marks a ratio above {LIMIT} (reasons below).\n")
    print("* *schedule*: `fused` = one fused schedule for the whole function (row model, long rows, column "
          "reductions, permutations, scalar reductions, index values); `per-statement` = no fused schedule for the "
          "whole function, so each statement is scheduled alone (= the op-by-op baseline); `scalar fallback` = "
          "some statement runs as a scalar kernel.")
    print("* *arith floor*: the vector work the operator-layer source asks for (passes/schedule_mlu/workcount.py: each "
          "element-wise op, reduction and conversion once after CSE, over the index domain it depends on; a mul "
          "and an add/sub that `__bang_fusion` could merge count as one simple op) at cycles_<class> per 128-byte "
          f"unit on all {MLU370.total_cores} cores, no per-op issue cost: a lower bound counted from the source, "
          "not from the kernel. *time / floor* = fused time / max(roofline, arith floor): how far the kernel is "
          "from what this machine allows; */ roofline* stays the criterion.")
    print("* *op-by-op*: every statement scheduled alone with the same vectorised schedules, one kernel (or "
          "kernel pair) per statement, intermediates through GDRAM; speed-up = op-by-op / fused.")
    print("* *no pipelining*: the same schedule with synchronous loads/stores (`pipeline=False`); speed-up = "
          "no pipelining / fused.")
    print("* *IO / compute / scalar vs roof*: busy time of the IO, compute and scalar pipes (mean over the 32 "
          "cores; DMA latency included) divided by the roofline time: IO near the ratio = IO-bound, compute near it "
          "= compute-bound, scalar large = scalar kernels.")
    print(f"* *max rel err*: a value-simulated run against `gir.evaluate` at {_fmt(CHECK)} "
          f"(group_norm: {_fmt(CHECK_SIZES['group_norm'])}).")
    print(f"* Every simulation runs under a {CAP_S:.0f} s wall-clock cap (scalar fallback kernels interpret every "
          "element, ~250 us of wall time per element); a sample whose fused run hits it is measured at reduced "
          f"sizes ({_fmt(PROBE)}), other capped runs say so and are compared with the fused schedule at those "
          "reduced sizes.\n")
    print("| sample | sizes | schedule | fused us | / roofline | arith floor us | time / floor | op-by-op us "
          "(speed-up) | no pipelining us (speed-up) | IO / compute / scalar vs roof | GDRAM MB | max rel err | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))
    bound = [r for r in rows if "fused" in r and r["arith"] > r["roof"]]
    print("\nCompute-bound on this machine (arithmetic floor above the DMA roofline): " + (", ".join(
        f"{r['name']} (floor {r['arith'] / r['roof']:.2f}x the roofline; the kernel is "
        f"{r['fused']['seconds'] / r['arith']:.2f}x its floor)" for r in bound) or "none") + ". For these the "
          f"{LIMIT}x-of-roofline criterion cannot be met under this cost model; every other sample's floor is the "
          "roofline.")
    if over:
        print(f"\nAbove {LIMIT}x:\n")
        for r in over:
            why = REASONS.get(r["name"])
            if r["arith"] > r["roof"]:
                why = (f"compute-bound: the source's vector work alone takes {r['arith'] / r['roof']:.2f}x the "
                       f"roofline (arith floor), the kernel {r['fused']['seconds'] / r['arith']:.2f}x that floor"
                       + (f"; {why}" if why else ""))
            if why is None and r["kind"] == "scalar fallback":
                why = "scalar fallback kernels: " + FALLBACK.get(r["name"], "outside the fused schedules")
            print(f"* {r['name']}: {why or 'not analysed'} (IO / compute / scalar busy vs roof: "
                  f"{_pipes(r['fused'], r['roof'])})")


if __name__ == "__main__":
    main(sys.argv[1:])
