"""Kept exponentials of the slab kernel's online softmax (passes/schedule_mlu/tiles_slab.py).

The online rewrite accumulates s = sum(exp(A - m)) over the rows in the pass of the max m = max(A): per sub-tile k
of a unit's slab, m_k = max(m_{k-1}, max(A_k)), s = s * exp(m_{k-1} - m_k) + sum(exp(A_k - m_k)). A later pass
that reads e = exp(A - m) (a softmax's `e / s`) computed it again from A: a subtraction and an exponential per
element, a second time. When A is read by nothing else, its slab keeps the sub-tile's exponentials instead
(`A_k <- exp(A_k - m_k)`, in place) and the running max m_k in a row of a history tile, and the later pass takes

    e_k = A_k * exp(m_k - m)          (one exponential per lane and sub-tile, one multiply per element)

which is exp(A_k - m) up to rounding: the work of that pass goes from 10 vector cycles per 32 f32 elements to 1
(2,049^2 column softmax: 1.342x -> 1.275x the DMA roofline; 4,097 x 1,023: 1.369x -> 1.317x). The online step then
needs no scratch tile for its exponentials either. Taken when, for an online pair (s; m, A): A is held in a slab,
read only by the max and by d = A - m, d only by e = exp(d), e is computed and read in the last pass, and m is a
per-lane statistic.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu.tiles import COL, CONST, FULL, Op


@dataclass(frozen=True)
class Kept:
    m: str      # the max
    a: str      # the operand A, whose slab keeps exp(A_k - m_k)
    d: str      # d = A - m: not computed
    e: str      # e = exp(d): A_k * exp(m_k - m), in A's slab
    hist: str   # [sub-tiles, W] tile of the running maxima m_k


def kept_exps(ops: list[Op], online: dict, lv: dict, npass: int, slab: set, outputs=()) -> dict[str, Kept]:
    """{online sum: Kept} for the online pairs whose exponentials the slab keeps (module docstring)."""
    readers: dict[str, list[Op]] = {}
    for op in ops:
        for a in op.args:
            if a.kind != CONST:
                readers.setdefault(a.name, []).append(op)
    defs = {op.dst.name: op for op in ops}
    out = {}
    for s, (m, a) in online.items():
        ds = [op for op in readers.get(a, []) if op.dst.name != m]
        if len(ds) != 1 or a not in slab or a in outputs or defs.get(m) is None or defs[m].dst.kind != COL:
            continue
        d = ds[0]
        if d.fn != "sub" or d.dst.kind != FULL or [x.name for x in d.args] != [a, m] or \
                any(op.fn != "tmax" for op in readers[a] if op.dst.name == m):
            continue
        es = readers.get(d.dst.name, [])
        if len(es) != 1 or es[0].fn != "exp" or es[0].dst.kind != FULL:
            continue
        e = es[0].dst.name
        if e in slab or e in outputs or lv.get(e) != npass - 1 or d.dst.name in slab:   # (e an output: +inf rows)
            continue
        out[s] = Kept(m, a, d.dst.name, e, f"{m}_h")
    return out


def block_row(k0: ir.Expr, S: int) -> ir.Expr:
    """The sub-tile number of the sub-tile at slab row k0: k0 is `v * S` (a loop's sub-tiles) or a constant (the
    tail sub-tile), as tiles_slab.py and tiles_cluster.sub_tiles build them."""
    if isinstance(k0, ir.Const):
        return B.c(k0.value // S)
    if S == 1:
        return k0
    assert isinstance(k0, ir.BinOp) and k0.op == "*" and isinstance(k0.rhs, ir.Const) and k0.rhs.value == S, k0
    return k0.lhs


def record(hist: str, hk: ir.Expr, mn: ir.Ref, nw: int) -> ir.Assign:
    """The running max after sub-tile hk, into its row of the history tile (a compute: the software-pipeline
    pass takes loops of loads, then computes, then stores)."""
    return ir.Assign(B.ref(hist, B.sl(hk, 1), B.sl(0, nw)), mn)


def kept_exp(k: Kept, hk: ir.Expr, m_ref: ir.Ref, a_reg: ir.Ref, dst: ir.Ref, scale: ir.Ref, nw: int) -> list:
    """e = A_k * exp(m_k - m) for the sub-tile hk (`scale`: a [W] tile for exp(m_k - m))."""
    return [B.move("copy", scale, B.ref(k.hist, hk, B.sl(0, nw))),   # (an on-chip copy: the pipeline's load stage)
            ir.Assign(scale, ir.BinOp("-", scale, m_ref)),
            ir.Assign(scale, ir.Call("exp", (scale,))),
            ir.Assign(dst, ir.BinOp("*", a_reg, scale))]
