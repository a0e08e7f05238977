"""Sub-segment scans of one MLU scan tile (rows layout; passes/schedule_mlu/scan.py): a two-level scan that cuts
the steps of a tile by its sub-segment count k.

A tile of the rows layout holds E for W lanes x R positions ([W, R], positions contiguous). The serial form
(scan_steps.py) transposes it to [R, W] and takes R steps, one vector op over the W lanes each: at 32 f32 lanes a
step is one 128-byte unit of work behind a 16-cycle issue cost, so a compute-bound scan pays the issue cost R
times a tile. Here each lane's R positions are cut into k sub-segments of r = R / k, laid side by side:

- the [W, R] tile read as [W k, r] (the same bytes: lane l's sub-segment g is row l k + g) is transposed to
  [r, W k] (`transpose(a, rows)`, codegen/mlu/vecops.py) -- a 16-bit operand read as it is, widened after;
- r steps scan all W k sub-segments at once, from the identity (`serial_steps`): each sub-segment's local scan,
  in any form (exclusive, reverse), and its total, a [W k] vector in (l, g) order;
- the totals read as [W, k] are transposed to [k, W], and k steps over the W lanes combine them with the unit's
  carry into each sub-segment's carry (an exclusive scan in the tile's direction) -- the unit's carry becomes
  the tile's total on the way;
- the carries, transposed back to (l, g) order, are combined into every row of the [r, W k] tile (one
  `__bang_cycle_*` op), which is transposed back to [W, R] as [r, W k] -> [W k, r].

Cost: r + k steps instead of R (plus two small transposes and one op over the tile): at W = 32 and R = 512,
k = 16 takes 32 + 16 steps instead of 512, at the price of NRAM (the [r, W k] tiles, beside the serial form's for
the tiles that keep it) and of the tile's other work staying as it was. So it is a candidate: scan_size.py sizes
and times the unit kernel with it (`plan.subseg`) and without, and the cost model picks. With it, a tile takes the
k of least model cycles (`subseg_cycles`) when under GAIN x the serial or doubling form's; a tile whose positions
are all real, the last tile of a forward walk (the positions past the real ones only feed sub-segments after
them), or a reverse one-tile unit whose positions end at the tile's end (scan.py `_Kernel.shift`: the pads come
last in its order); the tiles of overlapping walks keep the serial form (their carry comes from a row inside the
tile).
"""
from __future__ import annotations

import copy
import math

from gir import ir
from gir.scan import identity
from gir.passes.machines import MLU370
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.scan_steps import OPS, comb, doubling_pays, serial_steps

MIN_ROWS = 4      # positions per sub-segment at least
GAIN = 0.9        # the sub-segment form's cycles under this share of the other forms'


def _op(units: float) -> float:
    m = MLU370
    return m.vector_op_cycles + units * m.op_class_cycles("simple")


def subseg_cycles(R: int, W: int, k: int, es: int = 4, wc: int | None = None) -> float:
    """Compute-pipe cycles of the steps of one [W, R] tile in k sub-segments (the two big transposes, common to
    every form, left out); `wc` the carries' lanes (`carry_lanes`, default W)."""
    unit = L.VECTOR_ALIGN / es
    r, lanes, wc = R // k, W * k, wc or W
    return r * _op(lanes / unit) + _op(wc * k / unit) + k * _op(wc / unit) + \
        2 * (MLU370.vector_op_cycles + 2 * wc * k / unit) + _op(R * W / unit)


