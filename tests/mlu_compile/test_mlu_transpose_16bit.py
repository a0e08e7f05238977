"""Transposes and permutes in f16 / bf16 (and i32 / bool) on the MLU: passes/schedule_mlu/transpose.py moves the
elements as they are (`__bang_transpose` on 16-bit tiles, no f32 widening), so results are bit-exact and the
program never falls back to scalar kernels (which would take hours to simulate at the bench's 8192 x 8192)."""
import numpy as np
import pytest

from gir.codegen.mlu import emit_func
from gir.evaluate import evaluate, random_inputs
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.targets.bench.programs import program_text
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func

CONVERSIONS = ("__bang_half2float", "__bang_float2half", "__bang_bfloat162float", "__bang_float2bfloat16",
               "__bang_int322float", "__bang_float2int32", "__bang_uchar2float", "__bang_float2uchar")


def _func(op, dt):
    if op == "transpose2d":   # the bench's programs are float-only; the same statement in any element type
        return parse_text(f"func tr(x: {dt}[M, N]) -> (y: {dt}[N, M]) {{\n  y[j, i] = x[i, j]\n}}\n").funcs[0]
    return parse_text(program_text(op, dt)).funcs[0]


def _source(f, sizes):
    explicit = schedule_mlu(f, sizes)
    names = [k.name for k in explicit.kernels]
    assert names == [f"{f.name}_mlu"], names          # the permute schedule, not the scalar fallback (`_k0`)
    src = "".join(k.source for k in emit_func(explicit))
    assert not any(c in src for c in CONVERSIONS)     # pure data movement: no widening to f32
    return src


def _check_exact(f, sizes, seed):
    x = random_inputs(f, sizes, np.random.default_rng(seed))
    got = run_func(f, x, sizes).outputs["y"]
    want = np.asarray(evaluate(f, x, sizes)["y"])
    assert got.dtype == x["x"].dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.astype(got.dtype).view(np.uint8)), (f.name, sizes)   # bit-exact


# 1 x 1; tails only; full row tiles + a row tail with a column tail (and the corner tile; the tile height is the
# scheduler's choice, see test_mlu_transpose_split.py for the 512-row tile); a full 128-column chunk + a 1-column tail
@pytest.mark.parametrize("m,n", [(1, 1), (7, 5), (70, 65), (513, 129), (3, 257)])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_transpose_16bit_bit_exact(dt, m, n):
    f = _func("transpose", dt)
    assert "__bang_transpose(" in _source(f, {"M": m, "N": n})
    _check_exact(f, {"M": m, "N": n}, seed=m * 1000 + n)


@pytest.mark.parametrize("sizes", [dict(B=1, S=1, H=1, D=1), dict(B=3, S=130, H=5, D=7), dict(B=2, S=7, H=1, D=200),
                                   dict(B=1, S=65, H=3, D=64)])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_permute0213_16bit_bit_exact(dt, sizes):
    f = _func("permute0213", dt)
    src = _source(f, sizes)
    assert "GDRAM2GDRAM" in src and "__bang_" not in src   # strided GDRAM copies, no on-chip staging
    _check_exact(f, sizes, seed=sum(sizes.values()))


@pytest.mark.parametrize("dt", ["i32", "bool"])
@pytest.mark.parametrize("m,n", [(1, 1), (70, 65), (300, 129)])
def test_transpose_int_and_bool_bit_exact(dt, m, n):
    """i32 tiles are 256 x 128 like f32, bool (uint8 bytes) 1024 x 128; both transposed as they are."""
    f = _func("transpose2d", dt)
    assert "__bang_transpose(" in _source(f, {"M": m, "N": n})
    _check_exact(f, {"M": m, "N": n}, seed=m + n)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_transpose_16bit_near_roofline(dt):
    """Timing-only at 2048 x 4096: 32 column chunks (one per core) of 4 pipelined 512 x 128 tiles."""
    m, n = 2048, 4096
    r16 = run_func(_func("transpose", dt), None, {"M": m, "N": n}, values=False)
    compulsory = 2 * m * n * 2                          # x read once, y written once
    assert r16.stats["gdram_read_bytes"] == m * n * 2
    assert r16.stats["seconds"] / (compulsory / MLU370.gdram_bandwidth) < 1.15
    r32 = run_func(_func("transpose", "f32"), None, {"M": m, "N": n}, values=False)
    assert r16.stats["seconds"] < 0.55 * r32.stats["seconds"]   # half the bytes, half the time


@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_permute0213_16bit_near_roofline(dt):
    sizes = {"B": 2, "S": 1024, "H": 16, "D": 64}
    r = run_func(_func("permute0213", dt), None, sizes, values=False)
    compulsory = 2 * 2 * 1024 * 16 * 64 * 2
    assert r.stats["gdram_traffic_bytes"] == compulsory
    assert r.stats["seconds"] / (compulsory / MLU370.gdram_bandwidth) < 1.15
