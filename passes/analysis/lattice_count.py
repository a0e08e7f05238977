"""Exact number of integer points of a bounded system of linear constraints, without visiting them.

A constraint is `(coeffs, const, eq)`: sum(coeffs[v] * v) + const >= 0 (== 0 if eq), variables are
ints, coefficients nonzero ints. `count_cons(cons, box)` repeats: gcd-normalise, propagate bounds into
the box (var -> (lo, hi)), drop constraints that hold on the whole box, substitute an equality's
unit-coefficient variable (the widest one; a two-sided `c1 <= f <= c2` narrower than one of f's unit
variables is first named `f = t`). Then the variables split into independent components (product of
counts); in each, it branches on the variable whose range leaves the fewest values where some
constraint is undecided, and counts every range where all are decided in closed form. Index sets of
tiled loops (`b + 528 r < M`, `2048 k + 128 w + 4 l + e < N`) take a handful of steps at any size.
"""
from __future__ import annotations

from math import gcd


class Unbounded(ValueError):
    """Some variable of the set has no finite bound that the propagation could find."""


def _range(coeffs, const, box, skip=None):
    lo = hi = const
    for v, a in coeffs.items():
        if v == skip:
            continue
        l, h = box[v]
        if a > 0:
            lo = None if lo is None or l is None else lo + a * l
            hi = None if hi is None or h is None else hi + a * h
        else:
            lo = None if lo is None or h is None else lo + a * h
            hi = None if hi is None or l is None else hi + a * l
    return lo, hi


