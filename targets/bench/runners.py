"""Per-target measurement of one benchmark case.

- sim: schedule for GPUs, run the SIMT simulator (sector-counted global bytes, correctness vs the reference
  evaluator); cases too large to execute here are analysed with isl instead (bytes moved, no values).
- mlu-sim: schedule and emit BANG-C, simulate the program text: simulated time vs the DMA roofline,
  vs an op-by-op baseline and vs the same kernels without pipelining.
- cuda: emit CUDA, run it through cupy, time with CUDA events (median, rotated inputs), compare with torch
  eager / torch.compile / cupy, and with a device copy measured in the same run.
"""
from __future__ import annotations

import time

import numpy as np

from gir import ir
from gir.errors import GirError
from gir.parser import parse_text
from gir.verdict import compare
from gir.verifier import verify_module
from gir.passes.analysis.traffic import compulsory_bytes

SIM_EXEC_LIMIT = 1 << 24     # elements over all tensors the SIMT simulator executes (else: isl analysis)
MLU_VALUES_LIMIT = 1 << 24   # elements over all tensors the MLU simulator computes values for (else timing only)


def check_outputs(func: ir.Func, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
                  sizes: dict[str, int] | None = None) -> dict:
    """The verdict of `gir run` on every result (gir.verdict against the float64 reference evaluator, the
    tolerance of the result's type widened by gir.rounding's bound where the result is ill-conditioned), as
    fields of a row: `status` ok or FAIL; `rel_err` and `tolerance` of the worst result (one that failed, else
    the one nearest its tolerance); `note` the reasons given (a failure, a widened tolerance). Inputs in their
    declared shapes; `sizes` (every size, a view's own too) for a function with reshape views."""
    from gir.rounding import expected_and_bounds

    expected, bounds = expected_and_bounds(func, inputs, sizes)
    dtypes = {p.name: p.type.dtype for p in func.results}
    verdicts = {name: compare(outputs[name], want, dtypes[name], bounds.get(name)) for name, want in expected.items()}
    worst = max(verdicts.values(), key=lambda v: (not v.passed, v.error / v.tolerance if v.tolerance else 0.0))
    row = {"status": "ok" if all(v.passed for v in verdicts.values()) else "FAIL",
           "rel_err": worst.error, "tolerance": worst.tolerance}
    reasons = [f"{name}: {v.reason}" for name, v in verdicts.items() if v.reason]
    if reasons:
        row["note"] = "; ".join(reasons)
    return row


def total_elements(func: ir.Func, sizes: dict[str, int]) -> int:
    n = 0
    for p in func.params + func.results:
        k = 1
        for d in p.type.shape:
            k *= d if isinstance(d, int) else sizes[d]
        n += k
    return n


class Runner:
    target = "sim"

    def __init__(self, args):
        self.args = args
        self.rng = np.random.default_rng(args.seed)

    def environment(self) -> dict:
        return {}

    def front(self, case):
        """(module, func, case): the case's sizes completed with a reshape view's derived ones."""
        from dataclasses import replace

        from gir.views import complete_sizes, user_sizes

        module = parse_text(case.source, case.filename)
        verify_module(module)
        func = module.funcs[0]
        missing = [s for s in user_sizes(func) if s not in case.sizes]
        if missing:
            raise GirError(f"{case.label}: sizes {', '.join(missing)} are not given (use --sizes)")
        return module, func, replace(case, sizes=complete_sizes(func, dict(case.sizes)))

    def base_row(self, func, case) -> dict:
        read, written = compulsory_bytes(func, case.sizes)
        return {"compulsory_bytes": read + written}


class SimRunner(Runner):
    target = "sim"

    def measure(self, case) -> dict:
        from gir.passes.schedule import lower_module

        module, func, case = self.front(case)
        t0 = time.perf_counter()
        lowered = lower_module(module, target="sim", options={"sizes": dict(case.sizes)})
        row = self.base_row(func, case)
        row["compile_s"] = time.perf_counter() - t0
        low = lowered.func(func.name)
        if total_elements(func, case.sizes) <= SIM_EXEC_LIMIT:
            from gir.targets.sim import run_func

            inputs = case.make_inputs(func, self.rng)
            run = run_func(low, case.viewed(func, inputs), case.sizes)
            row["moved_bytes"] = run.stats.global_read_bytes + run.stats.global_write_bytes
            row["moved_source"] = "simulator (32-byte sectors)"
            row.update(case.judge(func, inputs, run.outputs))
        else:
            row["moved_bytes"] = analysed_bytes(low, case.sizes)
            row["moved_source"] = "isl analysis (sector-adjusted), not executed: too large for the CPU simulator"
            row["status"] = "analysed"
        row["traffic_ratio"] = row["moved_bytes"] / row["compulsory_bytes"]
        return row


