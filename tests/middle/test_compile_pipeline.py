"""`gir compile` is a pipeline: the default one is what `gir passes --default --target T` prints, --passes
replaces it, instruments print every stage, remarks say what was and was not done, and the graph verifier
names a pass that breaks the IDFG."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from gir.cli import main
from gir.errors import GirError
from gir.parser import parse_file, parse_text
from gir.passes.base import GraphPass, PassContext
from gir.passes.manager import PassManager
from gir.passes.pipeline import PassPipeline, parse_pipeline

SOFTMAX = "samples/softmax.gir"


def _kernels(out: str) -> int:
    return sum(1 for line in out.splitlines() if line.lstrip().startswith("kernel "))


def test_default_pipeline_is_what_compile_runs(capsys):
    assert main(["passes", "--default", "--target", "cuda"]) == 0
    text = capsys.readouterr().out.strip()
    assert text.split(",")[:4] == ["squeeze-unit-axes", "delinearize", "hoist-reductions", "naive-lower"] and \
        text.split(",")[-1].startswith("schedule")
    assert main(["compile", SOFTMAX, "--emit", "gir"]) == 0
    default = capsys.readouterr().out
    assert main(["compile", SOFTMAX, "--emit", "gir", "--passes", text]) == 0
    assert capsys.readouterr().out == default
    assert _kernels(default) == 1


@pytest.mark.parametrize("pipeline, kernels", [
    ("naive-lower,schedule", 4),                                  # op by op
    ("naive-lower,fuse", 1),                                      # ends on the IDFG: its reference mapping
    ("naive-lower,fuse,schedule", 4),                             # fused, values in @global: no tuned recipe
    ("naive-lower,fuse,forward-stores,dead-stores,schedule", 1)])
def test_passes_replace_the_pipeline(capsys, pipeline, kernels):
    assert main(["compile", SOFTMAX, "--emit", "gir", "--passes", pipeline]) == 0
    out, err = capsys.readouterr()
    assert _kernels(out) == kernels
    if pipeline == "naive-lower,fuse":  # one thread per team; the values still go through @global
        assert "alloc e: f32[M, N] @global" in out and "parallel _t in 0..256 @thread" in out
    if pipeline == "naive-lower,fuse,schedule":
        assert "no tuned recipe maps the fused group" in err and "run forward-stores and promote" in err


def test_print_ir_after_all_shows_every_stage(capsys):
    assert main(["compile", SOFTMAX, "--emit", "gir", "--print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    for name in ("naive-lower", "fuse", "forward-stores", "dead-stores", "load-cse", "promote", "schedule"):
        assert f"# ----- IR after '{name}" in err
    after_fuse = err.split("# ----- IR after 'fuse'")[1].split("# -----")[0]
    assert _kernels(after_fuse) == 1 and "alloc e: f32[M, N] @global" in after_fuse
    parse_text(after_fuse.split("\n", 1)[1])  # every stage is GIR that parses


def test_a_pipeline_must_lower_to_kernels(capsys):
    assert main(["compile", SOFTMAX, "--passes", "canonicalize"]) == 1
    assert "left 'softmax' in the operator layer" in capsys.readouterr().err


def test_missed_remarks_always_passed_remarks_with_R(tmp_path, capsys):
    src = tmp_path / "rev.gir"
    src.write_text("func rev(x: f32[N]) -> (y: f32[N]) {\n  a[i] = x[i] * 2.0\n  y[i] = a[N - 1 - i] + 1.0\n}\n")
    assert main(["compile", str(src), "--emit", "gir"]) == 0
    err = capsys.readouterr().err
    assert f"{src}:3:10: remark: 'y' is not fused with 'a'" in err and "[-Rpass-missed=fuse]" in err
    assert "[-Rpass=" not in err
    assert main(["compile", SOFTMAX, "--emit", "gir", "-R"]) == 0
    err = capsys.readouterr().err
    assert "remark: fused 'mx', 'e', 's', 'y' into one kernel" in err and "[-Rpass-analysis=schedule]" in err
    assert "    mx[i] = max(x[i, j])" in err and "^~~" in err  # located at the source, with a caret


@dataclass(frozen=True)
class FuseEverything(GraphPass):
    """A broken plugin: puts every statement into one group with the first group's teams."""
    name: ClassVar[str] = "fuse-everything"

    def apply(self, ctx, graph):
        from dataclasses import replace
        for fg in graph.graphs():
            first = fg.groups[0]
            stmts = [s.id for s in fg.stmts]
            varmap = {s.id: {v: v for v in s.vars} for s in fg.stmts}
            fg.groups = [replace(first, stmts=stmts, varmap=varmap, axes={}, cross=set())]
        return graph


def test_graph_verifier_names_the_pass_that_breaks_the_idfg():
    module = parse_text("func rev(x: f32[N]) -> (y: f32[N]) {\n  a[i] = x[i] * 2.0\n  y[i] = a[N - 1 - i] + 1.0\n}\n",
                        "rev.gir")
    from gir.passes.middle.lowering import NaiveLower
    with pytest.raises(GirError) as exc:
        PassManager(PassPipeline((NaiveLower(), FuseEverything()))).run(module, PassContext(filename="rev.gir"))
    text = exc.value.format()
    assert "pass 'fuse-everything' produced invalid IR" in text and "crosses teams" in text


def test_kinds_are_checked_before_running():
    with pytest.raises(GirError, match="pass 'fuse' works on the IDFG, but the pipeline holds GIR modules"):
        PassManager(parse_pipeline("fuse")).run(parse_file(SOFTMAX))
    with pytest.raises(GirError, match="pass 'cse' works on GIR modules, but the pipeline holds the IDFG"):
        PassManager(parse_pipeline("naive-lower,cse")).run(parse_file(SOFTMAX))


def test_long_chains_compile_in_bounded_groups():
    n = 300
    lines = ["func chain(x: f32[M, N]) -> (y: f32[M, N]) {", "  t0[i, j] = x[i, j] * 2.0"]
    lines += [f"  t{k}[i, j] = t{k - 1}[i, j] + {k}.0" for k in range(1, n)]
    lines += [f"  y[i, j] = t{n - 1}[i, j] * 0.5", "}"]
    ctx = PassContext()
    graph = PassManager("naive-lower,fuse").run(parse_text("\n".join(lines) + "\n"), ctx)
    groups = graph.graphs()[0].groups
    assert len(groups) == -(-(n + 1) // 48) and all(len(g.stmts) <= 48 for g in groups)
    assert sum(r.kind == "missed" for r in ctx.remarks) == len(groups) - 1
