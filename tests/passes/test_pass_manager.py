"""PassManager: verification after every pass, failure reports with reproducers, and the instruments."""
from __future__ import annotations

import argparse
import io
import re

import pytest

import gir
from gir.errors import GirError
from gir_test_passes import BreakIR, Crash, Identity
from gir.passes.base import PassContext
from gir.passes.builtin.canonicalize import Canonicalize
from gir.passes.builtin.dce import DeadCodeElimination
from gir.passes.builtin.inline import InlineElementwise
from gir.passes.instruments import (DumpIR, PassInstrument, PrintIR, TimePasses, add_arguments, instruments_from_args,
                                verify_each_from_args)
from gir.passes.manager import PassManager, reproducer
from gir.passes.pipeline import PassPipeline

PROGRAM = """
func f(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) {
  t[i, j]    = x[i, j] + b[j] * (2.0 * 0.5)
  dead[i, j] = exp(x[i, j])
  y[i, j]    = t[i, j] * 3.0
}
"""


@pytest.fixture
def module():
    return gir.parse_text(PROGRAM, "f.gir")


def _run(module, passes, instruments=(), **kw):
    return PassManager(PassPipeline(tuple(passes)), instruments, **kw).run(module, PassContext(filename="f.gir"))


def test_runs_in_order_and_counts(module):
    ctx = PassContext()
    out = PassManager("canonicalize,dce,inline-elementwise").run(module, ctx)
    assert gir.print_module(out).splitlines()[1] == "  y[i, j] = (x[i, j] + b[j]) * 3.0"
    assert ctx.statistics == {"canonicalize.rewrites": 2, "dce.removed": 1, "inline-elementwise.inlined": 1}


def test_broken_ir_names_the_pass_and_a_reproducer(module):
    with pytest.raises(GirError) as info:
        _run(module, [Canonicalize(), BreakIR(), DeadCodeElimination()])
    text = info.value.format()
    assert "error: pass 'break-ir' produced invalid IR: undefined tensor 'undefined_tensor'" in text.splitlines()[0]
    assert "  note: reproduce: gir opt f.gir --passes 'canonicalize,break-ir'" in text.splitlines()


def test_verification_can_be_disabled(module):
    out = _run(module, [BreakIR()], verify_each=False)
    assert "undefined_tensor" in gir.print_module(out)


def test_crash_is_reported_with_its_site(module):
    with pytest.raises(GirError) as info:
        _run(module, [Identity(), InlineElementwise(max_uses=2), Crash()])
    lines = info.value.format().splitlines()
    assert lines[0] == "error: pass 'crash' failed with an internal error: RuntimeError: boom"
    assert re.fullmatch(r"  note: raised at .*gir_test_passes.py:\d+ in apply", lines[1])
    assert lines[2] == "  note: reproduce: gir opt f.gir --passes 'identity,inline-elementwise{max_uses=2},crash'"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_invalid_input_is_blamed_on_the_input(module):
    broken = BreakIR().apply(PassContext(), module)
    with pytest.raises(GirError) as info:
        _run(broken, [Identity()])
    assert "pass '" not in info.value.format() and "undefined tensor" in info.value.format()


def test_reproducer_quoting():
    assert reproducer(None, PassPipeline((Identity(),))) == "gir opt FILE --passes 'identity'"
    assert reproducer("my file.gir", PassPipeline(())) == "gir opt 'my file.gir' --passes ''"


class Recorder(PassInstrument):
    def __init__(self):
        self.events = []

    def enter_pipeline(self, ctx, pipeline, module):
        self.events.append(("enter", len(pipeline)))

    def run_before_pass(self, ctx, pass_, index, module):
        self.events.append(("before", pass_.name, index))

    def run_after_pass(self, ctx, pass_, index, before, after, seconds):
        self.events.append(("after", pass_.name, index, before != after))

    def run_after_verify(self, ctx, pass_, index, seconds):
        self.events.append(("verified", index))

    def exit_pipeline(self, ctx, module):
        self.events.append(("exit",))


def test_hook_order(module):
    rec = Recorder()
    _run(module, [Identity(), DeadCodeElimination()], [rec])
    assert rec.events == [("enter", 2), ("before", "identity", 1), ("after", "identity", 1, False), ("verified", 1),
                          ("before", "dce", 2), ("after", "dce", 2, True), ("verified", 2), ("exit",)]


