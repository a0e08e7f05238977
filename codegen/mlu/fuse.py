"""Peephole: merge a multiply and an add/sub (either order) of the emitted vector ops into one `__bang_fusion`.

Why: on the simulated MLU (as on MLU 3xx) `__bang_fusion` does the two ops at the cost of one simple-class op,
with the same two roundings as the separate ops (targets/mlu/LANGUAGE.md), so the merge changes no value and saves
one op (`vector_op_cycles` + units x `cycles_simple`) on the compute pipe of compute-bound kernels.

It works on the kernel AST (codegen/ast.py) of one kernel, run by run: a run is a maximal sequence of
consecutive statements of one block that are all `bang_*` intrinsics (one tile's straight-line computes; a
per-row loop `for (int r_ ...) { __bang_*(p + r_ * P, ...); }` of vecops belongs to the run, is never merged, and
counts as writing all of `p` when rows x P is the element count). A
producer P (`mul`, `mul_scalar`, `cycle_mul`, or `add`/`sub` and their `_scalar` / `cycle_` forms) writing
pointer t, and the first later op C of the run that touches t's buffer, merge into one `__bang_fusion` at C's
place when

* C consumes t in a form `__bang_fusion` has (FMA a*b+c, FMS a*b-c, FAM (a+b)*c, FSM (a-b)*c; c - a*s and
  s - a*s' as FMA with the scalar negated), with the same element count n, and every vector operand among
  b and c either covers n elements or all of them are cycled with the same m;
* no op between P and C writes a buffer P reads (P's inputs still hold their values at C);
* the value P wrote to t is dead after C: C overwrites t itself, or the next op of the run that touches t's buffer
  (after C, then around the loop from the start of the run) fully overwrites exactly t without reading it, or no
  other op touches it and nothing outside the run can read it: t's buffer appears in no statement outside the
  runs, and every other run that mentions it first overwrites the whole buffer without reading it (the tile
  walks of one kernel -- a loop's tiles, its tail, a narrower last chunk -- compute in the same temporaries);
* every operand has a float element type (`types`) and any source sharing the destination's buffer is exactly
  the destination (the language allows only exact aliasing).

Operands are AST expressions (codegen/ast.py). Buffers are compared by name (the first name of a pointer
expression): conservative, any two pointers into the same buffer count as overlapping unless their expressions are
equal.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass

from gir.codegen import ast as C
from gir.codegen.cstyle import _walk

_WORD = re.compile(r"(?<!\w)[A-Za-z_]\w*")   # whole identifiers of printed C text
FLOAT_TYPES = ("float", "half", "bfloat16_t")
MUL_FORMS = {"mul": "vec", "mul_scalar": "scalar", "cycle_mul": "cycle"}
ADD_FORMS = {"add": "vec", "add_scalar": "scalar", "cycle_add": "cycle",
             "sub": "vec", "sub_scalar": "scalar", "cycle_sub": "cycle"}


@dataclass(frozen=True)
class _Op:
    name: str             # without the bang_ prefix
    args: tuple[C.CExpr, ...]
    rows: int = 0         # > 0: the op runs once per row r_ (a per-row loop of vecops); never fused
    node: object = None   # the statement it was read from

    @property
    def dst_index(self) -> int:
        return 1 if self.name == "fusion" else 0

    @property
    def dst(self) -> C.CExpr:
        return self.args[self.dst_index]

    @property
    def count(self) -> C.CExpr | None:
        """The element count n when the op writes exactly n elements of dst (element-wise ops), else None."""
        if self.rows:
            return None
        if self.name == "write_value":
            return self.args[1]
        if self.name.startswith("cycle_"):
            return self.args[3]
        if self.name == "fusion":
            return self.args[5]
        if self.name.startswith(("reduce_", "transpose", "matmul", "mirror")):
            return None
        return self.args[-1]

    def reads(self) -> set[str]:
        """Names (buffers and others) in every argument but the destination: what the op may read."""
        return {w for k, a in enumerate(self.args) if k != self.dst_index for w in names(a)}

    def stmt(self):
        """The op as a statement (codegen/ast.py)."""
        if self.node is not None:
            return self.node
        return C.Eval(C.Intrinsic("bang_" + self.name, self.args))

    def overwrites(self, t: C.CExpr, n: C.CExpr) -> bool:
        """Does the op write all of the n elements at t (and nothing it reads decides that)?"""
        if not self.rows:
            return self.dst == t and self.count == n
        pitch = self.args[-1]
        return (self.dst == C.Bin("+", t, C.Bin("*", C.Id("r_"), pitch)) and _int(pitch) and _int(n)
                and self.rows * pitch.value == n.value)


def _int(e) -> bool:
    return isinstance(e, C.Num) and e.kind == "i"


def names(e) -> list[str]:
    """The names an expression mentions, in order (variables, and the arrays of element reads)."""
    out = []
    for x in _walk(e):
        if isinstance(x, C.Id):
            out.append(x.name)
        elif isinstance(x, (C.Index, C.VecRef, C.AddrAligned)):
            out.append(x.base)
    return out


def base(ptr: C.CExpr) -> str:
    """The buffer a pointer expression points into: its first name."""
    return next(iter(names(ptr)), "")


def _call(s) -> tuple[str, tuple] | None:
    """(name without bang_, arguments) of a `bang_*` intrinsic statement."""
    if isinstance(s, C.Eval) and isinstance(s.expr, C.Intrinsic) and s.expr.name.startswith("bang_"):
        return s.expr.name[len("bang_"):], s.expr.args
    return None


def op_of(s) -> _Op | None:
    """The vector op a statement is: a `bang_*` intrinsic, or vecops' per-row loop `for r_ in 0..R` around one."""
    c = _call(s)
    if c is not None:
        return _Op(c[0], c[1])
    if isinstance(s, C.For) and s.inline and s.var == "r_" and s.lo == C.Num(0) and isinstance(s.hi, C.Num) \
            and len(s.body) == 1 and (c := _call(s.body[0])) is not None:
        return _Op(c[0], c[1], int(s.hi.value), s)
    return None


