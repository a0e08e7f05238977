"""Shifted lane mapping for rows that start off a 32-byte sector boundary (f32 N = 1025: row i starts at
byte 4100 * i).

With lanes on consecutive columns from the row start, every warp access of such a row straddles one
sector more than it moves (5 instead of 4 for 32 scalar f32 lanes: 1.225x compulsory traffic for softmax at
N = 1025). A shifted row kernel (`RowConfig.shift = A`, A = elements per 32-byte sector of the narrowest row
tensor) moves the lanes back by the row's skew `_s = (row start) mod A`: lane l of chunk k takes column
`k * span + l * vec - _s`, so every warp access starts on a sector (and a 16-byte vector) boundary; columns
outside the row (`< 0` or `>= N`) are masked loads/stores and identities in the reductions.

The explicit layer needs region starts affine in loop variables, and the row start `row * N` is not. The
kernel is therefore specialised (size guard) on the hinted residues mod A of the sizes in the row pitch
(`N % 8 == 1`): the skew is then quasi-affine, `(row * 1) % 8`, and becomes the one-iteration loop
`for _s in R..R + 1` around the row body, whose slices are affine in `_s`. The alignment check proves every
vector access aligned from the guard and that loop (z3), the bounds check sees the masks.

Broadcast operands (gamma[j], row start 0) cannot keep lane-private registers across rows when the skew
changes per row: a block stages them in shared memory once (`_g<i>`, A elements of zero head padding, then
the row), and every row copies its shifted columns from there (no global traffic).
"""
from __future__ import annotations

from gir import ir
from gir.affine import to_affine
from gir.printer import format_expr
from gir.passes.schedule.emit import C, Lines, V, add, alloc, dim_expr, mul, simplify, subst
from gir.passes.schedule.groups import rvar

SECTOR = 32


def _row_tensors(rk) -> list[tuple[ir.Ref, ir.DType, tuple]]:
    """(reference, dtype, shape) of every row-dependent tensor the lanes stream along the innermost column
    (halo groups by their column `_c` itself: the staged chunk loads, halo.py)."""
    out = [(c.ref, c.dtype, rk.types[c.ref.name].shape) for c in rk.colrefs if c.mode == "vec" and not c.broadcast]
    out += [(ir.Ref(h.name, h.lead + (ir.Var(rk.cin),)), h.dtype, rk.types[h.name].shape) for h in rk.halos]
    stores = [ir.Ref(n, tuple(ir.Var(rvar(k)) for k in range(len(rk.g.R))) + (ir.Var(rk.cin),))
              for n in rk.full_stores]
    out += [(r, rk.types[r.name].dtype, rk.types[r.name].shape) for r in stores]
    return out


def shift_unit(rk, halo: bool = False) -> int:
    """A (elements per 32-byte sector of the narrowest row tensor), or 0 where the group cannot shift:
    one column dim, every column operand a unit-stride `x[..., j]` access (no gathers; with `halo`, members
    of halo groups are staged from aligned chunk loads), broadcast operands one-dimensional (their rows start
    at 0), and at least one row tensor."""
    if len(rk.g.C) != 1 or not _row_tensors(rk):
        return 0
    staged_halo = {i for h in rk.halos for i, _, _ in h.members} if halo else set()
    for i, c in enumerate(rk.colrefs):
        if i in staged_halo:
            continue
        if c.mode != "vec" or not c.aligned_offset:
            return 0
        if c.broadcast and len(rk.types[c.ref.name].shape) != 1:
            return 0
    sizes = [dt.nbytes for _, dt, _ in _row_tensors(rk)] + [c.dtype.nbytes for c in rk.colrefs]
    return SECTOR // min(sizes)


def _pitch_syms(rk) -> list[str]:
    syms: list[str] = []
    for _, _, shape in _row_tensors(rk):
        for d in shape[1:]:
            if isinstance(d, str) and d not in syms:
                syms.append(d)
    return syms


def residues(rk, unit: int, hints: dict[str, int]) -> tuple[tuple[str, int], ...] | None:
    """The hinted residues mod `unit` of the sizes in the row pitches, or None when every row starts
    sector-aligned at the hinted sizes (nothing to shift) or the row tensors disagree on the row start."""
    res = tuple((s, int(hints.get(s, 4096)) % unit) for s in _pitch_syms(rk))
    exprs = {format_expr(_start(r, shape, dict(res), unit)) for r, _, shape in _row_tensors(rk)}
    if len(exprs) != 1:
        return None
    e = _start(_row_tensors(rk)[0][0], _row_tensors(rk)[0][2], dict(res), unit)
    return None if isinstance(e, ir.Const) else res


