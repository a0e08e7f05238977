"""The MLU cost model's pipelined loops (passes/schedule_mlu/cost.py `_Walker._loop`): a loop of n trips, a trip
loading for L cycles, storing to GDRAM for S and computing for W, takes the steps the software-pipeline pass emits
(passes/schedule_mlu/swpipe.py), each ending at a sync: L + max(L, W) + (n - 2) max(L + S, W) + max(S, W) + S --
n (L + S) when IO-bound, n W + L + S when compute-bound. Two loops in a row cost their sum (each ends at a sync).
Scheduled programs, IO-bound with few trips a task (where the model charged a fill and drain of min(L + S, W) on
top: a middle-axis softmax estimated at 1.11x its simulated time), compute-bound, and a scan group whose units walk
their tiles forward, then back (two pipelined loops of two trips), are estimated within 2% of the simulator."""
from __future__ import annotations

import pytest

from gir import ir
from gir.parser import parse_text
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import cost, schedule_mlu, swpipe
from gir.targets.mlu.run import run_func

F32 = ir.DType("f32")
TYPES = {"x": (ir.TensorType(F32, (1024,)), ir.Level.gdram), "y": (ir.TensorType(F32, (1024,)), ir.Level.gdram),
         "t": (ir.TensorType(F32, (128,)), ir.Level.nram)}
T = ir.Ref("t", (ir.Slice(ir.Const(0), ir.Const(128)),))
RATE = 10.0   # GDRAM bytes per cycle


def _trip(var: str, ops: int = 1) -> tuple:
    v = ir.Var(var)
    lo = ir.BinOp("*", v, ir.Const(128))
    part = (ir.Slice(lo, ir.BinOp("+", lo, ir.Const(128))),)
    return (ir.Move("load", T, ir.Ref("x", part)),) + \
        tuple(ir.Assign(T, ir.Call("exp", (T,))) for _ in range(ops)) + (ir.Move("store", ir.Ref("y", part), T),)


def _loop(var: str, ops: int = 1, trips: int = 8) -> ir.For:
    return ir.For(var, ir.Const(0), ir.Const(trips), _trip(var, ops))


def _cost(body: tuple) -> cost.TaskCost:
    c = cost.TaskCost()
    piped = swpipe.choose_loops(ir.Kernel("k", body, ()))[0]   # (the loops the pass pipelines)
    cost._Walker(TYPES, MLU370, RATE, True, False, False, piped=piped).block(body, {"a": 0}, c)
    return c


@pytest.mark.parametrize("ops", [1, 6, 40])   # IO-bound, between, compute-bound
@pytest.mark.parametrize("trips", [2, 3, 8])
def test_a_pipelined_loop_takes_the_steps_swpipe_emits(ops, trips):
    one = _cost(_trip("a", ops))
    io, work = one.pipes(RATE)
    store = one.out_io + one.out_gdram / RATE
    load = io - store
    assert load > 0 and store > 0 and work > 0
    expected = load + max(load, work) + (trips - 2) * max(io, work) + max(store, work) + store
    assert _cost((_loop("a", ops, trips),)).time == pytest.approx(expected, rel=1e-12)
    if work <= min(load, store):
        assert expected == pytest.approx(trips * io, rel=1e-12)
    if work >= io:
        assert expected == pytest.approx(trips * work + io, rel=1e-12)


def test_two_loops_in_a_row_cost_their_sum():
    a, b = _loop("a"), _loop("b", ops=40)
    assert _cost((a, b)).time == pytest.approx(_cost((a,)).time + _cost((b,)).time, rel=1e-12)


SOFTMAX_MID = ("func f(x: f32[B, N, C]) -> (y: f32[B, N, C]) {\n  m[b, c] = max(x[b, n, c])\n"
               "  e[b, n, c] = exp(x[b, n, c] - m[b, c])\n  s[b, c] = sum(e[b, n, c])\n"
               "  y[b, n, c] = e[b, n, c] / s[b, c]\n}\n")
CHAIN = ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n"
         "  y[i, j] = tanh(exp(sin(x[i, j]) * 0.5) + cos(x[i, j])) / (1.0 + x[i, j] * x[i, j])\n}\n")
GROUP = ("func f(x: f32[M, N], w: f32[N]) -> (c: f32[M, N], p: f32[M, N]) {\n"
         "  c[i, j] = cumsum(x[i, j] * w[j], j)\n  p[i, j] = cumprod(1.0 + 0.01 * x[i, j], j, reverse=1)\n}\n")


@pytest.mark.parametrize("src,sizes,rel", [
    (SOFTMAX_MID, {"B": 16, "N": 256, "C": 1024}, 0.02),   # IO-bound, 4 trips a task
    (SOFTMAX_MID, {"B": 8, "N": 64, "C": 512}, 0.02),      # 1 trip a task
    # compute-bound (the vector ops a fusion pass merges are counted one by one: 2.4% over here)
    (CHAIN, {"M": 1024, "N": 1024}, 0.03),
    (GROUP, {"M": 8191, "N": 509}, 0.02),                  # the scan group: two pipelined loops a unit
])
def test_estimates_are_the_simulated_times(src, sizes, rel):
    explicit = schedule_mlu(parse_text(src).funcs[0], sizes)
    est = cost.estimate(explicit).seconds
    sim = run_func(explicit, None, sizes, values=False).stats["seconds"]
    assert est == pytest.approx(sim, rel=rel), (est, sim)
