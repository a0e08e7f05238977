"""Coverage of the ONNX backend node tests: import each test model, run what was imported, compare.

The node tests ship with the onnx package, as files under onnx/backend/test/data/node/<name>/ in some
releases and always as generators (`onnx.backend.test.case.node.collect_testcases`). A test counts as
*imported* when every node became part of a function and every graph output is a function result; it then
*matches* or *mismatches* the expected outputs (norm-wise relative error within the element type's
tolerance). Otherwise it is *left out*, counted by the kind of its first reason (float64 separately).

    python3 -m gir.onnx.backend [-v] [PREFIX ...]    # default: the prefixes in DEFAULT_PREFIXES

Inputs that a node reads only as parameters (axes, shapes) become initializers first (`freeze_parameters`).
"""
from __future__ import annotations

import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

import onnx
from gir.evaluate import evaluate
from gir.onnx.crosscheck import compare, tolerance
from gir.onnx.importer import import_onnx
from gir.onnx.ops import data_inputs

DEFAULT_PREFIXES = (
    "test_softmax", "test_logsoftmax", "test_layer_normalization", "test_rms_normalization",
    "test_group_normalization", "test_instancenorm", "test_batchnorm", "test_reduce_", "test_gelu", "test_erf",
    "test_transpose", "test_relu", "test_leakyrelu", "test_prelu", "test_sigmoid", "test_hardsigmoid",
    "test_hardswish", "test_tanh", "test_elu", "test_selu", "test_celu", "test_softplus", "test_softsign",
    "test_mish", "test_thresholdedrelu", "test_where", "test_cast_", "test_castlike_", "test_add", "test_sub",
    "test_mul", "test_div", "test_pow", "test_sqrt", "test_exp", "test_log", "test_neg", "test_abs",
    "test_reciprocal", "test_max", "test_min", "test_sum", "test_mean", "test_clip", "test_sign",
    "test_isnan", "test_isinf", "test_not", "test_and", "test_or", "test_xor", "test_equal", "test_less",
    "test_greater", "test_identity", "test_squeeze", "test_unsqueeze", "test_reshape", "test_flatten",
    "test_expand", "test_slice", "test_dropout", "test_cumsum", "test_floor", "test_ceil", "test_round",
    "test_sin", "test_cos", "test_tan", "test_swish")


@dataclass
class NodeCase:
    name: str
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]


@dataclass
class Coverage:
    matching: list[str] = field(default_factory=list)
    mismatching: list[tuple[str, str]] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)   # test → first reason
    left_kinds: Counter = field(default_factory=Counter)      # kind → tests
    float64: int = 0

    def summary(self) -> str:
        return (f"{len(self.matching) + len(self.mismatching) + len(self.left_out)} node tests: "
                f"{len(self.matching)} imported and matching, {len(self.mismatching)} mismatching, "
                f"{len(self.left_out)} left out ({self.float64} of them float64; by kind: "
                f"{', '.join(f'{k} {n}' for k, n in self.left_kinds.most_common())})")


def node_cases(prefixes: tuple[str, ...] = DEFAULT_PREFIXES) -> Iterator[NodeCase]:
    root = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    if root.is_dir():
        for d in sorted(root.iterdir()):
            if d.name.startswith(prefixes) and (d / "model.onnx").is_file():
                yield _case_from_dir(d)
        return
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    for case in sorted(cases, key=lambda c: c.name):
        if not case.name.startswith(prefixes):
            continue
        inputs, outputs = case.data_sets[0]
        g = case.model.graph
        given = [i.name for i in g.input]
        yield NodeCase(case.name, case.model, dict(zip(given, map(_array, inputs))),
                       dict(zip([o.name for o in g.output], map(_array, outputs))))


def _array(x) -> np.ndarray:
    return onnx.numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else np.asarray(x)


