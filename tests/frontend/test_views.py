"""Reshape views of parameters (gir/views.py, docs/gir.md "Views"): text round trip, size errors located at the
view, seeded random split/merge views against numpy on the evaluator and the SIMT simulator, and gir.compile /
gir eval / gir run with arrays in the declared (external) shape."""
from __future__ import annotations

import io
import zlib

import numpy as np
import pytest

import gir
from gir import ir
from gir.errors import GirError
from gir.evaluate import evaluate
from gir.parser import parse_text
from gir.printer import print_module
from gir.verdict import compare
from gir.verifier import verify_module

GN = """
func gn(x: f32[N, C, H, W] as [N, G, C / G, H * W], w: f32[C] as [G, C / G]) -> (y: f32[N, C, H, W] as [N, G, C / G, H * W]) {
  m[n, g] = mean(x[n, g, c, s])
  y[n, g, c, s] = (x[n, g, c, s] - m[n, g]) * w[g, c]
}
"""


def _gn_ref(x, w, g):
    n, c = x.shape[:2]
    xv = x.astype(np.float64).reshape(n, g, c // g, -1)
    y = (xv - xv.mean(axis=(2, 3), keepdims=True)) * w.astype(np.float64).reshape(g, c // g)[None, :, :, None]
    return y.reshape(x.shape)


# ------------------------------------------------------------------------------------------------ text
@pytest.mark.parametrize("sig", [
    "x: f32[N, C, H, W] as [N, G, C / G, H * W]",
    "x: f16[A, B, D] as [A * B * D]",
    "x: f32[12, K] as [3, 4, K]",
    "x: f32[A, B] as [A * B / S, S]",
    "x: f32[A, B] as [A / (S * 2), S * 2 * B]",
    "x: bf16[A] as [S, A / S]",
])
def test_round_trip(sig):
    text = f"func f({sig}) -> (y: f32[]) {{\n  y[] = sum(f32(x[{', '.join('ijklm'[:sig.split('as [')[1].count(',') + 1])}]))\n}}\n"
    module = parse_text(text)
    verify_module(module)
    printed = print_module(module)
    assert printed == text
    assert parse_text(printed) == module
    assert print_module(parse_text(printed)) == printed


def test_view_type_and_derived_sizes():
    from gir.views import derived_sizes, user_sizes

    f = parse_text(GN).funcs[0]
    x = f.params[0]
    assert x.type.shape == ("N", "G", "C_div_G", "H_mul_W")       # the body's type
    assert x.view.outer.shape == ("N", "C", "H", "W")              # the declared one
    assert set(derived_sizes(f)) == {"C_div_G", "H_mul_W"}
    assert set(user_sizes(f)) == {"N", "C", "H", "W", "G"}
    # a parameter without a view is unchanged
    plain = parse_text("func f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}\n").funcs[0]
    assert plain.params[0].view is None


# ------------------------------------------------------------------------------------------- size errors
def _error(fn) -> str:
    with pytest.raises(GirError) as exc:
        fn()
    text = exc.value.format() if hasattr(exc.value, "format") else str(exc.value)
    assert "Traceback" not in text
    return text


def test_inexact_division_is_located_at_the_view():
    f = parse_text(GN, "gn.gir").funcs[0]
    x = np.ones((2, 10, 3, 5), np.float32)
    w = np.ones(10, np.float32)
    text = _error(lambda: evaluate(f, {"x": x, "w": w}, {"G": 4}))
    assert "gn.gir:2:38" in text and "C = 10 is not divisible by G = 4" in text and "^" in text


def test_missing_view_size_is_named():
    f = parse_text(GN, "gn.gir").funcs[0]
    x = np.ones((2, 8, 3, 5), np.float32)
    text = _error(lambda: evaluate(f, {"x": x, "w": np.ones(8, np.float32)}))
    assert "needs the size G" in text


def test_wrong_external_shape():
    f = parse_text(GN, "gn.gir").funcs[0]
    x = np.ones((2, 8, 3, 5), np.float32)
    text = _error(lambda: evaluate(f, {"x": x, "w": np.ones(6, np.float32)}, {"G": 2}))
    assert "'w'" in str(text)


# ------------------------------------------------------------------------- random split / merge views
_EXTENTS = (1, 2, 3, 5, 6, 7, 12)


def _random_case(seed: int):
    """(GIR text, sizes, outer shape, view shape, dtype): x viewed by random splits of its axes into (S, A / S)
    (S a size or a literal divisor) and random merges of neighbouring view axes; y = x - mean over the last view
    axis (rank 1: 2 x), y viewed as x."""
    rng = np.random.default_rng(seed)
    names = ["A", "B", "D"][: int(rng.integers(1, 4))]
    sizes: dict[str, int] = {}
    dims: list[tuple[str, int]] = []   # (view dim text, value)
    for k, n in enumerate(names):
        v = int(rng.choice(_EXTENTS))
        sizes[n] = v
        divisors = [d for d in range(1, v + 1) if v % d == 0]
        if rng.random() < 0.6:
            f = int(rng.choice(divisors))
            if rng.random() < 0.5:
                s = f"S{k}"
                sizes[s] = f
                dims += [(s, f), (f"{n} / {s}", v // f)]
            else:
                dims += [(f"{n} / {f}", v // f), (str(f), f)]
        else:
            dims.append((n, v))
    merged: list[tuple[str, int]] = [dims[0]]
    for text, v in dims[1:]:
        if rng.random() < 0.4:
            t0, v0 = merged.pop()
            merged.append((f"{t0} * ({text})" if "/" in text else f"{t0} * {text}", v0 * v))
        else:
            merged.append((text, v))
    dtype = str(rng.choice(["f32", "f16", "f64"]))
    outer = f"{dtype}[{', '.join(names)}]"
    view = f"[{', '.join(t for t, _ in merged)}]"
    idx = [f"i{k}" for k in range(len(merged))]
    if len(idx) == 1:
        body = "  y[i0] = x[i0] * 2.0\n"
    else:
        body = (f"  mu[{', '.join(idx[:-1])}] = mean(x[{', '.join(idx)}])\n"
                f"  y[{', '.join(idx)}] = x[{', '.join(idx)}] - mu[{', '.join(idx[:-1])}]\n")
    text = f"func v(x: {outer} as {view}) -> (y: {outer} as {view}) {{\n{body}}}\n"
    return text, sizes, tuple(sizes[n] for n in names), tuple(v for _, v in merged), ir.DType(dtype)


def _numpy_ref(x: np.ndarray, view: tuple[int, ...]) -> np.ndarray:
    xv = x.astype(np.float64).reshape(view)
    y = xv * 2.0 if len(view) == 1 else xv - xv.mean(axis=-1, keepdims=True)
    return y.reshape(x.shape)


def _input(shape, dtype: ir.DType, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype.numpy)


@pytest.mark.parametrize("seed", range(40))
def test_random_views_on_the_evaluator(seed):
    text, sizes, outer, view, dtype = _random_case(seed)
    module = parse_text(text)
    verify_module(module)
    assert parse_text(print_module(module)) == module
    x = _input(outer, dtype, zlib.crc32(text.encode()))
    user = {k: v for k, v in sizes.items() if k.startswith("S")}   # view-only sizes; the rest come from x
    got = evaluate(module.funcs[0], {"x": x}, user)["y"]
    assert got.shape == outer and got.dtype == dtype.numpy
    v = compare(got, _numpy_ref(x, view), dtype)
    assert v.passed, (text, v)


@pytest.mark.parametrize("seed", [1, 4, 7, 11, 23, 31])
def test_random_views_on_sim(seed):
    text, sizes, outer, view, dtype = _random_case(seed)
    if dtype == ir.DType.f64:
        dtype = ir.DType.f32
        text = text.replace("f64[", "f32[")
    x = _input(outer, dtype, seed)
    user = {k: v for k, v in sizes.items() if k.startswith("S")}
    kernel = gir.compile(text, target="sim", sizes=user or None, cache=False)
    got = kernel(x)
    assert got.shape == outer
    v = compare(got, _numpy_ref(x, view), dtype)
    assert v.passed, (text, v)


# ------------------------------------------------------------------------------------- the boundary
def test_gir_compile_takes_and_returns_external_shapes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 5, 7)).astype(np.float32)
    w = rng.standard_normal(6).astype(np.float32)
    kernel = gir.compile(GN, target="sim", sizes={"G": 3}, cache=False)
    y = kernel(x, w)
    assert y.shape == x.shape
    assert compare(y, _gn_ref(x, w, 3), ir.DType.f32).passed
    out = np.full_like(x, np.nan)
    assert kernel(x, w, out=out) is out
    assert compare(out, _gn_ref(x, w, 3), ir.DType.f32).passed
    with pytest.raises(GirError, match="not divisible by G = 3"):
        kernel(np.ones((2, 7, 5, 7), np.float32), np.ones(7, np.float32))
    with pytest.raises(GirError, match=r"argument 'w': expected f32\[6\]"):
        kernel(x, np.ones(5, np.float32))


def test_gir_compile_refuses_derived_sizes_as_bindings():
    with pytest.raises(GirError, match="does not use"):
        gir.compile(GN, target="sim", sizes={"C_div_G": 2}, cache=False)


def test_cli_eval_and_run_use_external_shapes(tmp_path):
    from gir.cli import main

    src = tmp_path / "gn.gir"
    src.write_text(GN)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 4, 3, 2)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    buf = io.BytesIO()
    np.savez(buf, x=x, w=w)
    (tmp_path / "in.npz").write_bytes(buf.getvalue())
    out = tmp_path / "out.npz"
    assert main(["eval", str(src), "--sizes", "G=2", "--inputs", str(tmp_path / "in.npz"), "-o", str(out)]) == 0
    with np.load(out) as data:
        assert data["y"].shape == x.shape
        assert compare(data["y"], _gn_ref(x, w, 2), ir.DType.f32).passed
    assert main(["run", str(src), "--target", "sim", "--sizes", "G=2", "--inputs", str(tmp_path / "in.npz")]) == 0
    assert main(["run", str(src), "--target", "sim", "--sizes", "N=2,C=6,H=3,W=1,G=3"]) == 0
    assert main(["check", str(src)]) == 0
    # an inexact view at the sizes given: a located error, exit status 1
    assert main(["eval", str(src), "--sizes", "N=2,C=6,H=3,W=1,G=4"]) == 1


def test_gir_compile_on_mlu_sim_with_external_shapes():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 6, 1, 7)).astype(np.float32)
    w = rng.standard_normal(6).astype(np.float32)
    y = gir.compile(GN, target="mlu-sim", sizes={"G": 2}, cache=False)(x, w)
    assert y.shape == x.shape
    assert compare(y, _gn_ref(x, w, 2), ir.DType.f32).passed


def test_launch_metadata_says_how_derived_sizes_are_computed():
    """A kernel of a function with views takes the derived sizes as arguments: the metadata gives each one's
    expression over the caller's sizes, and each viewed tensor's declared shape."""
    from gir.codegen import emit_func
    from gir.codegen.launch import eval_size_expr
    from gir.parser import parse_file
    from gir.passes.schedule import lower_func
    from gir.views import complete_sizes
    func = parse_file("samples/group_norm_view.gir").funcs[0]
    user = {"N": 2, "C": 12, "H": 3, "W": 5}
    full = complete_sizes(func, dict(user))
    (k, *_) = emit_func(lower_func(func, "cuda", {"sizes": full}), "cuda")
    args = {a["name"]: a for a in k.meta["args"]}
    values = {n: a["value"] for n, a in args.items() if a["kind"] == "size" and "value" in a}
    assert values and all(eval_size_expr(v, user) == full[n] for n, v in values.items())
    assert args["x"]["declared_shape"] == ["N", "C", "H", "W"] and "declared_shape" not in args["N"]


def test_two_statements_over_a_merged_view_run_from_the_command_line(tmp_path, capsys):
    """The MLU tile recipe merges viewed axes ([N, 4, C / 4, H * W] -> [8, 30]): the scheduled function's view
    types are concrete (they failed its final check: "view of 'x' has 240 elements, its declared type C * H * N
    * W") and `gir run` hands the simulators the arrays in the scheduled shapes."""
    from gir.cli import main
    path = tmp_path / "v.gir"
    path.write_text("func f(x: f32[N, C, H, W] as [N, 4, C / 4, H * W]) -> (y: f32[N, 4]) {\n"
                    "  t[n, g] = max(x[n, g, c, s])\n  y[n, g] = sum(x[n, g, c, s] - t[n, g])\n}\n")
    for target in ("mlu-sim", "sim"):
        assert main(["run", str(path), "--target", target, "--sizes", "N=2,C=8,H=3,W=5"]) == 0
        assert "pass" in capsys.readouterr().out


def test_a_literal_factor_in_a_view(tmp_path, capsys):
    """`x: f32[2, N] as [2 * N]`: the derived size of a leading literal factor is an identifier (`n2_mul_N`; it was
    `2_mul_N`, which the search's printed GIR could not parse back: every target failed)."""
    from gir.cli import main
    path = tmp_path / "v.gir"
    path.write_text("func f(x: f32[2, N] as [2 * N], w: f32[3, N, 2] as [3 * N * 2]) -> (y: f32[2, N] as [2 * N], "
                    "s: f32[]) {\n  y[i] = x[i] * 2.0\n  s[] = sum(w[k])\n}\n")
    for target in ("sim", "mlu-sim"):
        for n in (1, 5, 1031):
            assert main(["run", str(path), "--target", target, "--sizes", f"N={n}"]) == 0
            out = capsys.readouterr().out
            assert out.count("pass") == 2, out