def _start(ref: ir.Ref, shape, res: dict[str, int], unit: int) -> ir.Expr:
    """The row start of `ref` (linear element offset of its column 0) mod `unit`, with the pitch sizes
    replaced by their residues: an affine expression of the row variables (coefficients reduced mod unit)."""
    total: ir.Expr = C(0)
    for k, idx in enumerate(ref.index[:-1]):
        p = 1
        for d in shape[k + 1:]:
            p = p * (d if isinstance(d, int) else res[d]) % unit
        if p:
            total = add(total, mul(C(p), idx))
    return simplify(total)


def skew_expr(rk, cfg) -> ir.Expr:
    """`(row start) % A` in the kernel's variables (the row environment of the current body)."""
    ref, _, shape = _row_tensors(rk)[0]
    e = simplify(subst(_start(ref, shape, dict(cfg.residues), cfg.shift), rk.rowenv))
    a = to_affine(e)  # coefficients mod A (a persistent grid of 264 blocks: `(_b0 + 264 * _rr) % 8` = `_b0 % 8`)
    if a is not None:
        e = C(a.const % cfg.shift)
        for name, coef in sorted(a.coeffs.items()):
            if coef % cfg.shift:
                e = add(e, mul(C(coef % cfg.shift), V(name)))
        e = simplify(e)
    return ir.BinOp("%", e, C(cfg.shift))


def guards(rk, cfg) -> list[str]:
    """Residue guards of the specialisation, and the register cache's row-length cap (the skew can add
    up to A - 1 columns in front of the row)."""
    out = [f"{s} % {cfg.shift} == {r}" for s, r in cfg.residues]
    if cfg.cached and not isinstance(rk.cin_ext, int):
        out.append(f"{format_expr(dim_expr(rk.cin_ext))} <= {cfg.cached * cfg.threads * cfg.vec - cfg.shift + 1}")
    return out


def misaligned_fraction(rk, hints: dict[str, int], itemsize: int) -> float:
    """Share of rows of a [rows, N] tensor of `itemsize` bytes that start off a sector (hinted N)."""
    n = int(rk.cin_ext if isinstance(rk.cin_ext, int) else hints.get(rk.cin_ext, 4096))
    return sum((q * n * itemsize) % SECTOR != 0 for q in range(SECTOR)) / SECTOR


def chunks(cin: int, cfg) -> int:
    """Chunks of `threads * vec` columns a (shifted) row may span."""
    span = cfg.threads * cfg.vec
    return -(-(cin + max(cfg.shift - 1, 0)) // span)


def staged(rk) -> list[int]:
    """Column operands staged through shared memory by a shifted kernel (the broadcast ones)."""
    return [i for i, c in enumerate(rk.colrefs) if c.broadcast]


def staged_allocs(rk, L: Lines, cfg) -> None:
    n = cfg.shift + cfg.cached * cfg.threads * cfg.vec
    for i in staged(rk):
        L(alloc(f"_g{i}", rk.colrefs[i].dtype, [n], "shared"))


def stage(rk, L: Lines, cfg) -> None:
    """Load every broadcast operand once per block into `_g<i>`: the row at offset A (16-byte vectors,
    aligned), and A zeros in front (a fully masked load writes `other`, reading nothing)."""
    idx = staged(rk)
    if not idx:
        return
    VW, A, span = cfg.vec, cfg.shift, cfg.threads * cfg.vec
    head = mul(rk.tid, C(VW))
    L.open(f"if {format_expr(simplify(rk.tid))} < {A // VW}")
    for i in idx:
        c = rk.colrefs[i]
        src = f"{c.ref.name}[{format_expr(simplify(add(head, C(-A))))}:{format_expr(simplify(add(head, C(VW - A))))}]"
        L(f"load _g{i}[{format_expr(simplify(head))}:{format_expr(simplify(add(head, C(VW))))}] <- {src} "
          f"with vec={VW}, mask, other=0")
    L.close()
    L.open(f"for _k in 0..{cfg.cached}")
    cb = simplify(add(mul(V("_k"), C(span)), head))
    for i in idx:
        c = rk.colrefs[i]
        dst = f"_g{i}[{format_expr(simplify(add(cb, C(A))))}:{format_expr(simplify(add(cb, C(A + VW))))}]"
        src = f"{c.ref.name}[{format_expr(cb)}:{format_expr(simplify(add(cb, C(VW))))}]"
        L(f"load {dst} <- {src} with vec={VW}, mask, other=0")
    L.close()
    L("sync @block")


def copy_staged(rk, L: Lines, i: int, kk: ir.Expr, col: ir.Expr) -> None:
    """Per row and chunk: the lane's shifted columns of staged operand i, shared → registers."""
    VW, A = rk.cfg.vec, rk.cfg.shift
    s = simplify(add(col, C(A)))
    L(f"copy {rk.px}i{i}[{format_expr(simplify(kk))}, 0:{VW}] <- _g{i}[{format_expr(s)}:"
      f"{format_expr(simplify(add(s, C(VW))))}]")
