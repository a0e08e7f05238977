"""Analysis of a group for the tile kernel (tiles.py emits it; tiles_cost.py searches its configurations).

The group is seen on its canonical axes: team axes T (one team per point) and in-team axes I. Its statements
are *team statements* (indexed by exactly T; a value per team point, possibly reducing over all of I), *full
statements* (indexed by T + I, element-wise; their values are recomputed where they are read) and *cross
statements* (one reduction over the team axes, indexed by in-team axes or nothing: each block contributes a
partial, a second kernel combines them). Reductions become slots with phases (a slot whose argument needs an
earlier team value runs in a later sweep over I), as in the row kernel; unlike it, the lane axis may be a team
axis (column tiles), warps may split another in-team axis, and the search may walk team axes serially
(`tloop`) so that operands that do not depend on them are loaded once per block.
"""
from __future__ import annotations

from dataclasses import dataclass

from gir import ir
from gir.walk import reductions_preorder
from gir.passes.builtin.exprs import map_expr, refs, var_names
from gir.passes.schedule.kinds import BOOL, F32, kind_of


class Unsupported(Exception):
    """The group is outside what the tile kernel maps; the message says why (it becomes a remark)."""


@dataclass(frozen=True)
class TileConfig:
    lane: str                    # canonical axis on consecutive lanes
    tile: str | None             # axis each thread covers `tw` elements of (the lane axis: vectors; or a small axis)
    tw: int                      # elements of `tile` per thread (1: none)
    lanes_l: int                 # lanes along `lane` (32 when lane is in-team; 8/16/32 for team lanes)
    warp_axis: str | None        # in-team axis split across the other lanes and the warps (None: no split)
    warps: int                   # warps per block
    grid: tuple[str, ...]        # team axes on the grid (the lane axis, when a team axis, as tiles of lanes)
    tloop: tuple[str, ...]       # team axes walked serially by a block
    persistent: int = 0          # > 0: the outermost `tloop` axis is shared grid-stride by this many blocks
    chunk: int = 0               # > 0: the outermost `tloop` axis in chunks of this many consecutive points per
                                 # block (their team results are stored together: one coalesced store)
    caps: tuple[tuple[str, int], ...] = ()  # cached: trips of each sweep loop (kept in registers); () streams
    vectors: bool = True         # tile loads/stores as vectors (the fast path; the fallback is scalar)
    lanew: str | None = None     # column tiles: in-team axis of the remaining lanes when it differs from the
                                 # warps' (e.g. lanes over a small innermost axis, warps over another)
    skew: int = 0                # > 0: shifted column tiles (tiles_skew.py), A = elements per sector
    win: int = 0                 # shifted column tiles: aligned windows of 32 vectors per block tile
    residues: tuple[tuple[str, int], ...] = ()  # shifted: the hinted residues mod A the kernel is specialised on

    @property
    def lanew_axis(self) -> str | None:
        """The axis the lanes not on the lane axis split (the warp axis unless `lanew` names another)."""
        return self.lanew or self.warp_axis

    @property
    def cache(self) -> bool:
        return bool(self.caps)

    @property
    def lanes_w(self) -> int:
        return 32 // self.lanes_l

    @property
    def threads(self) -> int:
        return 32 * self.warps


@dataclass
class Slot:
    op: str                      # sum max min mean prod
    arg: ir.Expr                 # canonical expression (team values as Ref("@tv:name"), slots as Ref("@a:k"))
    dtype: ir.DType
    phase: int = 0
    count: ir.Expr | None = None  # element count of a mean


@dataclass
class Cross:
    target: str
    op: str
    arg: ir.Expr
    dtype: ir.DType
    out_axes: tuple[str, ...]    # canonical axes of the target (in-team axes, or none)
    outer: ir.Expr               # the value with the reduction as Ref("@x") (applied by the combine kernel)
    stmt: object                 # the graph statement