def fuse_stmts(body: tuple, types: dict[str, str], printer, sizes: dict[str, int] | None = None) \
        -> tuple[tuple, int]:
    """The kernel body with mul/add pairs merged, and the number of merges. `types`: buffer name -> C type;
    `printer`: the MLU's printer (a buffer's uses outside a run are found in the printed kernel); `sizes`: buffer
    name -> declared element count (a run that overwrites a whole buffer first reads nothing another run left)."""
    uses = _Uses(body, printer, sizes or {})
    return _fuse_block(body, types, uses)


def _blocks(s) -> list[tuple]:
    """The statement blocks directly inside `s` that hold runs of their own."""
    if isinstance(s, C.For) and not s.inline:
        return [s.body]
    if isinstance(s, C.If):
        return [s.then, s.orelse]
    if isinstance(s, C.Block):
        return [s.body]
    return []


def _split(body: tuple) -> list:
    """`body` as its runs (tuples of consecutive vector-op statements) and its other statements, in order."""
    out, k = [], 0
    while k < len(body):
        if op_of(body[k]) is None:
            out.append(body[k])
            k += 1
            continue
        end = k
        while end < len(body) and op_of(body[end]) is not None:
            end += 1
        out.append(body[k:end])
        k = end
    return out


class _Uses:
    """Where each buffer of a kernel appears: in which runs (numbered in program text order) and in statements
    outside every run (DMAs, scalar code, loop bounds)."""

    def __init__(self, body: tuple, printer, sizes: dict[str, int]):
        self.sizes = sizes
        self.runs: list[tuple[list[_Op], Counter]] = []
        self.loose = Counter(_WORD.findall("\n".join(printer.block(body, 0))))
        self._collect(body, printer)
        for _, words in self.runs:
            self.loose -= words
        self.at = 0   # the run being fused (_fuse_block walks the runs in the same order)

    def _collect(self, body: tuple, printer) -> None:
        for part in _split(body):
            if isinstance(part, tuple):
                self.runs.append(([op_of(x) for x in part], Counter(_WORD.findall("\n".join(printer.block(part,
                                                                                                      0))))))
            else:
                for b in _blocks(part):
                    self._collect(b, printer)

    def private(self, tb: str) -> bool:
        """Can nothing outside the current run read what the run leaves in buffer `tb`?"""
        if self.loose[tb] > 0:
            return False
        whole = C.Id(tb), C.Num(self.sizes.get(tb, -1))
        for r, (ops, words) in enumerate(self.runs):
            if r == self.at or words[tb] == 0:
                continue
            first = next(o for o in ops if tb in o.reads() or base(o.dst) == tb)
            if tb in first.reads() or not first.overwrites(*whole):
                return False
        return True


def _fuse_block(body: tuple, types, uses: _Uses) -> tuple[tuple, int]:
    out, merged = [], 0
    for part in _split(body):
        if isinstance(part, tuple):
            ops, n = _fuse_run([op_of(x) for x in part], uses, types)
            uses.at += 1
            out += [o.stmt() for o in ops]
        else:
            out.append(_fuse_nested(part, types, uses))
            out[-1], n = out[-1]
        merged += n
    return tuple(out), merged


def _fuse_nested(s, types, uses: _Uses) -> tuple:
    """(`s` with the blocks inside it fused, merges)."""
    if isinstance(s, C.For) and not s.inline:
        body, n = _fuse_block(s.body, types, uses)
        return (dataclasses.replace(s, body=body), n)
    if isinstance(s, C.If):
        then, n1 = _fuse_block(s.then, types, uses)
        orelse, n2 = _fuse_block(s.orelse, types, uses)
        return (dataclasses.replace(s, then=then, orelse=orelse), n1 + n2)
    if isinstance(s, C.Block):
        body, n = _fuse_block(s.body, types, uses)
        return (dataclasses.replace(s, body=body), n)
    return (s, 0)


