"""Software pipelining of the MLU emitter (codegen/mlu/emit.py, `pipeline=True`): a `for` loop whose body is
loads, then computes, then stores to GDRAM is emitted as a three-stage pipeline. Iteration `it` issues the async
load of tile it+1 and the async store of tile it-1, then computes tile it; one `__sync_io_move_compute()` per
iteration closes the stage. Tiles only loaded or only stored are double-buffered (slot it % 2), a tile both
loaded and stored triple-buffered (load (it+1) % 3, compute it % 3, store (it-1) % 3); a tile whose moved rows
advance with the loop variable needs no slots. `PipelineStage` is a mixin of the kernel emitter (it uses its
`emit`, `move`, `compute`, `stmt`, `bufs`, `through` and `cur`)."""
from __future__ import annotations

from gir import ir
from gir.errors import GirError
from gir.codegen.mlu.cexpr import c_index


class PipelineStage:
    def _pipelinable(self, s: ir.For) -> bool:
        phase = 0
        saw = False
        _, body = _unwrap(s, self.through)
        loaded = set()
        for x in body:
            if isinstance(x, ir.Move) and x.kind == "load":
                p = 0
                loaded.add(x.dst.name)
            elif self._load_copy(x, loaded):   # an on-chip copy of a tile just loaded (the load stage's)
                p = 0
            elif isinstance(x, ir.Assign) or _compute_loop(x):
                p = 1
            elif isinstance(x, ir.Move) and x.kind == "store":
                p, saw = 2, True
            else:
                return False
            if p < phase:
                return False
            phase = p
        loads = any(isinstance(x, ir.Move) and x.kind == "load" for x in body)
        return (saw or loads) and s.step == 1 and c_index(s.lo) == "0"

    def _load_copy(self, x, loaded: set) -> bool:
        """An on-chip copy (`copy` between @nram tiles) reading a tile loaded earlier in the same loop body: it
        joins the load stage (issued async after the load, on the same IO pipe, so in order)."""
        return isinstance(x, ir.Move) and x.kind == "copy" and x.src.name in loaded and \
            self.bufs[x.src.name].level == "nram" and self.bufs[x.dst.name].level == "nram"

    def pipelined(self, s: ir.For) -> None:
        v = s.var
        decode, body = _unwrap(s, self.through)   # one-trip loops decoding the iteration (a unit's indices)
        loads = [x for x in body if isinstance(x, ir.Move) and x.kind in ("load", "copy")]   # copies: _load_copy
        computes = [x for x in body if isinstance(x, ir.Assign) or _compute_loop(x)]
        stores = [x for x in body if isinstance(x, ir.Move) and x.kind == "store"]
        depth = _depths(s, self.through)

        def at(it: str) -> dict:
            """Substitution of the loop variable and the decoding variables in iteration `it`."""
            sub = {v: it}
            for var, lo in decode:
                sub[var] = c_index(lo, sub)
            return sub
        T = f"T_{v}"
        self.emit(f"int {T} = {c_index(s.hi)};")
        # slot of the tile computed (cur), loaded (nxt: tile it+1) and stored (prv: tile it-1) in iteration it
        cur = {2: f"cur_{v}", 3: f"cur3_{v}"}
        nxt = {2: f"1 - cur_{v}", 3: f"(cur3_{v} + 1) % 3"}
        prv = {2: f"1 - cur_{v}", 3: f"(cur3_{v} + 2) % 3"}

        def slots(which: dict):
            return {n: f"({n} + ({which[d]}) * {self.bufs[n].phys})" for n, d in depth.items()}
        self.emit(f"if ({T} > 0) {{")
        self.depth += 1
        for x in loads:
            self.move(x, True, at("0"), slots({2: "0", 3: "0"}))
        self.depth -= 1
        self.emit("}")
        self.emit(f"for (int {v} = 0; {v} < {T}; {v}++) {{")
        self.depth += 1
        for d in sorted(set(depth.values())):
            self.emit(f"int {cur[d]} = {v} % {d};")
        self.emit("__sync_io_move_compute();")
        self.emit(f"if ({v} + 1 < {T}) {{")
        self.depth += 1
        for x in loads:
            self.move(x, True, at(f"({v} + 1)"), slots(nxt))
        self.depth -= 1
        self.emit("}")
        self.emit(f"if ({v} > 0) {{")
        self.depth += 1
        for x in stores:
            self.move(x, True, at(f"({v} - 1)"), slots(prv))
        self.depth -= 1
        self.emit("}")
        for var, lo in decode:
            self.emit(f"int {var} = {c_index(lo)};")
        self.cur = {n: cur[d] for n, d in depth.items()}
        for x in computes:
            self.stmt(x) if isinstance(x, ir.For) else self.compute(x)
        self.cur = {}
        self.depth -= 1
        self.emit("}")
        self.emit("__sync_io_move_compute();")
        self.emit(f"if ({T} > 0) {{")
        self.depth += 1
        for x in stores:
            self.move(x, True, at(f"({T} - 1)"), slots({2: f"({T} - 1) % 2", 3: f"({T} - 1) % 3"}))
        self.depth -= 1
        self.emit("}")
        self.emit("__sync_io_move_compute();")