def analysed_bytes(func: ir.Func, sizes: dict[str, int]) -> float:
    """Global bytes of every kernel from the isl access relations, in whole 32-byte sectors per warp access
    (sectors per warp access averaged over sampled warps and instances, over the bytes the lanes ask for, as the
    simulator counts them: passes/analysis/traffic.warp_sectors)."""
    from gir.passes.analysis.traffic import kernel_traffic

    total = 0.0
    for k in func.kernels:
        for ins in kernel_traffic(func, k, sizes).instrs:
            for acc in ins.accesses:
                if acc.level in ("global", "gdram"):
                    total += acc.sector_bytes()
    return total


class MluRunner(Runner):
    target = "mlu-sim"

    def environment(self) -> dict:
        from dataclasses import asdict

        from gir.targets.mlu import MLU370

        return {"mlu_machine": asdict(MLU370)}

    def measure(self, case) -> dict:
        from gir.targets.mlu import MLU370
        from gir.targets.mlu.run import run_func

        module, func, case = self.front(case)
        row = self.base_row(func, case)
        values = total_elements(func, case.sizes) <= MLU_VALUES_LIMIT
        inputs = case.make_inputs(func, self.rng) if values else None
        viewed = case.viewed(func, inputs) if values else None
        t0 = time.perf_counter()
        fused = run_func(func, viewed, case.sizes, **self._mode(values))
        row["compile_s"] = fused.stats.get("compile_seconds", time.perf_counter() - t0)
        row["time_s"] = fused.stats["seconds"]
        row["moved_bytes"] = fused.stats["gdram_traffic_bytes"]
        row["traffic_ratio"] = row["moved_bytes"] / row["compulsory_bytes"]
        row["roofline_s"] = row["compulsory_bytes"] / MLU370.gdram_bandwidth
        row["vs_roofline"] = row["time_s"] / row["roofline_s"]
        row["opbyop_s"] = run_func(func, viewed, case.sizes, mode="opbyop", **self._mode(values)).stats["seconds"]
        row["speedup_vs_opbyop"] = row["opbyop_s"] / row["time_s"]
        row["nopipe_s"] = run_func(func, viewed, case.sizes, pipeline=False, **self._mode(values)).stats["seconds"]
        if values:
            row.update(case.judge(func, inputs, fused.outputs))
        else:
            row["status"] = "timed"
            row["note"] = "timing-only simulation (values not computed: too large for this machine)"
        return row

    @staticmethod
    def _mode(values: bool) -> dict:
        return {} if values else {"values": False}


class CudaRunner(Runner):
    target = "cuda"

    def __init__(self, args):
        super().__init__(args)
        from gir.targets.cuda import available

        if not available():
            raise GirError("no CUDA device available: `gir bench --target cuda` needs an NVIDIA GPU and cupy")
        from gir.targets.bench.gpu_timing import copy_bandwidth

        self.copy_gbps = copy_bandwidth()

    def environment(self) -> dict:
        return {"copy_gbps": self.copy_gbps}

    def measure(self, case) -> dict:
        from gir.targets.bench.cuda_case import measure_cuda

        module, func, case = self.front(case)
        row = self.base_row(func, case)
        row.update(measure_cuda(module, func, case, self.rng, self.args, self.copy_gbps))
        row["copy_gbps"] = self.copy_gbps
        row["gbps"] = row["compulsory_bytes"] / row["time_s"] / 1e9
        row["pct_copy"] = 100 * row["gbps"] / self.copy_gbps
        return row


def make_runner(target: str, args) -> Runner:
    return {"sim": SimRunner, "mlu-sim": MluRunner, "cuda": CudaRunner}[target](args)
