"""Halo staging: a row tensor read at several constant offsets along the lane axis is read from global
memory once per chunk and the shifted variants from shared memory.

RoPE on a flat row (`x[s, d]`, `x[s, d + 1]`, `x[s, d - 1]`) or a stencil (`x[i, j - 2] + x[i, j + 3]`) would
otherwise issue one global load per offset, each shifted warp access straddling one more sector. A *halo
group* is the set of column references of one tensor with the same leading (row) indices whose innermost
index is `_c + o` for a constant `o`, possibly clamped into the dimension (`max(_, 0)`, `min(_, ext - 1)`: the
clamps `index_bounds.clamp_guarded` puts on accesses guarded by a `select`). A group with two or more offsets
is staged when the configuration asks for it (`RowConfig.halo`): per chunk of `span = threads * vec` columns
starting at `base`, the team loads columns `[base + lo, base + span + hi)` (lo <= 0 <= hi: the extreme
offsets) into `_h<j>` (the chunk itself with the lanes' own, aligned vector accesses at offset `HL`, the
head and tail halos with one element per thread), synchronises, and every member copies its lanes' shifted
columns from there (clamped members element by element through their clamped index, so values are those of
the global read wherever the column is in range; out-of-range columns read the masked load's 0, and the guard
proves they are never used). A second barrier protects the buffer before the next chunk.

Only the halo's sectors are read twice (by the two chunks beside it): the cost model charges them
(passes/schedule/cost.py), and the shared buffer (`rows_per_block x (HL + span + hi)` elements) must fit.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.affine import free_vars, to_affine
from gir.printer import format_expr
from gir.passes.schedule.emit import C, Lines, V, add, alloc, dim_expr, fx, mul, simplify, subst

SECTOR = 32


@dataclass(frozen=True)
class Halo:
    name: str
    lead: tuple                       # the leading (row) indices, shared by every member
    dtype: ir.DType
    ext: ir.Dim                       # the tensor's innermost extent
    members: tuple                    # ((colref index, offset, clamped), ...)
    lo: int                           # min(offsets, 0)
    hi: int                           # max(offsets, 0)


def _offset(e: ir.Expr, cin: str, top: str) -> tuple[int, bool] | None:
    """(o, clamped) when `e` is `cin + o`, possibly inside clamps into [0, ext - 1]; otherwise None."""
    clamped = False
    while isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2:
        bound = format_expr(simplify(e.args[1]))
        if (e.fn, bound) not in (("max", "0"), ("min", top)):
            return None
        e, clamped = e.args[0], True
    a = to_affine(e)
    if a is None or a.coeffs != {cin: 1}:
        return None
    return a.const, clamped


def groups(rk) -> list[Halo]:
    """The halo groups of a row analysis (one column dim; row-dependent tensors only)."""
    if len(rk.g.C) != 1:
        return []
    found: dict[tuple, list] = {}
    for i, c in enumerate(rk.colrefs):
        if c.broadcast or c.mode == "inv" or not c.ref.index:
            continue
        lead = c.ref.index[:-1]
        if any(rk.cin in free_vars(x) for x in lead):
            continue
        ext = rk.types[c.ref.name].shape[-1]
        off = _offset(c.ref.index[-1], rk.cin, format_expr(simplify(add(dim_expr(ext), C(-1)))))
        if off is None:
            continue
        key = (c.ref.name, tuple(format_expr(x) for x in lead))
        found.setdefault(key, []).append((i, off[0], off[1]))
    out = []
    for (name, _), mem in found.items():
        offs = {o for _, o, _ in mem}
        if len(offs) < 2:
            continue
        ref = rk.colrefs[mem[0][0]].ref
        out.append(Halo(name, ref.index[:-1], rk.colrefs[mem[0][0]].dtype, rk.types[name].shape[-1],
                        tuple(mem), min(min(offs), 0), max(max(offs), 0)))
    return out


def active(cfg) -> bool:
    """Whether a configuration stages its halo groups: block teams only (the buffer's barrier is the
    block's; a warp team per row would need per-warp barriers the checks do not model)."""
    return cfg.halo and cfg.rows_per_block == 1 and not cfg.split


def members(rk) -> set[int]:
    return {i for h in rk.halos for i, _, _ in h.members}


def head(h: Halo, vec: int) -> int:
    """Elements of `_h<j>` in front of the chunk: the negative halo rounded up to the vector width."""
    return -(-(-h.lo) // vec) * vec


def width(h: Halo, cfg) -> int:
    return head(h, cfg.vec) + cfg.threads * cfg.vec + h.hi


def smem_bytes(rk, cfg) -> int:
    return sum(h.dtype.nbytes * width(h, cfg) for h in rk.halos) if active(cfg) else 0


def extra_sectors(h: Halo) -> int:
    """Sectors a chunk reads beyond its own columns (the halos: also read by the chunks beside it)."""
    return -(-(-h.lo * h.dtype.nbytes) // SECTOR) + -(-(h.hi * h.dtype.nbytes) // SECTOR)


def allocs(rk, L: Lines, cfgs) -> None:
    cfgs = [c for c in cfgs if c is not None and active(c)]
    if not cfgs:
        return
    for j, h in enumerate(rk.halos):
        n = max(width(h, c) for c in cfgs)
        L(alloc(f"_h{j}", h.dtype, [n], "shared"))


def load(rk, L: Lines, idx: list[int], kk: ir.Expr, cb: ir.Expr) -> list[int]:
    """Stage the halo groups that `idx` needs and copy their members into registers; the rest of idx."""
    if not active(rk.cfg):
        return idx
    done: set[int] = set()
    for j, h in enumerate(rk.halos):
        mine = [(i, o, cl) for i, o, cl in h.members if i in idx]
        if mine:
            _stage(rk, L, j, h, cb)
            for i, o, cl in mine:
                _copy(rk, L, j, h, i, o, cl, kk, cb)
            L("sync @block")
            done.update(i for i, _, _ in mine)
    return [i for i in idx if i not in done]


def _stage(rk, L: Lines, j: int, h: Halo, cb: ir.Expr) -> None:
    cfg, VW, tid = rk.cfg, rk.cfg.vec, rk.tid
    T, span, HL = cfg.threads, cfg.threads * cfg.vec, head(h, cfg.vec)
    env = rk._env(cb)
    lead = [format_expr(simplify(subst(x, env))) for x in h.lead]
    base = simplify(add(cb, mul(C(-VW), tid)))
    own = simplify(mul(tid, C(VW)))
    vec_ok = VW > 1 and (bool(cfg.shift) or not isinstance(h.ext, int) or h.ext % VW == 0)
    attrs = f" with vec={VW}, mask, other=0" if vec_ok else " with mask, other=0"

    def src(start: ir.Expr, n: int) -> str:
        s = simplify(start)
        return f"{h.name}[{', '.join(lead + [f'{format_expr(s)}:{fx(add(s, C(n)))}'])}]"

    def dst(start: ir.Expr, n: int) -> str:
        s = simplify(start)
        return f"_h{j}[{format_expr(s)}:{fx(add(s, C(n)))}]"

    L(f"load {dst(add(own, C(HL)), VW)} <- {src(cb, VW)}{attrs}")
    for n, at, pos in ((-h.lo, h.lo, HL + h.lo), (h.hi, span, HL + span)):
        if n <= 0:
            continue
        t: ir.Expr = tid
        if n > T:
            L.open(f"for _t in 0..{-(-n // T)}")
            t = add(tid, mul(V("_t"), C(T)))
        L.open(f"if {fx(t)} < {n}")
        L(f"load {dst(add(t, C(pos)), 1)} <- {src(add(base, add(t, C(at))), 1)} with mask, other=0")
        L.close()
        if n > T:
            L.close()
    L("sync @block")


def _copy(rk, L: Lines, j: int, h: Halo, i: int, o: int, clamped: bool, kk: ir.Expr, cb: ir.Expr) -> None:
    """Lane columns `cb + e + o` of member i: `_h<j>` position `(column - base) + HL`."""
    VW = rk.cfg.vec
    HL = head(h, VW)
    dst = f"{rk.px}i{i}"
    if not clamped:
        s = simplify(add(mul(rk.tid, C(VW)), C(HL + o)))
        L(f"copy {dst}[{fx(kk)}, 0:{VW}] <- _h{j}[{format_expr(s)}:{fx(add(s, C(VW)))}]")
        return
    base = simplify(add(cb, mul(C(-VW), rk.tid)))
    env = rk._env(add(cb, V("_e")))
    col = subst(rk.colrefs[i].ref.index[-1], env)
    # chunks past the row's end (a register-cached row of fixed chunk count) compute lanes that are never
    # stored: their clamped column may lie before the chunk, so the position is kept in the staged range
    pos = ir.Call("max", (ir.BinOp("+", ir.BinOp("-", col, base), C(HL)), C(HL + h.lo)))
    L.open(f"for _e in 0..{VW}")
    L(f"copy {dst}[{fx(kk)}, _e:_e + 1] <- _h{j}[{format_expr(pos)}]")
    L.close()
