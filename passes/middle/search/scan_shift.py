"""Shifted rows for the `scan-rows` kernels: rows that start off a 32-byte sector (f32 `cumsum(x[i, j], j)` at
N = 2039: row i starts at byte 8156 * i).

A warp's 32 consecutive positions of such a row straddle one sector more than they move (5 instead of 4 for f32:
1.22x compulsory traffic at N = 2039). The shifted kernel walks position `q - _s` at chunk slot q, where `_s` is
the row's skew: `(row start) mod A` for the forward pass, `-(row start + S) mod A` for the reverse pass (which
walks `S - 1 - (q - _s)`), A the elements per sector of the narrowest output. Every warp access of a tensor
laid out like the outputs then starts on a sector; slots outside the row are masked loads and stores and the
scan's identity. One chunk more per row at most (cdiv(S + _s, T x V) chunks).

As in passes/schedule/shift.py the skew must be quasi-affine for the explicit layer: the kernel is specialised
(size guard) on the hinted residues mod A of the outputs' row pitches (and of S for a reverse pass); other sizes
take the unshifted body. The skew is the one-iteration loop `for _s in R..R + 1` around each pass.
"""
from __future__ import annotations

from gir import ir
from gir.affine import to_affine
from gir.passes.middle.search.options import hint

SECTOR = 32


def _start(index, shape, res: dict[str, int], unit: int, pos_of: dict[str, int]) -> dict | None:
    """Coefficients mod `unit` of the output positions in the row start (linear offset of the last axis' 0) of a
    reference `index` into a tensor of `shape`, the pitch sizes replaced by their residues; the constant under
    key None. None when an index is not affine in the statement's variables."""
    out: dict = {}
    for k, idx in enumerate(index[:-1]):
        p = 1
        for d in shape[k + 1:]:
            if not isinstance(d, int) and d not in res:
                return None   # a pitch size the guard does not fix
            p = p * (d if isinstance(d, int) else res[d]) % unit
        a = to_affine(idx)
        if a is None or any(v not in pos_of for v in a.coeffs):
            return None
        out[None] = (out.get(None, 0) + a.const * p) % unit
        for v, c in a.coeffs.items():
            out[pos_of[v]] = (out.get(pos_of[v], 0) + c * p) % unit
    return {k: c for k, c in out.items() if c}


def _laid_out(g, scans, outs) -> list:
    """(statement, reference) of the operands of the outputs' shape (shifted with them)."""
    return [(sc, r) for sc, t in zip(scans, outs) for r in sc.refs if tuple(g.types[r.name].shape) == tuple(t.shape)]


def plan(g, scans, hints: dict[str, int], rows: bool = True) -> dict | None:
    """The shift of a scan kernel over `scans`: {"A", "residues", "start", "S"}, or None where every row starts
    on a sector at the hinted sizes (for a row scan, `rows`, in both directions) or the outputs disagree on where
    their rows start. A column scan's skew is the row start's alone (the scan position among its terms). A is
    the elements per sector of the narrowest output or operand of the outputs' shape. A row scan is shifted only
    where the bytes it aligns (outputs, operands whose rows start where theirs do) outweigh those it misaligns
    (operands along the row whose rows all start on a sector: `w[j]`), and over rows longer than a warp's 32 lanes;
    a column scan only over 32 columns or more (a row of fewer is a sector or two: the tiles would cost more than
    they save)."""
    outs = [g.types[sc.s.target] for sc in scans]
    laid = _laid_out(g, scans, outs)
    unit = SECTOR // min([t.dtype.nbytes for t in outs] + [g.types[r.name].dtype.nbytes for _, r in laid])
    if hint(outs[0].shape[-1], hints) < 32 or (rows and hint(scans[0].s.ranges[scans[0].p.axis], hints) <= 32):
        return None   # (a row one warp access covers costs the same sectors however its lanes are placed)
    syms: list[str] = []
    for t in outs:
        for d in t.shape[1:]:
            if isinstance(d, str) and d not in syms:
                syms.append(d)
    S = scans[0].s.ranges[scans[0].p.axis]
    reverse = rows and any(sc.p.reverse for sc in scans)
    if reverse and isinstance(S, str) and S not in syms:
        syms.append(S)
    res = {s: hint(s, hints) % unit for s in syms}
    starts = []
    for sc, t in zip(scans, outs):
        pos_of = {v: i for i, v in enumerate(sc.s.out_vars)}
        starts.append(_start([ir.Var(v) for v in sc.s.out_vars], t.shape, res, unit, pos_of))
    if any(s is None or s != starts[0] for s in starts):
        return None
    s_res = (S if isinstance(S, int) else res[S]) % unit if reverse else 0
    if not starts[0] and not (reverse and s_res):
        return None
    if rows and _misaligns(g, scans, outs, res, unit, starts[0]):
        return None
    return {"A": unit, "residues": tuple(sorted(res.items())), "start": starts[0], "S": s_res}


def _misaligns(g, scans, outs, res: dict, unit: int, start: dict) -> bool:
    """Whether shifting a row scan's lanes misaligns more operand bytes per position than it aligns."""
    gained = sum(t.dtype.nbytes for t in outs)
    lost = 0
    for sc in scans:
        pos_of = {v: i for i, v in enumerate(sc.s.out_vars)}
        for r in sc.refs:
            if not r.index or r.index[-1] != ir.Var(sc.p.axis):
                continue
            st = _start(r.index, g.types[r.name].shape, res, unit, pos_of)
            if st == start:
                gained += g.types[r.name].dtype.nbytes
            elif st == {}:
                lost += g.types[r.name].dtype.nbytes
    return lost >= gained


def guards(sh: dict) -> str:
    """The size guard of the shifted body ("": none, every size takes it)."""
    return " and ".join(f"{s} % {sh['A']} == {r}" for s, r in sh["residues"])


def skew(sh: dict, env: dict[int, str], reverse: bool) -> str:
    """`R` of the pass's loop `for _s in R..R + 1`: the skew in the kernel's variables (env: position -> text)."""
    A = sh["A"]
    terms = {k: c for k, c in sh["start"].items()}
    if reverse:   # -(start + S) mod A: every coefficient negated mod A
        terms[None] = terms.get(None, 0) + sh["S"]
        terms = {k: (-c) % A for k, c in terms.items()}
    parts = [f"{c} * ({env[k]})" for k, c in sorted((k, c) for k, c in terms.items() if k is not None and c)]
    if terms.get(None):
        parts.append(str(terms[None]))
    return f"({' + '.join(parts)}) % {A}" if parts else "0"
