"""docs/passes.md stays true: its example pass works and its canonical-form examples hold."""
from __future__ import annotations

import re
import sys
import types

import gir
from conftest import REPO
from gir.passes.manager import PassManager
from gir.passes.pipeline import DEFAULT_PIPELINE, parse_pipeline
from gir.passes.registry import Registry, registry

DOC = (REPO / "docs" / "passes.md").read_text()


def test_example_pass_from_the_docs(monkeypatch):
    code = re.search(r"## Writing a pass\n\n```python\n(.*?)```", DOC, re.S).group(1)
    module = types.ModuleType("docs_example_pass")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, "docs/passes.md", "exec"), module.__dict__)
    reg = Registry(registry())
    reg.register(module.DropDoubleNot)
    program = gir.parse_text("func f(x: f32[M]) -> (y: f32[M]) {\n"
                             "  y[i] = select(not not (x[i] > 0.0), x[i], 0.0) + select(not not (x[i] < 1.0), 1.0, x[i])\n}\n")
    out = PassManager(parse_pipeline("drop-double-not{max-rewrites=1}", reg)).run(program)
    assert gir.print_module(out).count("not not") == 1


def test_canonical_examples_in_the_docs():
    examples = re.findall(r"^'(.*)'\s+→\s+'(.*)'$", DOC, re.M)
    assert len(examples) == 2
    reg = Registry(registry())
    from gir_test_passes import Tile
    reg.register(Tile)
    for text, canonical in examples:
        assert str(parse_pipeline(text, reg)) == canonical
    assert f"`{DEFAULT_PIPELINE}` today" in DOC


def test_compile_pipeline_in_the_docs(capsys):
    """The compile pipeline docs/passes.md shows is what `gir passes --default --target cuda` prints."""
    from gir.cli import main
    shown = re.search(r"\$ gir passes --default --target cuda --sizes M=4096,N=1024\n(.*)\n", DOC).group(1)
    assert main(["passes", "--default", "--target", "cuda", "--sizes", "M=4096,N=1024"]) == 0
    assert capsys.readouterr().out.strip() == shown
    assert str(parse_pipeline(shown)) == shown