def _compute_loop(x) -> bool:
    """A loop of computes only (a scan's row steps): part of a pipelined loop's compute stage."""
    return isinstance(x, ir.For) and bool(x.body) and all(isinstance(y, ir.Assign) for y in x.body)


def _one_trip(f) -> bool:
    return isinstance(f, ir.For) and f.step == 1 and isinstance(f.hi, ir.BinOp) and f.hi.op == "+" and \
        f.hi.lhs == f.lo and isinstance(f.hi.rhs, ir.Const) and f.hi.rhs.value == 1


def _unwrap(s: ir.For, through: bool = True) -> tuple[list, tuple]:
    """([(var, lo)], body): a loop body that is nested one-trip loops `for u in e..e + 1` (decoding a work unit's
    indices so that region starts stay affine) seen through them: the pipeline substitutes each `u` by its `e`
    in the iteration a move belongs to."""
    decode, body = [], s.body
    while through and len(body) == 1 and _one_trip(body[0]):
        decode.append((body[0].var, body[0].lo))
        body = body[0].body
    return decode, body


def _depths(s: ir.For, through: bool = False) -> dict[str, int]:
    """Pipeline slots of the tiles a pipelined loop moves: 3 for tiles both loaded and stored, else 2. A tile
    whose moved rows advance with the loop variable (rows k*S..k*S+S of a slab in iteration k) needs none:
    every iteration has rows of its own."""
    moves = [(x.dst if x.kind in ("load", "copy") else x.src, "load" if x.kind == "copy" else x.kind)
             for x in _unwrap(s, through)[1] if isinstance(x, ir.Move) and x.kind in ("load", "store", "copy")]
    fixed = {r.name for r, _ in moves if not _advancing(r, s.var)}
    loaded = {r.name for r, k in moves if k == "load"} & fixed
    stored = {r.name for r, k in moves if k == "store"} & fixed
    return {n: 3 if n in loaded and n in stored else 2 for n in loaded | stored}


def _advancing(ref: ir.Ref, var: str) -> bool:
    """`ref`'s first index is a slice starting at c * var + ... with c at least its length, and no other index
    depends on `var`: the regions of different iterations are disjoint."""
    from gir.affine import to_affine
    if not ref.index or not isinstance(ref.index[0], ir.Slice):
        return False
    a = to_affine(ref.index[0].start)
    if a is None or a.coeffs.get(var, 0) < _const_len(ref.index[0]):
        return False
    for i in ref.index[1:]:
        for part in ((i.start, i.stop) if isinstance(i, ir.Slice) else (i,)):
            b = to_affine(part)
            if b is None or b.coeffs.get(var, 0):
                return False
    return True


def _const_len(i: ir.Slice) -> int:
    from gir.affine import to_affine
    a, b = to_affine(i.start), to_affine(i.stop)
    d = b - a
    if not d.is_const:
        raise GirError("slice length must be constant", i.loc)
    return int(d.const)
