"""The scan steps of one MLU scan tile (passes/schedule_mlu/scan.py): `e` holds E on a tile of `ns` scan rows x
`nl` lanes (scan orientation: a row is one point of the scan axis, contiguous lanes); the result goes to `o`, the
carry of the previous tiles is `acc` (one row of lanes) and becomes this tile's last result.

Two forms, chosen by their compute-pipe cost (`vector_op_cycles + units` per op, units = 128-byte vector units):

- `serial`: one row op per scan row (o[q] = o[q-1] OP e[q]): ns ops of one row each. Work-efficient, but every op
  pays the fixed vector-op overhead, which dominates when a row is one or two units (32 f32 lanes: 17 cycles for
  1 unit of work).
- `doubling` (Hillis-Steele): log2(ns) ops over the whole tile (t'[q] = t[q] OP t[q - d], d = 1, 2, 4, ...),
  ping-ponging between `e` and a second tile; each step also copies the rows the shifted op does not write (rows
  [d/2, d): the rows below d/2 are already final in the destination from two steps before). ns log2(ns) units of
  work but only ~2 log2(ns) fixed overheads: cheaper for narrow rows (e.g. 512 rows of 32 lanes: ~5,300 cycles
  instead of 8,700). It needs whole-unit rows without padding (a `layout=dense` kernel, lanes * 4 bytes a
  multiple of 128), so that a run of rows is one contiguous vector.

Reverse scans mirror the row order; exclusive forms shift the inclusive result by one row (o[first] = the carry).
"""
from __future__ import annotations

import math

from gir import ir
from gir.passes.schedule_mlu import build as B

OPS = {"cumsum": "+", "cumprod": "*", "cummax": "max", "cummin": "min"}


def comb(op: str, a, b):
    return ir.BinOp(op, a, b) if op in "+*" else ir.Call(op, (a, b))


def _row(t: str, r, nl: int) -> ir.Ref:
    return ir.Ref(t, (B.c(r) if isinstance(r, int) else r, B.sl(0, nl)))


def _rows(t: str, start: int, n: int, nl: int) -> ir.Ref:
    return ir.Ref(t, (B.sl(start, n), B.sl(0, nl)))


def doubling_pays(ns: int, units_per_row: int, dense: bool, exclusive: bool, op_cycles: float = 16.0) -> bool:
    """Whether the doubling form costs fewer compute cycles than the serial one for `ns` rows."""
    if not dense or ns < 4:
        return False
    u = units_per_row
    serial = ns * (op_cycles + u)
    steps = math.ceil(math.log2(ns))
    doubling = (op_cycles + u) + steps * (2 * op_cycles + ns * u) + (ns // 2) * u
    if exclusive:
        doubling += 2 * op_cycles + ns * u
    return doubling < serial


def serial_steps(scan, e: str, o: str, ns: int, nl: int, acc: ir.Ref, carry=None) -> list:
    """One row op per scan row, `e` into `o` (they may be the same tile for inclusive scans). `carry`: the row
    whose inclusive value the carry takes (an index expression; default the last row walked)."""
    op = OPS[scan.op]
    last = ns - 1
    first, end = (last, 0) if scan.reverse else (0, last)
    q = B.v("q_")
    cur = ir.BinOp("-", B.c(last - 1), q) if scan.reverse else B.add(q, 1)
    prev = B.add(cur, 1) if scan.reverse else q
    steps: list = []
    if scan.exclusive:
        steps.append(ir.Assign(_row(o, first, nl), acc))
        body = ir.Assign(_row(o, cur, nl), comb(op, _row(o, prev, nl), _row(e, prev, nl)))
        at = end if carry is None else carry
        tail = ir.Assign(acc, comb(op, _row(o, at, nl), _row(e, at, nl)))
    else:
        steps.append(ir.Assign(_row(o, first, nl), comb(op, acc, _row(e, first, nl))))
        body = ir.Assign(_row(o, cur, nl), comb(op, _row(o, prev, nl), _row(e, cur, nl)))
        tail = ir.Assign(acc, _row(o, end if carry is None else carry, nl))
    if ns > 1:
        steps.append(ir.For("q_", B.c(0), B.c(ns - 1), (body,)))
    return steps + [tail]


def doubling_steps(scan, e: str, h: str, o: str, ns: int, nl: int, acc: ir.Ref, carry=None) -> tuple[list, str]:
    """Hillis-Steele over the rows of `e` (overwritten), ping-ponging with `h`. Returns (steps, the tile holding
    the result): `o` for exclusive scans (a tile other than `e` and `h`), else `e` or `h` by the parity of the
    number of steps (the caller stores from it)."""
    op = OPS[scan.op]
    rev = scan.reverse
    first, end = (ns - 1, 0) if rev else (0, ns - 1)
    steps: list = [ir.Assign(_row(e, first, nl), comb(op, acc, _row(e, first, nl)))]
    cur, nxt, d = e, h, 1
    while d < ns:
        lo = d // 2                         # rows [0, lo) of nxt are final already (written two steps before)
        if d == 1:
            steps.append(ir.Assign(_row(nxt, first, nl), _row(cur, first, nl)))
        else:
            start = ns - d if rev else lo
            steps.append(ir.Assign(_rows(nxt, start, d - lo, nl), _rows(cur, start, d - lo, nl)))
        if rev:
            steps.append(ir.Assign(_rows(nxt, 0, ns - d, nl), comb(op, _rows(cur, 0, ns - d, nl),
                                                                   _rows(cur, d, ns - d, nl))))
        else:
            steps.append(ir.Assign(_rows(nxt, d, ns - d, nl), comb(op, _rows(cur, d, ns - d, nl),
                                                                   _rows(cur, 0, ns - d, nl))))
        cur, nxt, d = nxt, cur, d * 2
    at = end if carry is None else carry   # (the carry's row: serial_steps)
    if not scan.exclusive:
        return steps + [ir.Assign(acc, _row(cur, at, nl))], cur
    steps.append(ir.Assign(_row(o, first, nl), acc))
    if rev:
        steps.append(ir.Assign(_rows(o, 0, ns - 1, nl), _rows(cur, 1, ns - 1, nl)))
    else:
        steps.append(ir.Assign(_rows(o, 1, ns - 1, nl), _rows(cur, 0, ns - 1, nl)))
    return steps + [ir.Assign(acc, _row(cur, at, nl))], o
