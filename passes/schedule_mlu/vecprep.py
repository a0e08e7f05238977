"""Vector-form preparation of MLU kernels (explicit MLU GIR → explicit MLU GIR, the last step of schedule_mlu):

* **Loop-invariant broadcasts are materialised once.** `__bang_select` needs its operands as full tiles: a
  column vector or a constant operand of a select on a full tile is broadcast into a scratch tile (a write and a
  cycle-add over the whole tile) every time the select runs. When that operand does not change inside the loop
  around the select (a constant; a column tile the loop does not write: the iota `j` of an argmax), the broadcast
  becomes a tile of its own, filled once before the loop, and the select reads it: the hoisted argmax's
  `select(x == max(x), j, N)` costs one vector pass per tile instead of four.
* **`select(c, 1.0, 0.0)` is `c != 0.0`** (one compare instead of two constant broadcasts and a select; equal for
  every c, NaN included: NaN is non-zero).

A kernel keeps its hoisted tiles only if it still fits NRAM (tiles_nram.kernel_nram).
"""
from __future__ import annotations

import dataclasses

from gir import ir
from gir.affine import free_vars
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.swpipe import is_one_trip
from gir.passes.schedule_mlu.tiles_nram import kernel_nram
from gir.printer import format_expr, format_ref


def prepare_kernels(items: list, nram: int) -> list:
    """`items` (a function body) with every MLU kernel prepared (a kernel whose hoisted tiles would not fit
    `nram` bytes per core keeps its broadcasts in the loop)."""
    out = []
    for x in items:
        if isinstance(x, ir.Kernel):
            y = _Prep(x).kernel()
            if y is not x and kernel_nram(y) > nram:
                y = _Prep(x, hoist=False).kernel()
            x = y
        out.append(x)
    return out


class _Prep:
    def __init__(self, k: ir.Kernel, hoist: bool = True):
        self.k, self.hoist = k, hoist
        self.allocs: dict[str, ir.Alloc] = {}
        self.changed = False
        self.count = 0

    def kernel(self) -> ir.Kernel:
        body = self.block(self.k.body)
        return dataclasses.replace(self.k, body=body) if self.changed else self.k

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, ir.Alloc):
                self.allocs[s.name] = s
                out.append(s)
            elif isinstance(s, ir.For) and not is_one_trip(s):
                out.extend(self.loop(s))
            elif isinstance(s, (ir.Parallel, ir.For)):
                out.append(dataclasses.replace(s, body=self.block(s.body)))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.block(s.then), orelse=self.block(s.orelse)))
            elif isinstance(s, ir.Assign):
                out.append(self.ones_zeros(s))
            else:
                out.append(s)
        return tuple(out)

    def ones_zeros(self, s: ir.Assign) -> ir.Assign:
        v = s.value
        if isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3 and _const(v.args[1], 1.0) and \
                _const(v.args[2], 0.0) and self._kind(s.target) == "full":
            self.changed = True
            return dataclasses.replace(s, value=ir.BinOp("!=", v.args[0], ir.Const(0.0), loc=v.loc))
        return s

    def loop(self, f: ir.For) -> list:
        """The loop with its selects' invariant broadcast operands read from tiles filled before it."""
        body = self.block(f.body)
        if not self.hoist:
            return [dataclasses.replace(f, body=body)]
        written = _written(body)
        bound = {f.var} | _loop_vars(body)   # defined only inside the loop
        hoisted: dict[tuple, ir.Ref] = {}
        before: list = []

        def operand(arg, target: ir.Ref):
            if not (isinstance(arg, ir.Const) or (isinstance(arg, ir.Ref) and self._kind(arg) == "col" and
                                                  arg.name not in written)):
                return arg
            if (free_vars(arg) | free_vars(target)) & bound:   # a region that moves with the loop
                return arg
            key = (format_expr(arg), format_ref(target), self.allocs[target.name].type)
            if key not in hoisted:
                t = self.allocs[target.name]
                name = f"bc{self.count}_"
                self.count += 1
                before.append(ir.Alloc(name, t.type, t.level, loc=f.loc))
                hoisted[key] = dataclasses.replace(target, name=name)
                before.append(ir.Assign(hoisted[key], arg, loc=f.loc))
            return hoisted[key]

        def rewrite(stmts) -> tuple:
            out = []
            for s in stmts:
                if isinstance(s, ir.Assign) and self._select_broadcasts(s):
                    v = s.value
                    args = (v.args[0], operand(v.args[1], s.target), operand(v.args[2], s.target))
                    s = dataclasses.replace(s, value=dataclasses.replace(v, args=args))
                elif isinstance(s, (ir.For, ir.Parallel)):
                    s = dataclasses.replace(s, body=rewrite(s.body))
                elif isinstance(s, ir.If):
                    s = dataclasses.replace(s, then=rewrite(s.then), orelse=rewrite(s.orelse))
                out.append(s)
            return tuple(out)
        body = rewrite(body)
        if before:
            self.changed = True
        return before + [dataclasses.replace(f, body=body)]

    def _select_broadcasts(self, s: ir.Assign) -> bool:
        """A select on a full tile (whose operands of other kinds the emitter broadcasts)."""
        v = s.value
        if not (isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3):
            return False
        return self._kind(s.target) == "full" and not (s.target.index and isinstance(s.target.index[0], ir.Slice)
                                                        and _nonzero_start(s.target.index[0]))

    def _kind(self, r) -> str:
        """The vector kind of a reference as the emitter classifies it: full ([R, C] tiles from row 0), col (a 1-D
        tile), other."""
        a = self.allocs.get(getattr(r, "name", None))
        if a is None or a.level != ir.Level.nram:
            return "other"
        shape = tuple(a.type.shape)[1:] if a.slots > 1 else tuple(a.type.shape)
        index = tuple(r.index)[1:] if a.slots > 1 else tuple(r.index)
        if len(shape) == 1 and shape[0] > 1:
            return "col"
        if len(shape) == 2 and not L.is_rowvec(shape) and index and isinstance(index[0], ir.Slice):
            return "full"
        return "other"


def _loop_vars(stmts) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, (ir.For, ir.Parallel)):
            out |= {s.var} | _loop_vars(s.body)
        elif isinstance(s, ir.If):
            out |= _loop_vars(s.then + s.orelse)
    return out


def _written(stmts) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ir.Assign):
            out.add(s.target.name)
        elif isinstance(s, ir.Move):
            out.add(s.dst.name)
        elif isinstance(s, (ir.For, ir.Parallel)):
            out |= _written(s.body)
        elif isinstance(s, ir.If):
            out |= _written(s.then + s.orelse)
        elif isinstance(s, ir.XReduce):
            out.add(s.target.name)
    return out


def _const(e, value: float) -> bool:
    return isinstance(e, ir.Const) and not isinstance(e.value, bool) and float(e.value) == value and \
        str(float(e.value)) == str(value)


def _nonzero_start(i: ir.Slice) -> bool:
    return not (isinstance(i.start, ir.Const) and i.start.value == 0)

