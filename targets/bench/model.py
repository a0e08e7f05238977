"""`gir bench MODEL.onnx`: every memory-bound subgraph the importer finds in an ONNX model, benchmarked.

Each imported function (gir.onnx.import_onnx) is a `ModelCase` of the usual benchmark machinery
(driver.run_bench: progress, the target's measurements, JSON/CSV/PNG and the summary table). What differs:
- its inputs: seeded random data, the model's initializers for parameters that are initializers;
- its verdict: against `onnx.reference` on the subgraph cut out of the model (gir.verdict, norm-wise, with the
  tolerance of the result's type; that of 16-bit floats when the subgraph computes in 16 bits);
- on cuda, its baselines: onnxruntime (CUDAExecutionProvider) on the subgraph exported as its own model, and
  torch.compile of the subgraph interpreted with torch (targets/bench/model_gpu.py).
Sizes are the model's static shapes; a symbolic dimension needs `--sizes` (its ONNX name or its GIR name).
`--dtypes`: by default each function runs in the model's own element types; given, its floating-point
parameters and results are stored in each listed type instead (the reference still runs the model as it is,
on the same values).
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from gir import ir
from gir.errors import UsageError
from gir.targets.bench.cases import Case

MODEL_DTYPES = "model"   # --dtypes default for a model: its own element types


@dataclass(frozen=True)
class ModelCase(Case):
    function: object = field(default=None, hash=False, compare=False, repr=False)   # ImportedFunction
    imported: object = field(default=None, hash=False, compare=False, repr=False)   # ImportResult
    retyped: bool = False    # float parameters and results stored in `dtype` instead of the model's types

    @property
    def label(self) -> str:
        sizes = ",".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"{self.op} {self.dtype}" + (f" {sizes}" if sizes else "")

    @property
    def spelled(self) -> str:
        return f"{self.suite}:{self.label}"

    def subgraph(self):
        """The function's ONNX nodes as a model whose inputs are exactly the function's parameters."""
        from gir.onnx.crosscheck import subgraph_model

        return subgraph_model(self.imported, self.function, initializers_as_inputs=True)

    def make_inputs(self, func: ir.Func, rng) -> dict[str, np.ndarray]:
        from gir.evaluate import random_inputs

        types = {p.name: p.type.dtype.numpy for p in func.params}
        given = {g: np.asarray(v).astype(types[g]) for g, v in self.function.constants.items()}
        return random_inputs(func, self.sizes, rng, given=given)

    def judge(self, func: ir.Func, inputs: dict, outputs: dict) -> dict:
        from onnx.reference import ReferenceEvaluator

        from gir import verdict
        from gir.onnx.crosscheck import narrow_tolerance

        fn, model = self.function, self.subgraph()
        onnx_types = {vi.name: vi.type.tensor_type.elem_type for vi in model.graph.input}
        feeds = {fn.inputs[g]: _as_onnx_type(v, onnx_types[fn.inputs[g]]) for g, v in inputs.items()}
        names = [fn.outputs[p.name] for p in func.results]
        with np.errstate(all="ignore"):
            want = ReferenceEvaluator(model).run(names, feeds)
        floor = narrow_tolerance(self.imported, fn)
        worst, failed, reasons = None, False, []
        for p, w in zip(func.results, want):
            v = verdict.compare(outputs[p.name], np.asarray(w), p.type.dtype)
            tol = max(v.tolerance, floor) if p.type.dtype.is_float else v.tolerance
            bad = not v.error <= tol
            failed |= bad
            key = (bad, v.error / tol if tol else 0.0)
            if worst is None or key > worst[0]:
                worst = (key, v.error, tol)
            if v.reason:
                reasons.append(f"{p.name}: {v.reason}")
        row = {"status": "FAIL" if failed else "ok", "rel_err": worst[1], "tolerance": worst[2],
               "reference": "onnx.reference"}
        if reasons:
            row["note"] = "; ".join(reasons)
        return row

    def gpu_baselines(self, func: ir.Func, sets: list, repeat: int, compiled: bool = True) -> dict:
        from gir.targets.bench.model_gpu import model_baselines

        return model_baselines(self, func, sets, repeat, compiled)


def _as_onnx_type(value: np.ndarray, elem_type: int) -> np.ndarray:
    from onnx import helper

    want = helper.tensor_dtype_to_np_dtype(elem_type)
    return np.asarray(value).astype(want) if np.asarray(value).dtype != want else np.asarray(value)


def retype(func: ir.Func, dtype: ir.DType) -> ir.Func:
    """The function with its floating-point parameters and results stored in `dtype`."""
    def re(p: ir.Param) -> ir.Param:
        return replace(p, type=replace(p.type, dtype=dtype)) if p.type.dtype.is_float else p
    return replace(func, params=tuple(map(re, func.params)), results=tuple(map(re, func.results)))


def own_dtype(func: ir.Func) -> str:
    """The element type that names a function's case: that of its first floating-point parameter or result."""
    return next((p.type.dtype.value for p in func.params + func.results if p.type.dtype.is_float),
                (func.params + func.results)[0].type.dtype.value)


