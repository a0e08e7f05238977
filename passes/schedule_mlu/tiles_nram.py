"""NRAM sizing of the tile recipe's kernels (passes/schedule_mlu/tiles.py, tiles_pairs.py): `footprint`, the
largest NRAM bytes per core of a list of kernels as the BANG-C emitter lays them out (pipeline slots, 128-byte
alignment, the scratch tiles of vector forms), without importing the emitter (passes sit below codegen/).
"""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import layout as L


def footprint(t, items: list) -> int:
    """The largest NRAM bytes per core of the kernels of `items`, laid out as the BANG-C emitter does
    (codegen/mlu/emit.py; passes do not import it): every @nram tile times its pipeline slots, 128-byte
    aligned, plus the float scratch tiles the vector forms of its computes use. tests/mlu_compile/
    test_mlu_tiles.py checks that this is never below what the emitter declares."""
    return max((_kernel_nram(k) for k in items if isinstance(k, ir.Kernel)), default=0)


def _kernel_nram(k: ir.Kernel) -> int:
    attrs = dict(k.attrs)
    dense, through = attrs.get("layout") == "dense", attrs.get("pipeline") == "units"
    allocs: dict[str, ir.Alloc] = {}
    slots: dict[str, int] = {}
    assigns: list = []

    def walk(stmts):
        for x in stmts:
            if isinstance(x, ir.Alloc) and x.level == ir.Level.nram:
                allocs[x.name] = x
            elif isinstance(x, ir.Parallel):
                walk(x.body)
            elif isinstance(x, ir.For):
                body = _unwrapped(x, through)
                if _pipelinable(x, body):
                    for name, d in _slot_depths(x.var, body).items():
                        slots[name] = max(slots.get(name, 1), d)
                walk(x.body)
            elif isinstance(x, ir.If):
                walk(x.then + x.orelse)
            elif isinstance(x, ir.Assign):
                assigns.append(x)
    walk(k.body)

    def shape(name):
        return tuple(allocs[name].type.shape)

    def is_dense(name):
        sh = shape(name)
        return dense and len(sh) == 2 and not L.is_rowvec(sh)

    def phys(name):
        sh = shape(name)
        return L.round_up(sh[0] * sh[1], L.PITCH) if is_dense(name) else L.phys_elems(sh)

    def pitch(name):
        return shape(name)[-1] if is_dense(name) else L.pitch(shape(name))

    def opd(e):
        """(kind, length, cols, pitch) of an operand as the emitter classifies it."""
        if not isinstance(e, ir.Ref) or e.name not in allocs:
            return ("const", 0, 0, 0)
        sh = shape(e.name)
        lens = [_slice_len(i) if isinstance(i, ir.Slice) else 1 for i in e.index]
        if len(sh) == 1 and sh[0] == 1 or (all(n == 1 for n in lens) and len(sh) == 1 and sh[0] == 1):
            return ("scalar", 1, 1, 1)
        if L.is_rowvec(sh):
            return ("row", phys(e.name), 1, 1)
        if len(sh) == 1:
            return ("col", phys(e.name), lens[0], 1)
        if not isinstance(e.index[0], ir.Slice):
            return ("col", pitch(e.name), lens[1], 1)
        start = e.index[0].start
        if not (isinstance(start, ir.Const) and start.value == 0):
            return ("full", L.round_up(lens[0] * pitch(e.name), L.PITCH), lens[1], pitch(e.name))
        return ("full", phys(e.name), lens[1], pitch(e.name))

    scratch: set = set()
    vec = ("full", "row", "col")
    for a in assigns:
        dst = opd(a.target)
        v = a.value
        if isinstance(v, ir.Reduce):
            src = opd(v.arg)
            if src[0] == "full" and v.axes == (1,) and src[2] != src[3]:
                scratch |= {(0, src[1]), (1, src[1]), ("mask", src[1]), ("maskrow", src[3])}
        elif isinstance(v, ir.Call) and v.fn == "select" and len(v.args) == 3:
            ops = [opd(x) for x in v.args]
            zero = isinstance(v.args[2], ir.Const) and float(v.args[2].value) == 0.0 and ops[1][0] != "const"
            for j, o in enumerate(ops):
                if not zero and o[0] != dst[0]:
                    scratch.add((j, dst[1]))
        elif isinstance(v, (ir.BinOp, ir.Call)) and len(getattr(v, "args", (0, 0))) == 2 and \
                (isinstance(v, ir.BinOp) or v.fn in ("max", "min", "pow")):
            x, y = (v.lhs, v.rhs) if isinstance(v, ir.BinOp) else v.args
            ka, kb = opd(x)[0], opd(y)[0]
            fn = v.op if isinstance(v, ir.BinOp) else v.fn
            if ka in vec and kb in vec and not (ka == kb == dst[0]):
                pair = {ka, kb}
                cyc = fn in ("+", "-", "*", "/", "max", "min")
                if not ((pair == {"full", "col"} and cyc) or (pair == {"full", "row"} and fn != "pow")):
                    scratch.add((0, dst[1]))
            elif fn == "pow":
                scratch.add((0, dst[1]))
        elif isinstance(v, ir.Call) and v.fn == "reverse":
            scratch.add((0, opd(v.args[0])[1]))
    total = sum(L.round_up(phys(n) * slots.get(n, 1) * L.device_nbytes(a.type.dtype), L.VECTOR_ALIGN)
                for n, a in allocs.items())
    return total + sum(L.round_up(n * 4, L.VECTOR_ALIGN) for _, n in scratch)


