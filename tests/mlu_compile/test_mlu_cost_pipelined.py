"""The MLU cost model's pipelined loops (passes/schedule_mlu/cost.py `_Walker._loop`, `block`): n trips take n x
max(IO, work) of a trip plus one fill and drain, and two pipelined loops in a row share theirs -- the first one's
drain overlaps the second one's fill -- when the second loop loads; not across a sync, not into an `if`, not into a
loop that only stores tiles computed on chip (its first compute waits for the loop before)."""
from __future__ import annotations

import pytest

from gir import ir
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import cost

F32 = ir.DType("f32")
TYPES = {"x": (ir.TensorType(F32, (1024,)), ir.Level.gdram), "y": (ir.TensorType(F32, (1024,)), ir.Level.gdram),
         "t": (ir.TensorType(F32, (128,)), ir.Level.nram)}
T = ir.Ref("t", (ir.Slice(ir.Const(0), ir.Const(128)),))


def _loop(var: str, loads: bool = True) -> ir.For:
    v = ir.Var(var)
    lo = ir.BinOp("*", v, ir.Const(128))
    part = (ir.Slice(lo, ir.BinOp("+", lo, ir.Const(128))),)
    body = (ir.Move("load", T, ir.Ref("x", part)),) if loads else ()
    body += (ir.Assign(T, ir.BinOp("*", T, ir.Const(2.0))), ir.Move("store", ir.Ref("y", part), T))
    return ir.For(var, ir.Const(0), ir.Const(8), body)


def _time(body: tuple) -> float:
    c = cost.TaskCost()
    cost._Walker(TYPES, MLU370, 10.0, True, False, False).block(body, {}, c)
    return c.time


def test_two_loops_in_a_row_share_their_fill_and_drain():
    a, b = _loop("a"), _loop("b")
    one = _time((a,))
    both = _time((a, b))
    assert both < 2 * one
    # the loop's fill / drain (min(IO, work) of a trip) counted once for the two
    c = cost.TaskCost()
    w = cost._Walker(TYPES, MLU370, 10.0, True, False, False)
    w.block((a,), {}, c)
    fill, drain = w.edge
    assert fill == drain > 0 and both == pytest.approx(2 * one - drain, rel=1e-12)


def test_no_sharing_across_a_sync_an_if_or_into_a_loop_without_loads():
    a, b = _loop("a"), _loop("b")
    apart = _time((a,)) + _time((b,))
    sync = ir.Sync(ir.ParLevel.core)
    assert _time((a, sync, b)) == pytest.approx(apart + _time((sync,)), rel=1e-12)
    assert _time((a, ir.If(ir.Const(1), (sync, b), ()))) == pytest.approx(apart + _time((sync,)), rel=1e-12)
    assert _time((a, ir.If(ir.Const(1), (b,), ()))) == pytest.approx(apart, rel=1e-12)
    stores = _loop("b", loads=False)
    assert _time((a, stores)) == pytest.approx(_time((a,)) + _time((stores,)), rel=1e-12)
    assert _time((stores, a)) < _time((stores,)) + _time((a,))   # (the loop that loads comes second)
