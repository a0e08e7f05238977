"""MLU scans whose units are one tile each (passes/schedule_mlu/scan.py `units_pipelined`): the scan axis fits
one tile, so the unit loop itself is pipelined (`pipeline=units`: the next unit's loads and the last one's stores
beside a unit's computes), the units of the last, narrower lane chunk in a loop of their own.

Values against the evaluator (static checks on every kernel) for seeded random programs: every op, both
directions, exclusive forms, f32 / f16 / bf16 / i32, along the last axis or a leading one, 2-D and 3-D, operands
per lane and per scan position, lane counts with and without a narrower last chunk, sizes 1 and primes; the
emitted kernel's shape; the simulated time where it matters."""
from __future__ import annotations

import random

import pytest

from gir import ir
from gir.codegen.mlu.report import compulsory_bytes
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu

from tests.mlu_compile.test_mlu_tiles import _check

OPS = ("cumsum", "cumprod", "cummax", "cummin")


def program(seed: int) -> tuple[str, dict]:
    """One scan over x (rank 2 or 3) along an axis short enough for one tile."""
    rng = random.Random(seed)
    rank = rng.choice((2, 2, 3))
    dims = "BMN"[3 - rank:]
    names = [d.lower() for d in dims]
    axis = rng.choice(range(rank))
    t = rng.choice(("f32", "f32", "f16", "bf16", "i32"))
    op = rng.choice(OPS)
    x = f"x[{', '.join(names)}]"
    if t == "i32":
        e = x if op != "cumprod" else f"min(max({x}, -1), 1)"
        params = [f"x: {t}[{', '.join(dims)}]"]
    else:
        e = f"1.0 + 0.01 * f32({x})" if op == "cumprod" else f"f32({x})"
        other = names[-1] if axis != rank - 1 else names[-2]
        pick = rng.random()
        if pick < 0.3:
            e = f"{e} * w[{names[axis]}]"      # one value per scan position
        elif pick < 0.6:
            e = f"{e} + g[{other}]"            # one value per lane
        params = [f"x: {t}[{', '.join(dims)}]", f"w: f32[{dims[axis]}]",
                  f"g: f32[{dims[-1] if axis != rank - 1 else dims[-2]}]"]
    flags = (", exclusive=1" if rng.random() < 0.3 else "") + (", reverse=1" if rng.random() < 0.5 else "")
    text = (f"func units{seed}({', '.join(params)}) -> (y: {t}[{', '.join(dims)}]) {{\n"
            f"  y[{', '.join(names)}] = {op}({e}, {names[axis]}{flags})\n}}\n")
    sizes = {d: rng.choice((1, 7, 33, 97, 131)) for d in dims}
    sizes[dims[axis]] = rng.choice((1, 5, 61, 127, 250))
    lanes = dims[-1] if axis != rank - 1 else dims[-2]
    sizes[lanes] = rng.choice((33, 97, 131, 700, 1031))   # (several lane chunks, the last narrower or not)
    if rank == 3:
        sizes["B"] = min(sizes["B"], 7) if axis != 0 else sizes["B"]
    return text, sizes


def _pipelined(e: ir.Func) -> bool:
    return any(dict(k.attrs).get("pipeline") == "units" for k in e.kernels)


@pytest.mark.parametrize("seed", range(24))
def test_random_single_tile_scans(seed):
    text, sizes = program(seed)
    _check(parse_text(text).funcs[0], sizes, seed)


def test_the_random_programs_take_the_pipelined_units():
    """More than half (14 of 24 now; the rest: few lanes, where the cost model takes shorter tiles pipelined
    within each unit, or the scan axis cut into ranges over the cores)."""
    took = sum(_pipelined(schedule_mlu(parse_text(program(s)[0]).funcs[0], program(s)[1])) for s in range(24))
    assert took >= 12, took


ROWS = "func f(x: bf16[M, N]) -> (y: bf16[M, N]) {\n  y[i, j] = cumsum(x[i, j], j)\n}\n"


def test_a_narrower_last_chunk_has_a_loop_of_its_own():
    """12,312 rows of 527 bf16: 384 chunks of 32 lanes and one of 24 -- two unit loops, both pipelined."""
    from gir.codegen.mlu.emit import emit_func
    e = schedule_mlu(parse_text(ROWS).funcs[0], {"M": 12312, "N": 527})
    assert _pipelined(e)
    src = "".join(k.source for k in emit_func(e))
    assert src.count("for (int it_") == 2 and "__memcpy_async" in src and "if (c_ ==" not in src, src


@pytest.mark.parametrize("sizes,bound,before", [({"M": 12320, "N": 527}, 1.45, 2.435),
                                                ({"M": 12312, "N": 527}, 1.50, 2.434)])
def test_simulated_time(sizes, bound, before):
    """Before, each unit's load, compute and store ran in sequence (measured now 1.377x, 1.442x)."""
    from gir.targets.mlu.run import run_func
    f = parse_text(ROWS).funcs[0]
    res = run_func(f, None, sizes, values=False)
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < bound < before


LANE_OPERAND = "func f(x: f32[M, N], g: f16[M]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i, j] + f32(g[i]), j)\n}\n"


def test_a_16_bit_operand_per_lane_is_loaded_with_the_tiles():
    """g is loaded per unit and widened: its load goes with the tile's, its widening after them (a load after a
    compute would keep the units in sequence, as the kernel first did while the cost model timed it pipelined:
    73.6 us estimated, 101.0 simulated); now 72.6 us, 1.777x the DMA roofline."""
    from gir.codegen.mlu.emit import emit_func
    from gir.targets.mlu.run import run_func
    f = parse_text(LANE_OPERAND).funcs[0]
    sizes = {"M": 12312, "N": 127}
    e = schedule_mlu(f, sizes)
    assert _pipelined(e)
    assert "__memcpy_async" in "".join(k.source for k in emit_func(e))
    res = run_func(f, None, sizes, values=False)
    assert res.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9) < 1.85 < 2.47
    _check(f, {"M": 1031, "N": 127}, 3)