def model_cases(source, dtypes=MODEL_DTYPES, sizes_text: str | None = None):
    """(cases, ImportResult) of a model path or ModelProto. UsageError: a size of --sizes that the model does not
    have, or a symbolic dimension it needs and --sizes lacks."""
    from gir.cli.common import parse_sizes
    from gir.onnx import import_onnx
    from gir.printer import print_module

    result = import_onnx(source)
    suite = Path(str(source)).stem if isinstance(source, (str, os.PathLike)) else (source.graph.name or "model")
    given = parse_sizes(sizes_text)
    onnx_to_gir = {d: g for f in result.functions for g, d in f.sizes.items()}
    known = set(onnx_to_gir) | set(onnx_to_gir.values())
    unknown = [k for k in given if k not in known]
    if unknown:
        raise UsageError(f"the model has no symbolic dimension '{unknown[0]}'"
                         + (f" (it has {', '.join(sorted(onnx_to_gir))})" if onnx_to_gir else " (every shape is static)"))
    sizes = {onnx_to_gir.get(k, k): v for k, v in given.items()}
    cases = []
    for f in result.functions:
        needed = f.func.size_symbols()
        missing = [f.sizes.get(s, s) for s in needed if s not in sizes]
        if missing:
            raise UsageError(f"{f.name} has symbolic dimensions {', '.join(missing)}: give them with --sizes "
                             f"{','.join(f'{m}=...' for m in missing)}")
        own = own_dtype(f.func)
        for dt in ([own] if dtypes == MODEL_DTYPES else list(dtypes)):
            func = f.func if dt == own else retype(f.func, ir.DType(dt))
            text = print_module(ir.Module((func,))) + "\n"
            cases.append(ModelCase(suite, f.name, dt, {s: sizes[s] for s in needed}, text, f"{f.name}.gir",
                                   function=f, imported=result, retyped=dt != own))
    return cases, result


@dataclass
class ModelBench:
    rows: list[dict]
    table: str                      # the summary table (text)
    markdown: str                   # the results as a Markdown table, then the left-out nodes
    files: list[Path]
    notes: list[str] = field(default_factory=list)
    imported: object = None         # ImportResult


def bench_model(source, target: str = "sim", out: str | os.PathLike = "bench-out", dtypes=MODEL_DTYPES,
                sizes: str | None = None, seed: int = 0, repeat: int = 50, baselines: bool | str = True,
                quiet: bool = True, argv: list[str] | None = None) -> ModelBench:
    """Benchmark every imported subgraph of an ONNX model (path or ModelProto) on `target` (sim, mlu-sim,
    cuda); writes DIR/results.json, results.csv, results.md, the PNGs and DIR/import/ (the functions and the
    import report)."""
    from gir.files import write_atomic
    from gir.targets.bench.driver import run_bench

    cases, result = model_cases(source, dtypes, sizes)
    if not cases:
        raise UsageError(f"{result.source}: no memory-bound subgraph was imported; nothing to benchmark")
    mode = baselines if isinstance(baselines, str) else ("all" if baselines else "none")  # all | eager | none
    args = argparse.Namespace(target=target, seed=seed, repeat=repeat, baselines=mode, quiet=quiet, out=str(out),
                              quick=False)
    from gir.onnx.report import summary

    env = {"model": str(result.source), "import": summary(result),
           "left_out": [x.to_json() for x in result.left_out]}
    run = run_bench(cases, args, argv if argv is not None else ["bench", str(result.source), "--target", target], env)
    outdir = Path(out)
    written = result.write(outdir / "import")
    md = results_markdown(run.rows, target) + "\n" + left_out_markdown(result)
    write_atomic(outdir / "results.md", md)
    notes = list(run.notes)
    for row in run.rows:
        for key in ("ort_note", "torch_note"):
            if row.get(key) and row[key] not in notes:
                notes.append(row[key])
    return ModelBench(run.rows, run.table, md, run.files + [outdir / "results.md"] + written, notes, result)


MD_COLUMNS = {
    "sim": ["compulsory_bytes", "moved_bytes", "traffic_ratio", "rel_err", "status"],
    "mlu-sim": ["time_s", "roofline_s", "vs_roofline", "traffic_ratio", "rel_err", "status"],
    "cuda": ["time_s", "gbps", "pct_copy", "ort_s", "torch_compile_s", "rel_err", "status"],
}


def results_markdown(rows: list[dict], target: str) -> str:
    cols = ["case"] + MD_COLUMNS[target]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        cells = [row.get("label", "")]
        for c in cols[1:]:
            v = row.get(c)
            if v is None and c in ("ort_s", "torch_compile_s"):
                v = "n/a" if row.get(c.split("_")[0] + "_note") else "-"
            cells.append("-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def left_out_markdown(result) -> str:
    from gir.onnx.report import KIND_TITLES, summary

    lines = [f"Imported: {summary(result)}", ""]
    if result.left_out:
        lines += ["| node | op | kind | reason |", "|---|---|---|---|"]
        for x in result.left_out:
            reason = x.reason.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {x.node} | {x.op_type} | {KIND_TITLES.get(x.kind, x.kind)} | {reason} |")
    return "\n".join(lines) + "\n"


def left_out_text(result) -> str:
    """The importer's left-out report as lines for a terminal."""
    from gir.onnx.report import summary

    lines = [f"{result.source}: {summary(result)}"]
    for x in result.left_out:
        lines.append(f"  left out {x.node} ({x.op_type}, {x.kind}): {x.reason}")
    return "\n".join(lines)


__all__ = ["ModelCase", "model_cases", "bench_model", "ModelBench", "retype", "left_out_text"]
