"""The on-disk compile cache behind gir.compile (gir/cache.py) and `gir cache info|clear`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gir
from gir import cache
from gir.cli import main

from .common import SOFTMAX, TWO, assert_matches, normal

SIZES = {"M": 6, "N": 40}


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "compile").glob("*.json"))


def only_program(kernel):
    (program,) = kernel.programs.values()
    return program


@pytest.mark.parametrize("target", ["sim", "mlu-sim", "cuda"])
def test_second_compile_loads_from_the_cache(cache_dir, target):
    first = only_program(gir.compile(SOFTMAX, target=target, sizes=SIZES))
    assert not first.from_cache and len(entries(cache_dir)) == 1
    hits = cache.stats["hits"]
    second = only_program(gir.compile(SOFTMAX, target=target, sizes=SIZES))
    assert second.from_cache and second.key == first.key and cache.stats["hits"] == hits + 1
    assert len(entries(cache_dir)) == 1
    from gir.printer import print_module
    from gir import ir

    assert print_module(ir.Module((second.explicit,))) == print_module(ir.Module((first.explicit,)))
    assert [(k.name, k.source, k.meta) for k in second.kernels] == [(k.name, k.source, k.meta) for k in first.kernels]


@pytest.mark.parametrize("target", ["sim", "mlu-sim"])
def test_a_cached_program_computes_the_same(target):
    x = normal((6, 40), seed=7)
    fresh = gir.compile(SOFTMAX, target=target, sizes=SIZES)
    cached = gir.compile(SOFTMAX, target=target, sizes=SIZES)
    assert only_program(cached).from_cache
    assert_matches(cached, {"x": x}, cached(x))
    np.testing.assert_array_equal(fresh(x), cached(x))


def test_a_binding_from_the_first_call_is_cached_too(cache_dir):
    x = normal((3, 17), seed=8)
    gir.compile(TWO, target="sim")(x, normal((17,), seed=9))
    k = gir.compile(TWO, target="sim")
    k(x, normal((17,), seed=10))
    assert only_program(k).from_cache and len(entries(cache_dir)) == 1


def key_of(source=SOFTMAX.read_text(), target="sim", sizes=SIZES, **options):
    return only_program(gir.compile(source, target=target, sizes=sizes, cache=True, **options)).key


def test_the_key_changes_with_sizes_target_source_and_options(cache_dir):
    base = key_of()
    assert key_of() == base
    others = [key_of(sizes={"M": 6, "N": 41}), key_of(target="cuda"), key_of(target="mlu-sim"),
              key_of(source=SOFTMAX.read_text().replace("sum(", "sum (")), key_of(machine="a100"),
              key_of(check=False), key_of(target="cuda", index_type="int64")]
    assert base not in others and len(set(others)) == len(others)
    assert len(entries(cache_dir)) == 1 + len(others)


def test_the_key_covers_compiler_and_machine():
    args = ("src", "sim", "f", {"M": 2}, {"check": True})
    assert cache.key(*args, {"name": "H100"}) != cache.key(*args, {"name": "A100"})
    assert cache.key(*args, {"name": "H100"}) == cache.key(*args, {"name": "H100"})
    assert "+" in cache.compiler_fingerprint()  # version + source hash


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other-key", "other-format", "empty"])
def test_a_corrupt_entry_is_a_miss_and_is_rewritten(cache_dir, damage):
    key = only_program(gir.compile(SOFTMAX, target="sim", sizes=SIZES)).key
    path = cache_dir / "compile" / f"{key}.json"
    text = path.read_text()
    entry = json.loads(text)
    path.write_text({"truncate": text[: len(text) // 2], "garbage": "\x00\xff not json",
                     "other-key": json.dumps({**entry, "key": "0" * 64}),
                     "other-format": json.dumps({**entry, "format": 999}),
                     "empty": json.dumps({**entry, "explicit": ""})}[damage])
    again = only_program(gir.compile(SOFTMAX, target="sim", sizes=SIZES))
    assert not again.from_cache
    assert json.loads(path.read_text())["key"] == key  # replaced by a whole entry
    assert only_program(gir.compile(SOFTMAX, target="sim", sizes=SIZES)).from_cache


def test_cache_false_neither_reads_nor_writes(cache_dir):
    k = gir.compile(SOFTMAX, target="sim", sizes=SIZES, cache=False)
    assert only_program(k).key is None and entries(cache_dir) == []


def test_an_unwritable_cache_only_costs_a_compilation(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("GIR_CACHE_DIR", str(blocker))
    k = gir.compile(SOFTMAX, target="sim", sizes=SIZES)
    x = normal((6, 40), seed=11)
    assert_matches(k, {"x": x}, k(x))


def test_cache_dir_location(tmp_path, monkeypatch):
    assert cache.cache_dir() == Path(os.environ["GIR_CACHE_DIR"])
    monkeypatch.delenv("GIR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache.cache_dir() == tmp_path / "xdg" / "gir"
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert cache.cache_dir() == tmp_path / "home" / ".cache" / "gir"


WORKER = """
import sys, gir
k = gir.compile(sys.argv[1], target="sim", sizes={"M": 6, "N": 40})
(p,) = k.programs.values()
print(p.key, p.from_cache)
"""


def test_concurrent_compiles_leave_one_valid_entry(cache_dir):
    env = {**os.environ, "GIR_CACHE_DIR": str(cache_dir)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(SOFTMAX)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    keys = {out.split()[0] for out, _ in outs}
    assert len(keys) == 1
    (entry,) = entries(cache_dir)
    assert entry.stem == keys.pop() and json.loads(entry.read_text())["explicit"].startswith("func softmax")
    assert not [f for f in (cache_dir / "compile").iterdir() if f.suffix != ".json"]  # no temporaries left
    assert only_program(gir.compile(SOFTMAX, target="sim", sizes=SIZES)).from_cache


def test_gir_cache_info_and_clear(cache_dir, capsys):
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"path:    {cache_dir}" in out and "entries: 0" in out and "bytes:   0" in out
    gir.compile(SOFTMAX, target="sim", sizes=SIZES)
    gir.compile(SOFTMAX, target="cuda", sizes=SIZES)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    size = sum(p.stat().st_size for p in entries(cache_dir))
    assert "entries: 2" in out and f"bytes:   {size}" in out and size > 0
    (cache_dir / "unrelated.txt").write_text("not ours")
    assert main(["cache", "clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert entries(cache_dir) == [] and (cache_dir / "unrelated.txt").exists()
    assert not only_program(gir.compile(SOFTMAX, target="sim", sizes=SIZES)).from_cache
    assert main(["cache", "clear"]) == 0 and "removed 1 entry" in capsys.readouterr().out


def test_gir_cache_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["cache", "purge"])
    assert e.value.code == 2