def _cdiv(a, b):
    return -(-a // b)


def _normalize(cons):
    """Divide each constraint by the gcd of its coefficients; None if one is trivially infeasible."""
    out = []
    for coeffs, const, eq in cons:
        if not coeffs:
            if (const != 0) if eq else (const < 0):
                return None
            continue
        g = 0
        for a in coeffs.values():
            g = gcd(g, a)
        if g > 1:
            if eq:
                if const % g:
                    return None
                const //= g
            else:
                const = const // g  # floor: sum(a/g x) >= -const/g  <=>  >= ceil(-const/g)
            coeffs = {v: a // g for v, a in coeffs.items()}
        out.append((coeffs, const, eq))
    return out


def _propagate(cons, box, rounds=40) -> bool:
    """Tighten the box from the constraints; False if it becomes empty."""
    for _ in range(rounds):
        changed = False
        for coeffs, const, eq in cons:
            for v, a in coeffs.items():
                rlo, rhi = _range(coeffs, const, box, skip=v)
                lo, hi = box[v]
                if a > 0:  # a v >= -R >= -rhi ; eq: a v <= -rlo
                    if rhi is not None:
                        nlo = _cdiv(-rhi, a)
                        if lo is None or nlo > lo:
                            lo, changed = nlo, True
                    if eq and rlo is not None:
                        nhi = (-rlo) // a
                        if hi is None or nhi < hi:
                            hi, changed = nhi, True
                else:
                    b = -a  # b v <= R <= rhi ; eq: b v >= rlo
                    if rhi is not None:
                        nhi = rhi // b
                        if hi is None or nhi < hi:
                            hi, changed = nhi, True
                    if eq and rlo is not None:
                        nlo = _cdiv(rlo, b)
                        if lo is None or nlo > lo:
                            lo, changed = nlo, True
                if lo is not None and hi is not None and lo > hi:
                    return False
                box[v] = (lo, hi)
        if not changed:
            break
    return True


def _status(coeffs, const, eq, box):
    """True (always holds on the box), False (never), None (depends)."""
    lo, hi = _range(coeffs, const, box)
    if eq:
        if lo > 0 or hi < 0:
            return False
        return True if lo == hi == 0 else None
    if lo >= 0:
        return True
    return False if hi < 0 else None


def _subst(cons, v, e_coeffs, e_const):
    out = []
    for coeffs, const, eq in cons:
        a = coeffs.get(v)
        if a is None:
            out.append((coeffs, const, eq))
            continue
        nc = {u: b for u, b in coeffs.items() if u != v}
        for u, b in e_coeffs.items():
            nc[u] = nc.get(u, 0) + a * b
        out.append(({u: b for u, b in nc.items() if b}, const + a * e_const, eq))
    return out


def count_cons(cons, box) -> int:
    """Points of `box` (var -> (lo, hi), None where unknown) satisfying every constraint of `cons`."""
    box, slabs = dict(box), 0
    while True:
        cons = _normalize(cons)
        if cons is None or not _propagate(cons, box):
            return 0
        if any(lo is None or hi is None for lo, hi in box.values()):
            raise Unbounded("unbounded variable")
        kept = []
        for c in cons:
            st = _status(*c, box)
            if st is False:
                return 0
            if st is None:
                kept.append(c)
        cons = kept
        units = [(c, v) for c in cons if c[2] for v, a in c[0].items() if a in (1, -1)]
        if not units:
            if slabs < 16 and _name_slab(cons, box):
                slabs += 1
                continue
            break
        # eliminate the widest variable: usually an index defined by the others (o = 512k + 32w + l)
        unit = max(units, key=lambda cv: box[cv[1]][1] - box[cv[1]][0])
        (coeffs, const, _), v = unit
        a = coeffs[v]  # v = -(rest + const) / a
        e = {u: -b * a for u, b in coeffs.items() if u != v}
        ec = -const * a
        lo, hi = box.pop(v)
        cons = _subst([c for c in cons if c is not unit[0]], v, e, ec)
        cons.append((dict(e), ec - lo, False))
        cons.append(({u: -b for u, b in e.items()}, hi - ec, False))
    return _count_components(cons, box)


def _name_slab(cons, box) -> bool:
    """Turn a pair `-c1 <= f <= c2` into `f = t` with a fresh `0..` variable t in [-c1, c2] when f has a
    unit-coefficient variable wider than that range (`4l <= o <= 4l + 3`: o becomes 4l + t, t in 0..3)."""
    ineqs = {}
    for c in cons:
        if not c[2]:
            ineqs[frozenset(c[0].items())] = c
    for key, (f, c1, _) in ineqs.items():
        other = ineqs.get(frozenset((v, -a) for v, a in key))
        if other is None:
            continue
        width = c1 + other[1]
        if not any(a in (1, -1) and box[v][1] - box[v][0] > width for v, a in f.items()):
            continue
        t = max(box) + 1
        box[t] = (-c1, other[1])
        cons[:] = [c for c in cons if c is not ineqs[key] and c is not other]
        cons.append(({**f, t: -1}, 0, True))
        return True
    return False


def _count_components(cons, box) -> int:
    parent = {v: v for v in box}

    def find(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for coeffs, _, _ in cons:
        vs = list(coeffs)
        for u in vs[1:]:
            parent[find(u)] = find(vs[0])
    groups: dict[int, list] = {}
    for c in cons:
        groups.setdefault(find(next(iter(c[0]))), []).append(c)
    total = 1
    linked = set()
    for gcons in groups.values():
        gvars = {v for c in gcons for v in c[0]}
        linked |= gvars
        total *= _count_component(gcons, {v: box[v] for v in gvars})
        if total == 0:
            return 0
    for v, (lo, hi) in box.items():
        if v not in linked:
            total *= hi - lo + 1
    return total


def _segments(v, cons, box):
    """[(start, end, statuses)] partitioning v's range so that every constraint's status is constant."""
    lo, hi = box[v]
    points = {lo, hi + 1}
    for coeffs, const, eq in cons:
        a = coeffs.get(v)
        if a is None:
            continue
        rlo, rhi = _range(coeffs, const, box, skip=v)
        if eq or a > 0:
            s = 1 if a > 0 else -1
            a, rlo, rhi = a * s, (rlo * s if s > 0 else -rhi), (rhi * s if s > 0 else -rlo)
            p1, p2 = _cdiv(-rhi, a), (_cdiv(-rlo, a) if not eq else (-rlo) // a + 1)
        else:
            b = -a
            p1, p2 = rlo // b + 1, rhi // b + 1
        points.update(p for p in (p1, p2) if lo < p <= hi)
    pts = sorted(points)
    segs = []
    for s, e in zip(pts, pts[1:]):
        sb = dict(box)
        sb[v] = (s, s)
        segs.append((s, e - 1, [(_status(*c, sb) if v in c[0] else None) for c in cons]))
    return segs


def _count_component(cons, box) -> int:
    best = None
    for v in box:
        segs = _segments(v, cons, box)
        cost = sum(e - s + 1 for s, e, st in segs if any(x is None for c, x in zip(cons, st) if v in c[0]))
        if best is None or cost < best[0]:
            best = (cost, v, segs)
    _, v, segs = best
    rest_cons = [c for c in cons if v not in c[0]]
    rest_box = {u: r for u, r in box.items() if u != v}
    rest_count = None
    total = 0
    for s, e, st in segs:
        mine = [x for c, x in zip(cons, st) if v in c[0]]
        if any(x is False for x in mine):
            continue
        if all(x is True for x in mine):
            if rest_count is None:
                rest_count = count_cons(rest_cons, rest_box)
            total += (e - s + 1) * rest_count
            continue
        for x in range(s, e + 1):
            total += count_cons(_subst(cons, v, {}, x), rest_box)
    return total
