"""Numeric checks of every operator-layer program in samples/ against hand-written numpy references.

Each sample is parsed, run by the reference evaluator on fresh random inputs for every size binding listed in
tests/sample_refs.py, and compared with the float64 numpy reference (relative error in the 2-norm).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sample_refs import INPUT_MAKERS, REFERENCES  # noqa: E402

from gir.views import outer_type  # noqa: E402

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples"
SAMPLE_FILES = sorted(SAMPLES_DIR.glob("*.gir"))

# Relative-error bounds by (compute dtype, declared result width).
TOL = {
    (np.float64, "f32"): 1e-6,  # only the final rounding to f32 separates evaluator and reference
    (np.float64, "16"): 1e-2,
    (np.float32, "f32"): 1e-5,
    (np.float32, "16"): 1e-2,
    (np.float64, "f64"): 1e-12,  # an f64 result of the f64 evaluator: summation order only
    (np.float32, "f64"): 1e-5,   # the evaluator's f32 mode computes f64 values in f32 too
}


def _cases():
    for path in SAMPLE_FILES:
        entry = REFERENCES.get(path.stem)
        sizes_list = entry[1] if entry else [None]
        for k, sizes in enumerate(sizes_list):
            yield pytest.param(path, sizes, id=f"{path.stem}-{k}")


def _dims(shape, sizes) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else int(sizes[str(d)]) for d in shape)


def _random_input(dtype, shape, rng) -> np.ndarray:
    np_dtype = np.dtype(dtype.numpy)
    if np_dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if np.issubdtype(np_dtype, np.integer):
        return np.asarray(rng.integers(1, 10, size=shape), dtype=np_dtype)
    values = rng.standard_normal(shape)
    values[values == 0.0] = 0.5  # never zeros
    return np.asarray(values).astype(np_dtype)


def _make_inputs(name, func, sizes, rng) -> dict[str, np.ndarray]:
    makers = INPUT_MAKERS.get(name, {})
    inputs = {}
    for param in func.params:
        shape = _dims(outer_type(param).shape, sizes)  # a reshape view's input in its declared shape
        if param.name in makers:
            value = np.asarray(makers[param.name](shape, sizes, rng), dtype=np.dtype(param.type.dtype.numpy))
        else:
            value = _random_input(param.type.dtype, shape, rng)
        inputs[param.name] = value
    return inputs


def _reference(name, inputs):
    ref_fn = REFERENCES[name][0]
    return ref_fn(**{k: v.copy() for k, v in inputs.items()})


def _width(np_dtype) -> str:
    return {2: "16", 8: "f64"}.get(np.dtype(np_dtype).itemsize, "f32")


def _rel_err(out: np.ndarray, ref: np.ndarray) -> float:
    diff = np.linalg.norm((out.astype(np.float64) - ref).ravel())
    scale = np.linalg.norm(ref.ravel())
    return float(diff / scale) if scale > 0 else float(diff)


def _run_and_compare(path: Path, sizes, compute_dtype):
    import gir
    import gir.evaluate

    name = path.stem
    assert name in REFERENCES, f"samples/{path.name} has no entry in tests/sample_refs.py REFERENCES"
    module = gir.parse_file(str(path))
    func = module.funcs[0]
    rng = np.random.default_rng(zlib.crc32(f"{name}:{sorted(sizes.items())}".encode()))
    inputs = _make_inputs(name, func, sizes, rng)
    outputs = gir.evaluate.evaluate(
        func, {k: v.copy() for k, v in inputs.items()}, sizes=None, compute_dtype=compute_dtype
    )
    refs = _reference(name, inputs)
    assert set(outputs) == set(refs), f"{name}: results {sorted(outputs)} != reference {sorted(refs)}"

    declared = {r.name: outer_type(r) for r in getattr(func, "results", ())}
    for out_name, ref in refs.items():
        out = np.asarray(outputs[out_name])
        ref = np.asarray(ref)
        where = f"{name}.{out_name} sizes={sizes} compute={np.dtype(compute_dtype).name}"
        if out_name in declared:
            rtype = declared[out_name]
            want_dtype = np.dtype(rtype.dtype.numpy)
            assert out.dtype == want_dtype, f"{where}: dtype {out.dtype} != declared {want_dtype}"
            assert out.shape == _dims(rtype.shape, sizes), f"{where}: shape {out.shape}"
        assert out.shape == ref.shape, f"{where}: shape {out.shape} != reference {ref.shape}"
        if out.dtype == np.bool_ or np.issubdtype(out.dtype, np.integer):
            mismatches = int(np.count_nonzero(out.astype(np.int64) != ref.astype(np.int64)))
            assert mismatches == 0, f"{where}: {mismatches} mismatching elements"
            continue
        out64 = out.astype(np.float64)
        assert np.all(np.isfinite(out64)), f"{where}: non-finite values"
        tol = TOL[(compute_dtype, _width(out.dtype))]
        err = _rel_err(out64, ref.astype(np.float64))
        assert err < tol, f"{where}: relative error {err:.3e} >= {tol:.0e}"


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.stem for p in SAMPLE_FILES])
def test_sample_has_reference(path):
    assert path.stem in REFERENCES, f"samples/{path.name} has no entry in tests/sample_refs.py REFERENCES"


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.stem for p in SAMPLE_FILES])
def test_sample_round_trips(path):
    import gir

    module = gir.parse_file(str(path))
    assert module.funcs[0].name == path.stem
    text = gir.print_module(module)
    again = gir.parse_text(text)
    assert again == module
    assert gir.print_module(again) == text


def test_every_reference_has_a_sample():
    stems = {p.stem for p in SAMPLE_FILES}
    assert len(stems) >= 17
    missing = sorted(set(REFERENCES) - stems)
    assert not missing, f"references without samples/*.gir: {missing}"


@pytest.mark.parametrize("path, sizes", list(_cases()))
def test_sample_float64(path, sizes):
    _run_and_compare(path, sizes, np.float64)


@pytest.mark.parametrize("path, sizes", list(_cases()))
def test_sample_float32(path, sizes):
    _run_and_compare(path, sizes, np.float32)