def _case_from_dir(d: Path) -> NodeCase:
    model = onnx.load(str(d / "model.onnx"))
    data = d / "test_data_set_0"

    def read(prefix: str, names: list[str]) -> dict[str, np.ndarray]:
        out = {}
        for k, name in enumerate(names):
            f = data / f"{prefix}_{k}.pb"
            if f.is_file():
                out[name] = onnx.numpy_helper.to_array(onnx.load_tensor(str(f)))
        return out
    g = model.graph
    return NodeCase(d.name, model, read("input", [i.name for i in g.input]), read("output", [o.name for o in g.output]))


def freeze_parameters(case: NodeCase) -> NodeCase:
    """Make the graph inputs that nodes read only as parameters (axes, shapes, bounds: input positions that
    carry no data) initializers with the test's values, as an exported model has them."""
    g = case.model.graph
    data = {t for node in g.node for t in data_inputs(node)}
    frozen = [name for name in case.inputs if name not in data and name not in case.outputs]
    if not frozen:
        return case
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    keep = [vi for vi in model.graph.input if vi.name not in frozen]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.graph.initializer.extend(onnx.numpy_helper.from_array(case.inputs[n], n) for n in frozen)
    return NodeCase(case.name, model, {k: v for k, v in case.inputs.items() if k not in frozen}, case.outputs)


def run_case(case: NodeCase) -> tuple[str, str]:
    """("match" | "mismatch" | "left", detail)."""
    case = freeze_parameters(case)
    result = import_onnx(case.model)
    if result.left_out:
        first = result.left_out[0]
        return "left", f"{first.kind}: {first.op_type}: {first.reason}"
    produced = {o for f in result.functions for o in f.outputs.values()}
    missing = [o for o in case.outputs if o not in produced]
    if missing or not result.functions:
        return "left", f"unused: outputs {missing} are not results of any function"
    env = {**case.inputs, **result.graph.constants}
    pending = list(result.functions)
    while pending:
        fn = next((f for f in pending if all(t in env for t in f.inputs.values())), None)
        if fn is None:
            return "mismatch", "functions depend on each other in a cycle"
        pending.remove(fn)
        with np.errstate(all="ignore"):
            got = evaluate(fn.func, {g: env[t] for g, t in fn.inputs.items()})
        for g, t in fn.outputs.items():
            env[t] = got[g]
    worst = []
    dtypes = {fn.outputs[p.name]: p.type.dtype for fn in result.functions for p in fn.func.results}
    for name, want in case.outputs.items():
        err, tol = compare(env[name], want, dtypes[name]), tolerance(dtypes[name])
        if not err <= tol:
            worst.append(f"{name}: error {err:.3g} > {tol:g}")
    return ("mismatch", "; ".join(worst)) if worst else ("match", "")


def coverage(prefixes: tuple[str, ...] = DEFAULT_PREFIXES) -> Coverage:
    cov = Coverage()
    for case in node_cases(prefixes):
        try:
            verdict, detail = run_case(case)
        except Exception as exc:  # an importer bug must show as a mismatch, not stop the count
            verdict, detail = "mismatch", f"{type(exc).__name__}: {exc}"
        if verdict == "match":
            cov.matching.append(case.name)
        elif verdict == "mismatch":
            cov.mismatching.append((case.name, detail))
        else:
            cov.left_out[case.name] = detail
            kind = detail.split(":", 1)[0]
            cov.left_kinds[kind] += 1
            if "float64" in detail:
                cov.float64 += 1
    return cov


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in args
    prefixes = tuple(a for a in args if a != "-v") or DEFAULT_PREFIXES
    cov = coverage(prefixes)
    for name, detail in cov.mismatching:
        print(f"MISMATCH {name}: {detail}")
    if verbose:
        for name, detail in sorted(cov.left_out.items()):
            print(f"left out {name}: {detail}")
    print(cov.summary())
    return 1 if cov.mismatching else 0


if __name__ == "__main__":
    sys.exit(main())