def serial_cycles(R: int, W: int, dense: bool, exclusive: bool, es: int = 4) -> float:
    """The same for the form scan.py would take: serial, or doubling where it pays (scan_steps.py)."""
    units = -(-W * es // L.VECTOR_ALIGN)
    if doubling_pays(R, units, dense, exclusive):
        steps = math.ceil(math.log2(R))
        return _op(units) + steps * (2 * MLU370.vector_op_cycles + R * units) + (R // 2) * units
    return R * _op(units)


def subsegments(p, ns: int, last: bool, carry_row, shifted: bool = False) -> int:
    """k for a tile of `ns` real positions of plan `p` (`last`: nothing follows it in its walk; `shifted`: its
    positions end at the tile's end, the pad positions first), or 0 for the serial / doubling forms."""
    if not p.subseg or carry_row is not None or \
            not (ns == p.R or (last and (shifted if p.scan.reverse else True))):
        return 0
    return pays(p)


def applies(p) -> bool:
    """Whether the plan's whole tiles would scan in sub-segments (scan_size.py times the kernel with and without)."""
    return pays(p) > 0


def pays(p) -> int:
    """k for a whole tile of plan `p` when its model cycles are under GAIN x the other forms', else 0."""
    if p.layout != "rows" or not p.dense:
        return 0
    wc, es = carry_lanes(p), L.device_nbytes(p.cdt)
    best, k_best = GAIN * serial_cycles(p.R, p.W, p.dense, p.scan.exclusive, es), 0
    for k in range(2, p.R // MIN_ROWS + 1):
        if p.R % k or (p.W * k) % L.PITCH:
            continue
        c = subseg_cycles(p.R, p.W, k, es, wc)
        if c < best:
            best, k_best = c, k
    return k_best


def carry_lanes(p) -> int:
    """Lanes of the carries' tiles: W rounded up to whole vector units of the computed type (a narrower chunk
    leaves slack lanes, computed and never read)."""
    return L.round_up(p.W, L.VECTOR_ALIGN // L.device_nbytes(p.cdt))


def whole(t: str, rows: int, cols: int) -> ir.Ref:
    return B.ref(t, B.sl(0, rows), B.sl(0, cols))


def vector(t: str, n: int) -> ir.Ref:
    return B.ref(t, B.sl(0, n))


def land(K, k: int, tile: ir.Ref, dt: ir.DType) -> tuple[list, str]:
    """(the transpose, the [r, W k] tile) of a raw 16-bit landing tile [W, R] of type `dt` read as [W k, r]."""
    p = K.p
    r, lanes = p.R // k, p.W * k
    tv = K.alloc("tv_", dt, (r, lanes))
    return [ir.Assign(whole(tv, r, lanes), ir.Call("transpose", (tile, B.c(lanes))))], tv


def steps(K, k: int, ev: ir.Ref | None, tv: str | None) -> tuple[list, str]:
    """(the computes, the [r, W k] result tile in scan orientation) of a tile whose E is `ev` ([W, R]) or the
    16-bit [r, W k] tile `tv` (`land`). The unit's carry `acc_` becomes the tile's last result."""
    p = K.p
    r, lanes, W = p.R // k, p.W * k, p.W
    vt = K.alloc("vt_", p.cdt, (r, lanes))
    vo = vt if not p.scan.exclusive else K.alloc("vo_", p.cdt, (r, lanes))
    out = [ir.Assign(whole(vt, r, lanes), ir.Call("f32", (whole(tv, r, lanes),)) if tv is not None else
                     ir.Call("transpose", (whole(ev.name, W, p.R), B.c(lanes))))]
    floats = p.cdt in (ir.DType.f32, ir.DType.f16, ir.DType.bf16)
    ident = identity(p.scan.op, floats, None if floats else "int32")
    wc = carry_lanes(p)   # the carries' rows: whole vector units (W = 16 f32 lanes: 16 lanes of slack)
    ts = K.alloc("ts_", p.cdt, (wc * k,))
    tot = vector(ts, lanes)
    out.append(ir.Assign(vector(ts, wc * k), B.c(ident)))
    out += serial_steps(p.scan, vt, vo, r, lanes, tot)          # local scans; `ts_` their totals, (l, g) order
    tt = K.alloc("tt_", p.cdt, (k, wc))
    ct = K.alloc("ct_", p.cdt, (k, wc))
    acc = vector(K.alloc("acc_", p.cdt, (max(2, wc),)), wc)
    out.append(ir.Assign(whole(tt, k, wc), ir.Call("transpose", (vector(ts, wc * k), B.c(wc)))))
    carries = copy.copy(p.scan)
    carries.exclusive = True
    out += serial_steps(carries, tt, ct, k, wc, acc)   # each sub-segment's carry; `acc_` the tile's total
    cv = K.alloc("cv_", p.cdt, (wc * k,))
    out.append(ir.Assign(vector(cv, wc * k), ir.Call("transpose", (whole(ct, k, wc), B.c(k)))))
    out.append(ir.Assign(whole(vo, r, lanes), comb(OPS[p.scan.op], vector(cv, lanes), whole(vo, r, lanes))))
    return out, vo


def finish(K, ev: ir.Ref | None, tv: str | None, k: int, s0, ns: int, l0, nl: int) -> list:
    """scan.py's `finish` in k sub-segments: E in `ev` ([W, R]) or the 16-bit [R / k, W k] tile `tv`; the result
    transposed back to [W, R] (a 16-bit result rounded first) and stored."""
    from gir.passes.schedule_mlu.scan import FULL   # (scan.py imports this module)
    p = K.p
    r, lanes = p.R // k, p.W * k
    computes, vo = steps(K, k, ev, tv)
    back = lambda t: ir.Call("transpose", (whole(t, r, lanes), B.c(r)))   # noqa: E731
    if p.ydt != p.cdt:
        oh = K.alloc("uh_", p.ydt, (r, lanes))
        h = K.alloc("o_h", p.ydt, (p.W, p.R))
        computes += [ir.Assign(whole(oh, r, lanes), ir.Call(p.ydt.value, (whole(vo, r, lanes),))),
                     ir.Assign(whole(h, p.W, p.R), back(oh))]
        K.stored.add(h)
        dst = K.gdram(p.out.name, p.vars, s0, ns, l0, nl)
        return computes + [B.move("store", dst, K.region(h, FULL, nl, ns, moved=True))]
    o = ev.name if ev is not None else K.alloc("ov_", p.cdt, (p.W, p.R))
    computes.append(ir.Assign(whole(o, p.W, p.R), back(vo)))
    return computes + K.store(o, s0, ns, l0, nl)
