"""The import report: what became which function, and what was left out and why (Markdown and JSON)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gir.onnx.importer import ImportResult

KIND_TITLES = {
    "compute-bound": "compute-bound (left to a library)",
    "language": "not expressible in GIR yet (language reach)",
    "op": "no lowering",
    "dtype": "element type",
    "shape": "shape",
    "attribute": "attribute or mode",
    "unused": "unused",
    "internal": "internal error",
}


def summary(result: ImportResult) -> str:
    nodes = sum(len(f.nodes) for f in result.functions)
    kinds = Counter(x.kind for x in result.left_out)
    left = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    return (f"{len(result.functions)} function(s) from {nodes} node(s); {len(result.left_out)} node(s) left out"
            + (f" ({left})" if left else ""))


def markdown(result: ImportResult) -> str:
    lines = [f"# GIR import of {result.source}", "", summary(result), "", "## Functions", ""]
    for f in result.functions:
        lines.append(f"### {f.name} ({f.name}.gir)")
        lines.append("")
        lines.append(f"- nodes: {', '.join(f'{n} ({op})' for n, op in zip(f.nodes, f.op_types))}")
        lines.append(f"- inputs: {', '.join(f'{g} ← {o}' for g, o in f.inputs.items()) or 'none'}")
        if f.constants:
            lines.append(f"- inputs that are initializers: {', '.join(sorted(f.constants))}")
        lines.append(f"- outputs: {', '.join(f'{g} → {o}' for g, o in f.outputs.items())}")
        if f.sizes:
            lines.append(f"- sizes: {', '.join(f'{g} = {o}' for g, o in f.sizes.items())}")
        lines.append("")
    lines += ["## Left out", ""]
    if not result.left_out:
        lines.append("Nothing.")
    else:
        lines += ["| node | op | kind | reason |", "|---|---|---|---|"]
        for x in result.left_out:
            reason = x.reason.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {x.node} | {x.op_type} | {KIND_TITLES.get(x.kind, x.kind)} | {reason} |")
    return "\n".join(lines) + "\n"


def write_report(result: ImportResult, out: Path) -> list[Path]:
    md, js = out / "report.md", out / "report.json"
    md.write_text(markdown(result), encoding="utf-8")
    js.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    return [md, js]
