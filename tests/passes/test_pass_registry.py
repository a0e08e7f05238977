"""Discovery through the `gir.passes` entry-point group, origins, and the duplicate-name error."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from gir.errors import GirError
from gir_test_passes import Identity, Opts
from gir.passes.base import ModulePass, check_pass_class
from gir.passes.registry import Registry, registry

BUILTINS = {
    "canonicalize": "gir.passes.builtin.canonicalize:Canonicalize",
    "cse": "gir.passes.builtin.cse:CommonSubexpressionElimination",
    "dce": "gir.passes.builtin.dce:DeadCodeElimination",
    "inline-elementwise": "gir.passes.builtin.inline:InlineElementwise",
}


def test_builtins_come_from_our_entry_points():
    reg = Registry.discover()
    for name, target in BUILTINS.items():
        info = reg.get(name)
        assert info.distribution == "gir-compiler" and info.entry_point == target
        assert info.origin.startswith("gir-compiler ")
        assert info.cls.name == name and info.cls.summary() != "(no description)"


def test_builtin_options_are_declared():
    (spec,) = registry().get("inline-elementwise").cls.options()
    assert (spec.name, spec.type_text, spec.default, spec.required) == ("max_uses", "int", 1, False)
    assert registry().get("dce").cls.options() == ()


def test_plugin_is_discovered(plugin):
    reg = Registry.discover()
    info = reg.get("strength-reduce")
    assert (info.distribution, info.version) == ("gir-plugin-example", "0.1.0")
    assert info.origin == "gir-plugin-example 0.1.0"
    assert info.cls.__module__ == "gir_plugin_example.strength_reduce"
    assert {s.name: s.default for s in info.cls.options()} == {"max_pow": 4, "exact_only": True}
    assert set(BUILTINS) <= set(reg.names())  # plugins add to the built-ins
    assert "strength-reduce" in registry()  # the process-wide registry sees it too


def test_duplicate_name_names_both_origins(plugin, fake_dists):
    fake_dists("evil-plugin", {"strength-reduce": "gir_test_passes:Identity"}, "2.3")
    with pytest.raises(GirError) as info:
        Registry.discover()
    message = info.value.format()
    assert "pass name 'strength-reduce' is registered more than once" in message
    assert "gir-plugin-example 0.1.0 (entry point strength-reduce = gir_plugin_example" in message
    assert "evil-plugin 2.3 (entry point strength-reduce = gir_test_passes:Identity)" in message


def test_duplicate_of_a_builtin(fake_dists):
    fake_dists("shadow", {"cse": "gir_test_passes:Identity"})
    with pytest.raises(GirError, match=r"'cse' is registered more than once: by gir-compiler .* and by shadow 1.0"):
        Registry.discover()


def test_entry_point_name_must_match_the_class(fake_dists):
    fake_dists("liar", {"renamed": "gir_test_passes:Identity"})
    with pytest.raises(GirError, match="entry point 'renamed' of liar 1.0 .* names a pass called 'identity'"):
        Registry.discover()


def test_broken_plugin_names_itself(fake_dists):
    fake_dists("broken", {"nothing": "no_such_module_anywhere:Pass"})
    with pytest.raises(GirError, match="cannot load pass 'nothing' from broken 1.0 .*ModuleNotFoundError"):
        Registry.discover()


def test_entry_point_must_be_a_pass(fake_dists):
    fake_dists("notapass", {"dict": "builtins:dict"})
    with pytest.raises(GirError, match="invalid pass from notapass 1.0 .* not a subclass of passes.base.ModulePass"):
        Registry.discover()


class NotFrozen(ModulePass):
    name: ClassVar[str] = "not-frozen"

    def apply(self, ctx, module):
        return module


@dataclass(frozen=True)
class NoApply(ModulePass):
    name: ClassVar[str] = "no-apply"


@dataclass(frozen=True)
class BadName(Identity):
    name: ClassVar[str] = "bad name"


@dataclass(frozen=True)
class BadOption(Identity):
    name: ClassVar[str] = "bad-option"
    table: dict = None


@pytest.mark.parametrize("cls, problem", [
    (NotFrozen, "must be decorated with @dataclass(frozen=True)"), (NoApply, "does not implement apply"),
    (BadName, "is not a valid pass name"), (BadOption, "option 'table' has unsupported type"),
])
def test_malformed_pass_classes(cls, problem):
    with pytest.raises(GirError, match="invalid pass from here: .*" + problem.replace("(", r"\(").replace(")", r"\)")):
        check_pass_class(cls, "here")


def test_local_registry_and_lookup_errors():
    reg = Registry()
    reg.register(Opts)
    reg.register(Opts)  # the same class again is harmless
    assert reg.names() == ["opts"] and "opts" in reg and len(reg) == 1

    @dataclass(frozen=True)
    class Other(Identity):
        name: ClassVar[str] = "opts"
    with pytest.raises(GirError, match="'opts' is registered more than once"):
        reg.register(Other)
    with pytest.raises(GirError) as info:
        reg.get("opt")
    assert "did you mean 'opts'?" in info.value.format()