class TileAnalysis:
    """Config-independent facts about a group (see the module docstring)."""

    def __init__(self, g, unit):
        self.g, self.unit = g, unit
        grp = unit.group
        self.types = g.types
        self.axes: dict[str, ir.Dim] = dict(grp.axes)
        self.team: tuple[str, ...] = tuple(grp.team)
        self.inner: tuple[str, ...] = tuple(a for a in grp.axes if a not in grp.team)
        self.stores = unit.stores(g)
        self.full: dict[str, ir.Expr] = {}          # full statements: canonical values
        self.teamdefs: list[tuple[str, ir.Expr]] = []  # team statements, slotified
        self.slots: list[Slot] = []
        self.cross: list[Cross] = []
        mine = {s.target for s in unit.stmts}
        self.full_stores: list[str] = []
        self.team_stores: list[str] = []
        for s in unit.stmts:
            vm = grp.varmap[s.id]
            value = _rename(s.value, {v: ir.Var(a) for v, a in vm.items()})
            out = tuple(vm[v] for v in s.out_vars)
            if s.id in grp.cross:
                self.cross.append(self._cross(s, value, out))
                continue
            if set(out) not in (set(self.team), set(self.team) | set(self.inner)):
                raise Unsupported(f"'{s.target}' is indexed by {list(out)}: a tile kernel needs statements over "
                                  "the team axes or over all axes of the group")
            if set(out) == set(self.team) and (self.inner or not self.team):
                self.teamdefs.append((s.target, value))
                if s.target in self.stores:
                    self.team_stores.append(s.target)
            else:
                if reductions_preorder(value):
                    raise Unsupported(f"'{s.target}' reduces over part of the group's axes only")
                self.full[s.target] = value
                if s.target in self.stores:
                    self.full_stores.append(s.target)
        self.mine = mine
        self.teamnames = {n for n, _ in self.teamdefs}
        # inline full values, slotify team values
        self.teamexprs: dict[str, ir.Expr] = {}
        for name, value in self.teamdefs:
            self.teamexprs[name] = self._slotify(self.inline(value), name)
        for c in self.cross:
            c.arg = self._team_refs(self.inline(c.arg))
            if any(isinstance(x, ir.Reduce) for x in _walk(c.arg)):
                raise Unsupported(f"'{c.target}' nests a reduction inside its cross-team reduction")
        # phases: a team value is ready after the slots it uses; a slot runs in the phase after its inputs
        self.ready: dict[str, int] = {}
        for name, _ in self.teamdefs:
            r = 0
            for x in _walk(self.teamexprs[name]):
                if isinstance(x, ir.Ref) and x.name.startswith("@a:"):
                    k = int(x.name[3:])
                    slot = self.slots[k]
                    slot.phase = max([self.ready[t] for t in self._teamrefs(slot.arg)], default=0)
                    r = max(r, slot.phase + 1)
                elif isinstance(x, ir.Ref) and x.name.startswith("@tv:"):
                    r = max(r, self.ready[x.name[4:]])
            self.ready[name] = r
        self.nphases = max([s.phase for s in self.slots], default=-1) + 1
        self.final = bool(self.full_stores or self.cross)
        self.inputs = self._inputs()

    # ------------------------------------------------------------------ statements
    def _cross(self, s, value: ir.Expr, out: tuple[str, ...]) -> Cross:
        red = reductions_preorder(value)
        if len(red) != 1:
            raise Unsupported(f"'{s.target}' has {len(red)} reductions across teams (one is supported)")
        if not set(out) <= set(self.inner):
            raise Unsupported(f"'{s.target}' keeps a team axis while reducing across teams")
        dt = kind_of(red[0], self.types)
        dt = F32 if dt == BOOL else dt
        marker = ir.Ref("@x", ())
        outer = _replace(value, red[0], marker)
        return Cross(s.target, red[0].op, red[0].arg, dt, out, outer, s)

    def inline(self, e: ir.Expr) -> ir.Expr:
        """Full values of the group substituted where they are read (recomputed on chip); team values become
        references to their registers (`@tv:name`)."""
        def fn(x):
            if isinstance(x, ir.Ref) and x.name in self.full:
                return self._inline_full(self.full[x.name])
            return x
        return self._team_refs(map_expr(e, fn))

    def _inline_full(self, e: ir.Expr) -> ir.Expr:
        return map_expr(e, lambda x: self._inline_full(self.full[x.name])
                        if isinstance(x, ir.Ref) and x.name in self.full else x)

    def _team_refs(self, e: ir.Expr) -> ir.Expr:
        return map_expr(e, lambda x: ir.Ref(f"@tv:{x.name}", ()) if isinstance(x, ir.Ref) and
                        x.name in {n for n, _ in self.teamdefs} else x)

    def _slotify(self, e: ir.Expr, name: str) -> ir.Expr:
        e = self._team_refs(e)

        def fn(x):
            if isinstance(x, ir.Reduce):
                if any(isinstance(y, ir.Reduce) for y in _walk(x.arg)):
                    raise Unsupported(f"'{name}' nests reductions")
                dt = kind_of(x, self.types)
                dt = F32 if dt == BOOL else dt
                count = None
                if x.op == "mean":
                    count = _prod([self.axes[a] for a in self.inner])
                self.slots.append(Slot(x.op, x.arg, dt, 0, count))
                ref = ir.Ref(f"@a:{len(self.slots) - 1}", ())
                return ir.BinOp("/", ref, count) if count is not None else ref
            return x
        out = map_expr(e, fn)
        for s in self.slots:  # every in-team reduction reduces over all in-team axes
            used = var_names(s.arg) & set(self.inner)
            if used and used != set(self.inner):
                raise Unsupported(f"a reduction in '{name}' reduces over {sorted(used)}, not over every in-team "
                                  f"axis {list(self.inner)}")
        return out

    def _teamrefs(self, e: ir.Expr) -> set[str]:
        return {x.name[4:] for x in _walk(e) if isinstance(x, ir.Ref) and x.name.startswith("@tv:")}

    # ------------------------------------------------------------------ inputs
    def _inputs(self) -> list[ir.Ref]:
        """Every distinct global reference the sweeps and team statements read (canonical indices)."""
        exprs = [s.arg for s in self.slots] + [self.inline(self.full[n]) for n in self.full_stores]
        exprs += list(self.teamexprs.values()) + [c.arg for c in self.cross]
        out: list[ir.Ref] = []
        for e in exprs:
            for x in refs(e):
                if x.name.startswith("@"):
                    continue
                if x.name in self.mine:
                    raise Unsupported(f"'{x.name}' is read in a way the tile kernel cannot keep on chip")
                if x not in out:
                    out.append(x)
        return out

    def axes_of(self, e: ir.Expr) -> set[str]:
        return var_names(e) & set(self.axes)


def _walk(e):
    from gir.passes.builtin.exprs import walk
    return walk(e)


def _rename(e: ir.Expr, env: dict[str, ir.Expr]) -> ir.Expr:
    return map_expr(e, lambda x: env.get(x.name, x) if isinstance(x, ir.Var) else x)


def _replace(e, old, new):
    from gir.passes.middle.printer import _replace_node
    return _replace_node(e, old, new)


def _prod(dims) -> ir.Expr:
    from gir.passes.schedule.emit import prod_expr
    return prod_expr(dims)
