"""gir.cli.inputs, the --inputs loader of `gir eval` and `gir run`: damaged archives are one-line errors, never
tracebacks; arrays must be exactly the declared type and shape; sizes bind from them and must agree."""
from __future__ import annotations

import io
import random
import zipfile

import numpy as np
import pytest

from gir.cli.inputs import load_inputs, read_npz
from gir.errors import GirError
from gir.parser import parse_text

TWO = "func f(a: f32[N], n: i32[N]) -> (y: f32[N]) {\n  y[i] = a[i] * f32(n[i])\n}\n"


def func(text=TWO):
    return parse_text(text, "two.gir").funcs[0]


def _archives() -> list[bytes]:
    """Valid archives: stored, deflated, and members compressed with bzip2 and lzma."""
    rng = np.random.default_rng(0)
    out = []
    for save in (np.savez, np.savez_compressed):
        buf = io.BytesIO()
        save(buf, a=rng.standard_normal(13).astype(np.float32), n=np.arange(13, dtype=np.int32))
        out.append(buf.getvalue())
    member = io.BytesIO()
    np.save(member, rng.standard_normal(40).astype(np.float32))
    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", method) as z:
            z.writestr("a.npy", member.getvalue())
        out.append(buf.getvalue())
    return out


def _damaged(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    kind = r.randrange(3)
    if kind == 0:
        return bytes(b[:r.randrange(len(b))])                      # truncated
    if kind == 1:
        for _ in range(r.randrange(1, 6)):                          # flipped bytes
            b[r.randrange(len(b))] = r.randrange(256)
        return bytes(b)
    i = r.randrange(30, min(200, len(b)))                           # inside the first member's header
    b[i] = r.randrange(32, 127)
    return bytes(b)


def test_damaged_archives_are_clean_errors(tmp_path):
    """Truncations and corruptions of real archives (bad CRC, bad deflate/bzip2/lzma streams, unsupported
    compression, 'encrypted' members, bad .npy headers): either they still load or the error says so."""
    r = random.Random(1)
    path = tmp_path / "in.npz"
    bases = _archives()
    failures = 0
    for _ in range(1500):
        path.write_bytes(_damaged(r.choice(bases), r))
        try:
            read_npz(str(path))
        except GirError as exc:
            assert exc.message.startswith(f"cannot read inputs from {path}: "), exc.message
            failures += 1
    assert failures > 1000


def _npy_member(header: bytes, payload: bytes = b"\0" * 64) -> bytes:
    """An .npz holding one member 'a.npy' with the given header dictionary text."""
    pad = b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + len(header + pad).to_bytes(2, "little") + header + pad + payload
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.npy", npy)
    return buf.getvalue()


@pytest.mark.parametrize("header", [
    b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000000,), }",   # MemoryError
    b"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",  # OverflowError
    b"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }",                  # pickled objects
    b"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }",
    b"{'descr': 5, 'fortran_order': False, 'shape': (3,), }",
    b"{",                                                                          # tokenize.TokenError
    b"[1, 2]",
])
def test_hostile_npy_headers(tmp_path, header):
    path = tmp_path / "h.npz"
    path.write_bytes(_npy_member(header))
    with pytest.raises(GirError) as exc:
        read_npz(str(path))
    assert exc.value.message.startswith(f"cannot read inputs from {path}: "), exc.value.message


def test_what_is_not_an_archive(tmp_path):
    np.save(tmp_path / "a.npy", np.ones(3, np.float32))
    (tmp_path / "t.npz").write_text("garbage")
    (tmp_path / "e.npz").write_bytes(b"")
    for name in ("a.npy", "t.npz", "e.npz"):
        with pytest.raises(GirError, match="not an .npz archive"):
            read_npz(str(tmp_path / name))
    for path, why in ((tmp_path, "it is a directory"), (tmp_path / "none.npz", "No such file or directory")):
        with pytest.raises(GirError) as exc:
            read_npz(str(path))
        assert exc.value.message == f"cannot read inputs from {path}: {why}"


def _load(tmp_path, sizes=None, **arrays):
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    sizes = dict(sizes or {})
    return load_inputs(str(path), func(), sizes), sizes


def test_sizes_bind_from_the_arrays_and_must_agree(tmp_path):
    a = np.arange(1, 6, dtype=np.float32)
    given, sizes = _load(tmp_path, a=a)
    assert sizes == {"N": 5} and list(given) == ["a"] and given["a"] is not None
    with pytest.raises(GirError, match=r"input 'a': expected f32\[4\], got float32\[5\]"):
        _load(tmp_path, {"N": 4}, a=a)
    with pytest.raises(GirError, match=r"input 'n': expected i32\[5\], got int32\[6\]"):
        _load(tmp_path, a=a, n=np.ones(6, np.int32))


def test_errors_point_at_the_declaration(tmp_path):
    with pytest.raises(GirError) as exc:
        _load(tmp_path, a=np.ones(5))  # float64 for f32: no silent conversion
    assert str(exc.value.loc).startswith("two.gir:1:") and "got float64[5]" in exc.value.message


def test_other_byte_order_is_the_declared_type(tmp_path):
    given, _ = _load(tmp_path, a=np.arange(4, dtype=">f4"))
    assert given["a"].dtype == np.float32 and given["a"].tolist() == [0, 1, 2, 3]


def test_bf16_is_read_from_v2(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    path = tmp_path / "b.npz"
    x = np.array([1.5, -2.0, 3.0], ml_dtypes.bfloat16)
    np.savez(path, x=x)
    f = parse_text("func f(x: bf16[N]) -> (y: bf16[N]) {\n  y[i] = x[i]\n}\n", "b.gir").funcs[0]
    given = load_inputs(str(path), f, {})
    assert given["x"].dtype == ml_dtypes.bfloat16 and given["x"].astype(np.float32).tolist() == [1.5, -2.0, 3.0]