def _slice_len(i: ir.Slice) -> int:
    from gir.affine import to_affine
    a, b = to_affine(i.start), to_affine(i.stop)
    n = (b - a).const if a is not None and b is not None else 1
    return -(-n // i.step)


def _unwrapped(f: ir.For, through: bool):
    body = f.body
    while through and len(body) == 1 and isinstance(body[0], ir.For) and _is_one_trip(body[0]):
        body = body[0].body
    return body


def _is_one_trip(f: ir.For) -> bool:
    return isinstance(f.hi, ir.BinOp) and f.hi.op == "+" and f.hi.lhs == f.lo and \
        isinstance(f.hi.rhs, ir.Const) and f.hi.rhs.value == 1


def _pipelinable(f: ir.For, body) -> bool:
    """What the emitter pipelines: loads (and copies of loaded tiles), then computes, then stores."""
    phase, loaded, moved = 0, set(), False
    for x in body:
        if isinstance(x, ir.Move) and x.kind == "load":
            p, moved = 0, True
            loaded.add(x.dst.name)
        elif isinstance(x, ir.Move) and x.kind == "copy" and x.src.name in loaded:
            p = 0
        elif isinstance(x, ir.Assign) or (isinstance(x, ir.For) and x.body and
                                          all(isinstance(y, ir.Assign) for y in x.body)):
            p = 1
        elif isinstance(x, ir.Move) and x.kind == "store":
            p, moved = 2, True
        else:
            return False
        if p < phase:
            return False
        phase = p
    return moved and f.step == 1 and isinstance(f.lo, ir.Const) and f.lo.value == 0


def _slot_depths(var: str, body) -> dict:
    from gir.affine import to_affine

    def advancing(ref):
        if not ref.index or not isinstance(ref.index[0], ir.Slice):
            return False
        a = to_affine(ref.index[0].start)
        return a is not None and a.coeffs.get(var, 0) >= _slice_len(ref.index[0])
    moves = [(x.dst if x.kind in ("load", "copy") else x.src, x.kind) for x in body
             if isinstance(x, ir.Move) and x.kind in ("load", "copy", "store")]
    fixed = {r.name for r, _ in moves if not advancing(r)}
    loaded = {r.name for r, k in moves if k in ("load", "copy")} & fixed
    stored = {r.name for r, k in moves if k == "store"} & fixed
    return {n: 3 if n in loaded and n in stored else 2 for n in loaded | stored}
