"""Peephole: merge a multiply and an add/sub (either order) of the emitted vector ops into one `__bang_fusion`.

Why: on the simulated MLU (as on MLU 3xx) `__bang_fusion` does the two ops at the cost of one simple-class op,
with the same two roundings as the separate ops (targets/mlu/LANGUAGE.md), so the merge changes no value and saves
one op (`vector_op_cycles` + units x `cycles_simple`) on the compute pipe of compute-bound kernels.

It works on the emitted program text of one kernel, run by run: a run is a maximal sequence of consecutive
statement lines that are all `__bang_*` calls at the same indentation (one tile's straight-line computes; a
per-row line `for (int r_ ...) { __bang_*(p + r_ * P, ...); }` of vecops belongs to the run, is never merged, and
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
  other op touches it and t's buffer appears in no line outside the run;
* every operand has a float element type (`types`) and any source sharing the destination's buffer is exactly
  the destination (the language allows only exact aliasing).

Buffers are compared by name (the first identifier of a pointer expression): conservative, any two pointers into
the same buffer count as overlapping unless their texts are equal.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_CALL = re.compile(r"^(\s*)__bang_(\w+)\((.*)\);\s*$")
_ROWS = re.compile(r"^(\s*)for \(int r_ = 0; r_ < (\d+); r_\+\+\) \{ __bang_(\w+)\((.*)\); \}\s*$")   # vecops._per_row
_IDENT = re.compile(r"[A-Za-z_]\w*")
FLOAT_TYPES = ("float", "half", "bfloat16_t")
MUL_FORMS = {"mul": "vec", "mul_scalar": "scalar", "cycle_mul": "cycle"}
ADD_FORMS = {"add": "vec", "add_scalar": "scalar", "cycle_add": "cycle",
             "sub": "vec", "sub_scalar": "scalar", "cycle_sub": "cycle"}


@dataclass(frozen=True)
class _Op:
    indent: str
    name: str             # without the __bang_ prefix
    args: tuple[str, ...]
    rows: int = 0         # > 0: the op runs once per row r_ (a `for` line of vecops._per_row); never fused
    line: str = ""        # the original text of a per-row line

    @property
    def dst_index(self) -> int:
        return 1 if self.name == "fusion" else 0

    @property
    def dst(self) -> str:
        return self.args[self.dst_index]

    @property
    def count(self) -> str | None:
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
        return {w for k, a in enumerate(self.args) if k != self.dst_index for w in _IDENT.findall(a)}

    def text(self) -> str:
        return self.line or f"{self.indent}__bang_{self.name}({', '.join(self.args)});"

    def overwrites(self, t: str, n: str) -> bool:
        """Does the op write all of the n elements at t (and nothing it reads decides that)?"""
        if not self.rows:
            return self.dst == t and self.count == n
        pitch = self.args[-1]
        return (self.dst == f"{t} + r_ * {pitch}" and pitch.isdigit() and n.isdigit()
                and self.rows * int(pitch) == int(n))


def base(ptr: str) -> str:
    m = _IDENT.search(ptr)
    return m.group(0) if m else ""


def split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "(["
        depth -= ch in ")]"
        cur += ch
    out.append(cur.strip())
    return out


def parse_op(line: str) -> _Op | None:
    m = _CALL.match(line)
    if m is not None and m.group(3).count("(") == m.group(3).count(")"):
        return _Op(m.group(1), m.group(2), tuple(split_args(m.group(3))))
    m = _ROWS.match(line)
    if m is not None and m.group(4).count("(") == m.group(4).count(")"):
        return _Op(m.group(1), m.group(3), tuple(split_args(m.group(4))), int(m.group(2)), line)
    return None


def fuse_lines(lines: list[str], types: dict[str, str]) -> tuple[list[str], int]:
    """The kernel body lines with mul/add pairs merged, and the number of merges. `types`: buffer name -> C type."""
    out, merged, k = [], 0, 0
    while k < len(lines):
        op = parse_op(lines[k])
        if op is None:
            out.append(lines[k])
            k += 1
            continue
        end = k
        while end < len(lines) and (o := parse_op(lines[end])) is not None and o.indent == op.indent:
            end += 1
        outside = lines[:k] + lines[end:]
        ops, n = _fuse_run([parse_op(x) for x in lines[k:end]], outside, types)
        out += [o.text() for o in ops]
        merged += n
        k = end
    return out, merged


def _fuse_run(ops: list[_Op], outside: list[str], types: dict[str, str]) -> tuple[list[_Op], int]:
    merged, i = 0, 0
    while i < len(ops):
        fused = _try(ops, i, outside, types)
        if fused is None:
            i += 1
            continue
        j, op = fused
        ops = ops[:i] + ops[i + 1:j] + [op] + ops[j + 1:]
        merged += 1
    return ops, merged


def _try(ops: list[_Op], i: int, outside: list[str], types: dict[str, str]):
    p = ops[i]
    if p.rows or p.name not in MUL_FORMS and p.name not in ADD_FORMS:
        return None
    t, tb = p.dst, base(p.dst)
    j = next((j for j in range(i + 1, len(ops)) if tb in ops[j].reads() or base(ops[j].dst) == tb), None)
    if j is None:
        return None
    c = ops[j]
    p_inputs = {w for a in p.args[1:3] for w in _IDENT.findall(a)}
    if any(base(o.dst) in p_inputs for o in ops[i + 1:j]):
        return None
    combined = _combine(p, c, t)
    if combined is None or not _types_ok(*combined, types) or not _dead_after(ops, i, j, t, c, outside):
        return None
    return j, combined[0]


def _combine(p: _Op, c: _Op, t: str) -> tuple[_Op, list[str]] | None:
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
            kind, b, other = "FMA", f"(-({b}))", x
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
    op = _Op(c.indent, "fusion", (f"FUSION_{kind}", c.dst, a, b, other, n) + ((m,) if m is not None else ()))
    return op, [c.dst, a] + [b] * b_vec + [other] * c_vec


def _types_ok(op: _Op, pointers: list[str], types: dict[str, str]) -> bool:
    if any(types.get(base(x)) not in FLOAT_TYPES for x in pointers):
        return False
    dst = pointers[0]
    return all(s == dst for s in pointers[1:] if base(s) == base(dst))


def _dead_after(ops: list[_Op], i: int, j: int, t: str, c: _Op, outside: list[str]) -> bool:
    """Is the value the producer wrote to t never read after the consumer (in program order, around the loop)?"""
    if c.overwrites(t, ops[i].count):
        return True
    tb = base(t)
    later = ops[j + 1:]
    for o in later:
        touch = _touch(o, t, tb, ops[i].count)
        if touch is not None:
            return touch
    if any(re.search(rf"\b{re.escape(tb)}\b", line) for line in outside):
        return False
    for o in ops[:i]:   # the run again (next loop iteration), up to the producer
        touch = _touch(o, t, tb, ops[i].count)
        if touch is not None:
            return touch
    return True


def _touch(o: _Op, t: str, tb: str, n: str) -> bool | None:
    """None: o does not touch t's buffer; True: o overwrites exactly t without reading it; False: anything else."""
    if tb in o.reads():
        return False
    if base(o.dst) != tb:
        return None
    return o.overwrites(t, n)