def _fuse_run(ops: list[_Op], uses: _Uses, types: dict[str, str]) -> tuple[list[_Op], int]:
    merged, i = 0, 0
    while i < len(ops):
        fused = _try(ops, i, uses, types)
        if fused is None:
            i += 1
            continue
        j, op = fused
        ops = ops[:i] + ops[i + 1:j] + [op] + ops[j + 1:]
        merged += 1
    return ops, merged


def _try(ops: list[_Op], i: int, uses: _Uses, types: dict[str, str]):
    p = ops[i]
    if p.rows or p.name not in MUL_FORMS and p.name not in ADD_FORMS:
        return None
    t, tb = p.dst, base(p.dst)
    j = next((j for j in range(i + 1, len(ops)) if tb in ops[j].reads() or base(ops[j].dst) == tb), None)
    if j is None:
        return None
    c = ops[j]
    p_inputs = {w for a in p.args[1:3] for w in names(a)}
    if any(base(o.dst) in p_inputs for o in ops[i + 1:j]):
        return None
    combined = _combine(p, c, t)
    if combined is None or not _types_ok(*combined, types) or not _dead_after(ops, i, j, t, c, uses):
        return None
    return j, combined[0]


def _combine(p: _Op, c: _Op, t: C.CExpr) -> tuple[_Op, list] | None:
    """The fused op for producer p (writing t) and consumer c and its pointer operands, or None when c is not a
    fusable form."""
    n = p.count
    if c.rows or c.count != n or c.name not in MUL_FORMS and c.name not in ADD_FORMS:
        return None
    a, b = p.args[1], p.args[2]
    mb = p.args[4] if p.name.startswith("cycle_") else None
    b_vec = not p.name.endswith("_scalar")
    x, y = c.args[1], c.args[2]
    mc = c.args[4] if c.name.startswith("cycle_") else None
    c_vec = not c.name.endswith("_scalar")
    if p.name in MUL_FORMS and c.name in ADD_FORMS:
        kind = "FMA" if "add" in c.name else "FMS"
        if x == t and y != t:
            other = y
        elif y == t and x != t and c.name == "add":
            other = x
        elif y == t and x != t and c.name == "sub" and not b_vec:    # x - a*s  =  a*(-s) + x
            kind, b, other = "FMA", C.Un("-", b), x
        else:
            return None
    elif p.name in ADD_FORMS and c.name in MUL_FORMS:
        kind = "FAM" if "add" in p.name else "FSM"
        if x == t and y != t:
            other = y
        elif y == t and x != t and c.name == "mul":
            other = x
        else:
            return None
    else:
        return None
    if c_vec and base(other) == base(t):
        return None   # c's other operand lies in t's buffer: it would read what the producer no longer wrote
    cycled = {m for m, vec in ((mb, b_vec), (mc, c_vec)) if vec}   # None: covers n elements
    if len(cycled) > 1:
        return None
    m = next(iter(cycled), None)
    if m is not None and base(c.dst) in {base(v) for v, vec in ((b, b_vec), (other, c_vec)) if vec}:
        return None   # a cycled operand inside the destination's buffer: not an exact alias
    op = _Op("fusion", (C.Id(f"FUSION_{kind}"), c.dst, a, b, other, n) + ((m,) if m is not None else ()))
    return op, [c.dst, a] + [b] * b_vec + [other] * c_vec


def _types_ok(op: _Op, pointers: list, types: dict[str, str]) -> bool:
    if any(types.get(base(x)) not in FLOAT_TYPES for x in pointers):
        return False
    dst = pointers[0]
    return all(s == dst for s in pointers[1:] if base(s) == base(dst))


def _dead_after(ops: list[_Op], i: int, j: int, t: C.CExpr, c: _Op, uses: _Uses) -> bool:
    """Is the value the producer wrote to t never read after the consumer (in program order, around the loop)?"""
    if c.overwrites(t, ops[i].count):
        return True
    tb = base(t)
    later = ops[j + 1:]
    for o in later:
        touch = _touch(o, t, tb, ops[i].count)
        if touch is not None:
            return touch
    if not uses.private(tb):   # the buffer's value may be read elsewhere in the kernel
        return False
    for o in ops[:i]:   # the run again (next loop iteration), up to the producer
        touch = _touch(o, t, tb, ops[i].count)
        if touch is not None:
            return touch
    return True


def _touch(o: _Op, t: C.CExpr, tb: str, n: C.CExpr) -> bool | None:
    """None: o does not touch t's buffer; True: o overwrites exactly t without reading it; False: anything else."""
    if tb in o.reads():
        return False
    if base(o.dst) != tb:
        return None
    return o.overwrites(t, n)