def test_exit_hook_runs_on_failure(module):
    rec = Recorder()
    with pytest.raises(GirError):
        _run(module, [BreakIR()], [rec])
    assert rec.events[-2:] == [("after", "break-ir", 1, True), ("exit",)]


def _dumps(text: str) -> list[tuple[str, str]]:
    """Split printed IR into (header, module text) pairs; each module must parse."""
    parts = re.split(r"^(# ----- IR .*)$", text, flags=re.M)[1:]
    return [(parts[k], parts[k + 1]) for k in range(0, len(parts), 2)]


def test_print_ir_after_selected_and_changed(module):
    stream = io.StringIO()
    passes = [Canonicalize(), Identity(), DeadCodeElimination(), Identity()]
    _run(module, passes, [PrintIR(after=["identity"], stream=stream)])
    headers = [h for h, _ in _dumps(stream.getvalue())]
    assert headers == ["# ----- IR after 'identity' (pass 2 of 4) -----", "# ----- IR after 'identity' (pass 4 of 4) -----"]
    stream = io.StringIO()
    _run(module, passes, [PrintIR(only_changed=True, stream=stream)])
    dumps = _dumps(stream.getvalue())
    assert [h for h, _ in dumps] == ["# ----- IR after 'canonicalize' (pass 1 of 4) -----",
                                     "# ----- IR after 'dce' (pass 3 of 4) -----"]
    assert gir.parse_text(dumps[1][1]) == _run(module, passes[:3])


def test_print_ir_before_and_after_all(module):
    stream = io.StringIO()
    _run(module, [Identity(), DeadCodeElimination()], [PrintIR(after_all=True, before=["dce"], stream=stream)])
    headers = [h for h, _ in _dumps(stream.getvalue())]
    assert headers == ["# ----- IR after 'identity' (pass 1 of 2) -----", "# ----- IR before 'dce' (pass 2 of 2) -----",
                       "# ----- IR after 'dce' (pass 2 of 2) -----"]


def test_time_passes(module):
    stream = io.StringIO()
    timer = TimePasses(stream)
    _run(module, [Canonicalize(), InlineElementwise(max_uses=2)], [timer])
    assert [label for label, _ in timer.timings] == ["canonicalize", "inline-elementwise{max_uses=2}"]
    assert all(s >= 0 for _, s in timer.timings) and timer.verify_runs == 2
    report = stream.getvalue().splitlines()
    assert report[0] == "# pass timing report (wall clock)"
    assert re.fullmatch(r"#\s+[\d.]+\s+[\d.]+\s+inline-elementwise\{max_uses=2\}", report[3])
    assert re.fullmatch(r"#\s+[\d.]+\s+100\.0\s+total", report[-1])


def test_dump_ir(module, tmp_path):
    dump = DumpIR(tmp_path / "dump")
    passes = [Canonicalize(), DeadCodeElimination(), InlineElementwise()]
    out = _run(module, passes, [dump])
    names = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert names == ["00-input.gir", "01-canonicalize.gir", "02-dce.gir", "03-inline-elementwise.gir"]
    assert gir.parse_file(tmp_path / "dump" / "00-input.gir") == module
    assert gir.parse_file(tmp_path / "dump" / "02-dce.gir") == _run(module, passes[:2])
    assert gir.parse_file(tmp_path / "dump" / "03-inline-elementwise.gir") == out


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_instrument_flags():
    assert instruments_from_args(_args()) == [] and verify_each_from_args(_args())
    (p, d, t) = instruments_from_args(_args("--print-ir-after=cse,dce", "--print-ir-after", "canonicalize",
                                            "--print-ir-after-change", "--dump-ir", "out", "--time-passes"))
    assert isinstance(p, PrintIR) and p.after == {"cse", "dce", "canonicalize"} and p.only_changed
    assert not p.after_all and isinstance(d, DumpIR) and isinstance(t, TimePasses)
    (p,) = instruments_from_args(_args("--print-ir-after-all", "--print-ir-before=dce"))
    assert p.after_all and p.before == {"dce"}
    assert not verify_each_from_args(_args("--no-verify-each"))


def test_instrument_flags_check_pass_names():
    with pytest.raises(GirError) as info:
        instruments_from_args(_args("--print-ir-after=cse,dcee"))
    assert "unknown pass 'dcee'" in info.value.format() and "did you mean 'dce'?" in info.value.format()
