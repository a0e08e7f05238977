"""Pipeline text: parse → PassPipeline → canonical text, round trips, and located syntax errors."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gir.errors import GirError
from gir_test_passes import TEST_PASSES, Opts, Tile
from gir.passes.builtin.inline import InlineElementwise
from gir.passes.pipeline import DEFAULT_PIPELINE, PassPipeline, default_pipeline, parse_pipeline
from gir.passes.registry import Registry, registry


@pytest.fixture(scope="module")
def reg() -> Registry:
    r = Registry(registry())
    for cls in TEST_PASSES:
        r.register(cls)
    return r


@pytest.mark.parametrize("text", [
    "", "canonicalize", "canonicalize,cse,dce", "inline-elementwise{max_uses=2}",
    "opts{count=3 scale=0.25 flag=true level=global sizes=32,32}", "opts{sizes=7}", "opts{weights=[]}",
    'opts{level="a b" tags=x,"y,z","q\\"uote","back\\\\slash"}', "opts{scale=1e-05 weights=inf,-2.5}",
    "tile{sizes=32,32 unroll=true},tile{sizes=[]}", "opts{bits=true,false,true}",
])
def test_canonical_text_round_trips(reg, text):
    pipeline = parse_pipeline(text, reg)
    assert str(pipeline) == text
    assert parse_pipeline(str(pipeline), reg) == pipeline


@pytest.mark.parametrize("text, canonical", [
    ("  canonicalize ,  cse  ", "canonicalize,cse"),
    ("inline-elementwise{max_uses=1}", "inline-elementwise"),  # defaults are not printed
    ("inline-elementwise{ max-uses = 3 }", "inline-elementwise{max_uses=3}"),
    ("inline-elementwise {max_uses=3}", "inline-elementwise{max_uses=3}"),
    ("opts{count=3,sizes=32,32,flag=true}", "opts{count=3 flag=true sizes=32,32}"),
    ("opts{sizes=[32, 32],level=\"reg\"}", "opts{level=reg sizes=32,32}"),
    ("opts{sizes=32, 32 count=2}", "opts{count=2 sizes=32,32}"),
    ("opts{scale=2 weights=1}", "opts{scale=2.0 weights=1.0}"),
    ("opts{}", "opts"),
])
def test_parse_normalises(reg, text, canonical):
    assert str(parse_pipeline(text, reg)) == canonical


def test_values_are_typed(reg):
    (p,) = parse_pipeline("opts{count=-3 scale=2 flag=false level=42 sizes=1,2,3 tags=a,b bits=true}", reg)
    assert p == Opts(count=-3, scale=2.0, flag=False, level="42", sizes=(1, 2, 3), tags=("a", "b"), bits=(True,))
    assert isinstance(p.scale, float) and isinstance(p.level, str)


def test_pipeline_object(reg):
    p = parse_pipeline("canonicalize,inline-elementwise{max_uses=2},dce", reg)
    assert p.names() == ["canonicalize", "inline-elementwise", "dce"]
    assert p.passes[1] == InlineElementwise(max_uses=2)
    assert str(p.prefix(2)) == "canonicalize,inline-elementwise{max_uses=2}"
    assert len(p) == 3 and str(p.prefix(1) + p.prefix(1)) == "canonicalize,canonicalize"
    assert str(PassPipeline((Tile(sizes=(4,)),))) == "tile{sizes=4}"


def test_default_pipeline_uses_registered_passes():
    p = default_pipeline()
    assert str(p) == DEFAULT_PIPELINE
    assert all(name in registry() for name in p.names())


safe_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(count=st.integers(-2**40, 2**40), scale=st.floats(allow_nan=False), flag=st.booleans(),
       level=safe_text, sizes=st.lists(st.integers(0, 10**6), max_size=4).map(tuple),
       weights=st.lists(st.floats(allow_nan=False), max_size=3).map(tuple),
       tags=st.lists(safe_text, max_size=3).map(tuple))
def test_any_options_round_trip(reg, count, scale, flag, level, sizes, weights, tags):
    p = PassPipeline((Opts(count, scale, flag, level, sizes, weights, tags), InlineElementwise(3)))
    text = str(p)
    assert parse_pipeline(text, reg) == p
    assert str(parse_pipeline(text, reg)) == text


def _error(reg, text) -> GirError:
    with pytest.raises(GirError) as info:
        parse_pipeline(text, reg)
    return info.value


def _caret_col(formatted: str) -> int:
    caret_line = [line for line in formatted.splitlines() if line.strip().startswith("^")][0]
    return caret_line.index("^") - 2 + 1  # the source line is indented by two spaces


@pytest.mark.parametrize("text, col, message", [
    ("canonicalize,cse2", 14, "unknown pass 'cse2'"),
    ("canonicalize,,dce", 14, "expected a pass name, found ','"),
    ("cse,", 5, "expected a pass name, found end of pipeline"),
    ("cse dce", 5, "expected ',' between passes"),
    ("inline-elementwise{max_use=2}", 20, "pass 'inline-elementwise' has no option 'max_use'"),
    ("inline-elementwise{max_uses=two}", 29, "option 'max_uses' expects an int, got 'two'"),
    ("inline-elementwise{max_uses=1.5}", 29, "expects an int, got '1.5'"),
    ("inline-elementwise{max_uses=1,2}", 29, "option 'max_uses' takes one int, got 2 values"),
    ("inline-elementwise{max_uses=2", 30, "missing '}' after the options of pass 'inline-elementwise'"),
    ("inline-elementwise{", 20, "missing '}'"), ("opts{count=1 =", 14, "expected an option name or '}'"),
    ("inline-elementwise{max_uses 2}", 29, "expected '=' after option 'max_uses'"),
    ("inline-elementwise{max_uses=}", 29, "expected an option value"),
    ("inline-elementwise{max_uses=0}", 1, "invalid options for pass 'inline-elementwise': max_uses must be at least 1"),
    ("opts{flag=yes}", 11, "option 'flag' expects true or false, got 'yes'"),
    ("opts{count=1 count=2}", 14, "option 'count' given twice"),
    ("opts{sizes=[1,2}", 16, "expected ',' or ']' in a list"),
    ('opts{level="abc}', 12, "unterminated string"),
    ("opts{level=a,b}", 12, "option 'level' takes one str, got 2 values"),
    ("opts{count=1}x", 14, "expected ',' between passes or '{' for options"),
    ("tile", 1, "pass 'tile' requires option 'sizes'"), ("tile{unroll=true}", 1, "requires option 'sizes'"),
])
def test_errors_point_at_the_column(reg, text, col, message):
    err = _error(reg, text)
    formatted = err.format()
    assert message in err.message
    assert formatted.startswith(f"<pipeline>:1:{col}: error: ")
    assert f"  {text}" in formatted.splitlines()
    assert _caret_col(formatted) == col


def test_suggestions(reg):
    err = _error(reg, "canonicalise")
    assert "did you mean 'canonicalize'?" in err.format()
    assert "`gir passes` lists the available passes" in err.format()
    err = _error(reg, "inline-elementwise{maxuses=1}")
    assert "did you mean 'max_uses'?" in err.format()
    assert re.search(r"options of 'inline-elementwise': max_uses", err.format())
