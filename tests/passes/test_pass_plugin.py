"""The example plugin (samples/plugins/gir-plugin-example): found through its entry point, configurable
from pipeline text, listed by `gir passes`, and meaning-preserving."""
from __future__ import annotations

import pytest

import gir
from conftest import PLUGIN_DIR, assert_same_semantics, plugin_metadata
from gir.cli import main
from gir.errors import GirError
from gir.passes.manager import PassManager
from gir.passes.pipeline import parse_pipeline

PROGRAM = """func f(x: f32[M, N], k: i32[M, N]) -> (y: f32[M, N]) {
  y[i, j] = pow(x[i, j], 3.0) / 4.0 + pow(x[i, j] + 1.0, 2) + x[i, j] / 3.0 + pow(f32(k[i, j]), 2) + pow(x[i, j], 5)
}
"""
SIZES = {"M": 3, "N": 7}


def test_metadata_is_what_the_plugin_ships():
    name, version, entry_points = plugin_metadata()
    assert (name, version) == ("gir-plugin-example", "0.1.0")
    assert entry_points == {"strength-reduce": "gir_plugin_example.strength_reduce:StrengthReduce",
                            "strength-reduce-idfg": "gir_plugin_example.strength_reduce_idfg:StrengthReduceGraph"}
    assert (PLUGIN_DIR / "gir_plugin_example" / "strength_reduce.py").is_file()


@pytest.mark.parametrize("pipeline, expected", [
    ("strength-reduce",
     "x[i, j] * x[i, j] * x[i, j] * 0.25 + pow(x[i, j] + 1.0, 2) + x[i, j] / 3.0"
     " + pow(f32(k[i, j]), 2) + pow(x[i, j], 5)"),
    ("strength-reduce{max_pow=5 exact_only=false}",
     "x[i, j] * x[i, j] * x[i, j] * 0.25 + pow(x[i, j] + 1.0, 2) + x[i, j] * 0.3333333333333333"
     " + pow(f32(k[i, j]), 2) + x[i, j] * x[i, j] * x[i, j] * x[i, j] * x[i, j]"),
    ("strength-reduce{max_pow=1}",
     "pow(x[i, j], 3.0) * 0.25 + pow(x[i, j] + 1.0, 2) + x[i, j] / 3.0 + pow(f32(k[i, j]), 2) + pow(x[i, j], 5)"),
])
def test_strength_reduce(plugin, pipeline, expected):
    module = gir.parse_text(PROGRAM, "f.gir")
    out = PassManager(pipeline).run(module)
    assert gir.print_module(out).splitlines()[1] == f"  y[i, j] = {expected}"
    assert_same_semantics(module.funcs[0], out.funcs[0], sizes=SIZES)


def test_plugin_options_are_checked(plugin):
    assert str(parse_pipeline("strength-reduce{exact_only=true max_pow=4},cse")) == "strength-reduce,cse"
    with pytest.raises(GirError, match="option 'exact_only' expects true or false, got 'yes'"):
        parse_pipeline("strength-reduce{exact_only=yes}")
    with pytest.raises(GirError, match="max_pow must be at least 1, got 0"):
        parse_pipeline("strength-reduce{max_pow=0}")


def test_plugin_in_gir_passes(plugin, capsys):
    assert main(["passes"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("strength-reduce [gir-plugin-example 0.1.0]"):].splitlines()[:4]
    assert block[1].startswith("    Rewrite x / c as x * (1/c)")
    assert block[2:] == ["    max_pow: int = 4", "    exact_only: bool = true"]


def test_gir_opt_runs_the_plugin(plugin, tmp_path, capsys):
    src = tmp_path / "f.gir"
    src.write_text(PROGRAM)
    assert main(["opt", str(src), "--passes", "strength-reduce{max_pow=5},canonicalize"]) == 0
    assert "x[i, j] * x[i, j] * x[i, j] * x[i, j] * x[i, j]" in capsys.readouterr().out


def test_duplicate_plugin_breaks_gir_passes_with_a_clear_error(plugin, fake_dists, capsys):
    fake_dists("gir-plugin-copy", {"strength-reduce": "gir_plugin_example.strength_reduce:StrengthReduce"}, "9.9")
    assert main(["passes"]) == 1
    err = capsys.readouterr().err
    assert "pass name 'strength-reduce' is registered more than once" in err
    assert "gir-plugin-copy 9.9" in err and "gir-plugin-example 0.1.0" in err


GRAPH_PIPELINE = ("naive-lower,fuse,strength-reduce-idfg{{{opts}}},forward-stores,dead-stores,load-cse,"
                  "promote,schedule{{target=cuda}}")
ROWS = """func g(x: f32[M, N]) -> (y: f32[M, N]) {
  s[i] = sum(x[i, j])
  y[i, j] = pow(x[i, j], 2) / 4.0 + s[i] / 8.0
}
"""


def test_graph_plugin_receives_the_idfg_and_changes_the_kernels(plugin, tmp_path, capsys):
    """A plugin pass over the IDFG rewrites compute nodes; the search emits kernels from the rewritten graph:
    the CUDA of `gir compile` differs, the values do not."""
    from gir.passes.base import PassContext
    from gir.passes.middle.graph import ModuleGraph
    from gir.passes.registry import registry
    assert registry().get("strength-reduce-idfg").cls.consumes == "idfg"
    src = tmp_path / "g.gir"
    src.write_text(ROWS)
    assert main(["compile", str(src), "--target", "cuda", "--sizes", "M=64,N=1024"]) == 0
    plain = capsys.readouterr().out
    pipeline = GRAPH_PIPELINE.format(opts="")
    assert main(["compile", str(src), "--target", "cuda", "--sizes", "M=64,N=1024", "--passes", pipeline]) == 0
    reduced = capsys.readouterr().out
    assert "/ 4.0f" in plain and "0.25f" in reduced and "/ 4.0f" not in reduced
    seen = []

    class Spy:  # the pass sees a ModuleGraph, and its result is what the search schedules
        def run_before_pass(self, ctx, p, index, state):
            if p.name == "strength-reduce-idfg":
                seen.append(type(state))
    from gir.passes.instruments import PassInstrument
    spy = type("SpyInstrument", (PassInstrument,), {"run_before_pass": Spy.run_before_pass})()
    ctx = PassContext()
    out = PassManager(pipeline, [spy]).run(gir.parse_text(ROWS, "g.gir"), ctx)
    assert seen == [ModuleGraph] and ctx.statistics["strength-reduce-idfg.rewrites"] == 3
    import numpy as np
    from gir.evaluate import evaluate, random_inputs
    from gir.targets.sim import run_func
    func, sizes = gir.parse_text(ROWS, "g.gir").funcs[0], {"M": 5, "N": 33}
    inputs = random_inputs(func, sizes, np.random.default_rng(3))
    got = run_func(out.funcs[0], inputs, sizes).outputs["y"]
    want = evaluate(func, inputs, compute_dtype=np.float64)["y"]
    assert np.linalg.norm(got - want) <= 1e-6 * np.linalg.norm(want)

