"""Helpers shared by subcommands: loading and verifying files, size bindings, atomic writes."""
from __future__ import annotations

import re

from gir import ir
from gir.errors import UsageError
from gir.limits import MAX_SIZE, check_tensor_sizes
from gir.parser import parse_file


def load_verified(path: str, sizes: dict[str, int] | None = None) -> ir.Module:
    """Parse and verify a file ("-" reads standard input); raises GirError with diagnostics on bad input.
    With `sizes`, a binding of a name the file does not use is a usage error."""
    from gir.verifier import verify_module

    module = parse_file(path)
    verify_module(module)
    if sizes:
        check_sizes_used(module, sizes, path)
        from gir.views import complete_sizes

        for f in module.funcs:  # the derived sizes of reshape views, each division checked exact (located)
            complete_sizes(f, sizes)
    check_tensor_sizes(module, sizes or {})
    return module


def size_names(module: ir.Module) -> set[str]:
    """Every size a binding may give: symbolic dimensions of parameters and results, and names used as
    kernel attributes (`block = T`)."""
    from gir.views import user_sizes

    names = {s for f in module.funcs for s in user_sizes(f)}  # a reshape view's derived sizes are not given
    for f in module.funcs:
        for item in f.body:
            if isinstance(item, ir.Kernel):
                names.update(v for _, v in item.attrs if isinstance(v, str) and v.isidentifier())
    return names


def check_sizes_used(module: ir.Module, sizes: dict[str, int], path: str) -> None:
    known = size_names(module)
    unknown = [k for k in sizes if k not in known]
    if unknown:
        from gir.source import display_name

        have = ", ".join(sorted(known)) or "none: every shape is a literal"
        raise UsageError(f"--sizes binds {', '.join(repr(k) for k in unknown)}, which {display_name(path)} does "
                         f"not use (its sizes: {have})")




def pick_func(module: ir.Module, name: str | None, path: str) -> ir.Func:
    """The function `--func NAME` names (the first one without a name); GirError if there is none."""
    try:
        return module.func(name)
    except KeyError:
        raise UsageError(f"no function '{name}' in {path}") from None


_SIZE_ENTRY = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*([+-]?[0-9]{1,30})\s*", re.ASCII)


def parse_sizes(text: str | None) -> dict[str, int]:
    """`M=4,N=7` → {"M": 4, "N": 7}; a malformed, repeated, negative or absurd entry is a usage error (0 is an
    empty dimension, gir/empty.py)."""
    sizes: dict[str, int] = {}
    if not text:
        return sizes
    for part in text.split(","):
        m = _SIZE_ENTRY.fullmatch(part)
        if not m:
            raise UsageError(f"bad --sizes entry '{part}': expected NAME=INT (e.g. M=4,N=7)")
        key, value = m.group(1), int(m.group(2))
        if key in sizes:
            raise UsageError(f"bad --sizes entry '{part}': {key} is given twice")
        if value < 0:
            raise UsageError(f"size {key}={value} must be at least 0")
        if value > MAX_SIZE:
            raise UsageError(f"size {key}={value} is too large (at most 2^62)")
        sizes[key] = value
    return sizes


def output_path(value: str | None) -> str | None:
    """`-o` as given: None (not given), "-" (standard output); an empty name is a usage error."""
    if value is not None and not value.strip():
        raise UsageError("-o needs a file name ('-' for standard output)")
    return value
