"""The instruction-level dataflow graph (IDFG) of a whole operator-layer function: the compiler's middle.

Naive lowering (`passes/middle/naive.py`) turns every statement `T[out] = e` into its own loop nest: parallel
over the output indices, serial over the reduction indices, loads from @global, one compute, one store to
@global. The graph holds the instructions of that program:

- `Stmt`   one statement (one loop nest): its variables with their extents, its value expression;
- `Node`   one instruction: `load` (one per tensor reference of the value), `compute`, `store`; each has an
           isl instance domain (`domain`) and, for loads and stores, an isl access map (`access`);
- `Dep`    a RAW dependence from the store of T to a load of T, carrying the isl relation
           producer instance -> consumer instances (`relation`);
- `Buffer` every tensor with the decisions taken about it: memory level and whether @global keeps a copy;
- `Group`  a set of statements fused under one parallel mapping: canonical axes, the team axes (one team per
           point of them), and `cross` statements whose reduction combines across teams.

Passes (`passes/middle/passes/`) rewrite the graph; `printer.py` prints any state of it as explicit GIR and
`schedule` (`passes/middle/search/`) turns it into tuned kernels. A `ModuleGraph` holds one `FuncGraph` per
operator-layer function (explicit functions pass through untouched).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir import ir
from gir.errors import Loc
from gir.printer import format_expr, format_ref, format_type
from gir.shapes import FuncInfo
from gir.walk import reductions_preorder

LEVELS = ("global", "reg", "shared", "recompute")
"""Memory levels of a tensor's value inside its group: @global, a register tile, a shared tile, or not stored at
all (recomputed from its own inputs wherever it is read). Inputs and results are always @global."""


@dataclass
class Stmt:
    """One operator-layer statement `target[out_vars] = value` and its loop nest."""
    id: int
    target: str
    out_vars: tuple[str, ...]
    ranges: dict[str, ir.Dim]                  # every variable of the statement -> its extent
    value: ir.Expr
    reduce_vars: dict[int, tuple[str, ...]]    # preorder number of each reduction -> the variables it binds
    loc: Loc | None = None

    @property
    def vars(self) -> tuple[str, ...]:
        """Output variables first, then reduction variables in binding order."""
        red = [v for n in sorted(self.reduce_vars) for v in self.reduce_vars[n]]
        return self.out_vars + tuple(v for v in red if v not in self.out_vars)

    @property
    def is_reduction(self) -> bool:
        return bool(reductions_preorder(self.value))

    def extent(self, var: str) -> ir.Dim:
        return self.ranges[var]

    def text(self) -> str:
        idx = ", ".join(self.out_vars)
        return f"{self.target}[{idx}] = {format_expr(self.value)}"


@dataclass
class Node:
    """One instruction of the naive program. `ref` is the tensor access of a load/store; `vars` the variables of
    its instance domain (a load inside a reduction also ranges over the reduction's variables)."""
    id: int
    stmt: int
    kind: str                                  # load | compute | store
    ref: ir.Ref | None
    vars: tuple[str, ...]
    merged_into: int | None = None             # load-cse: this load is served by that one
    forwarded: bool = False                    # forward-stores: served on chip by its in-group producer
    removed: bool = False                      # dead-stores: this store no longer happens

    @property
    def name(self) -> str:
        return f"N{self.id}"

    @property
    def tensor(self) -> str | None:
        return self.ref.name if self.ref is not None else None

    @property
    def live(self) -> bool:
        return not self.removed and self.merged_into is None


@dataclass
class Dep:
    """RAW dependence: the store `src` of `tensor` feeds the load `dst`; `relation` is the isl map from producer
    instances (statement `S<src stmt>`) to the consumer instances (statement `S<dst stmt>`) that read them."""
    src: int
    dst: int
    tensor: str
    relation: object = field(default=None, repr=False, compare=False)


@dataclass
class Buffer:
    name: str
    type: ir.TensorType
    role: str                                  # input | result | temp
    level: str = "global"                      # where consumers in the producer's group read it (LEVELS)
    stored: bool = True                        # @global holds a copy (results always; temps until dead-stores)

    @property
    def on_chip(self) -> bool:
        return self.level != "global"


@dataclass
class Group:
    """Statements fused into one kernel (a singleton group is an op-by-op kernel).

    `axes` are the group's canonical axes (name -> extent); `varmap[s][v]` is the canonical axis of variable v of
    statement s; `team` lists the axes whose points are distinct teams (a team is a block, a warp or a thread
    group: the search decides). Every dependence inside the group maps a consumer instance to producer instances
    of the same team (checked with isl by `relations.check_group`). A statement in `cross` reduces over team axes:
    each team contributes a partial result and a combine step finishes it."""
    id: int
    stmts: list[int]
    axes: dict[str, ir.Dim] = field(default_factory=dict)
    varmap: dict[int, dict[str, str]] = field(default_factory=dict)
    team: tuple[str, ...] = ()
    cross: set[int] = field(default_factory=set)

    def axis_of(self, stmt: int, var: str) -> str:
        return self.varmap[stmt][var]

    def team_vars(self, stmt: int) -> list[str]:
        """The variables of `stmt` that are team coordinates, in team-axis order."""
        inv = {a: v for v, a in self.varmap[stmt].items()}
        return [inv[a] for a in self.team]


class FuncGraph:
    """The IDFG of one operator-layer function (see the module docstring)."""

    def __init__(self, func: ir.Func, info: FuncInfo):
        self.func = func
        self.info = info
        self.types: dict[str, ir.TensorType] = dict(info.types)
        self.stmts: list[Stmt] = []
        self.nodes: list[Node] = []
        self.deps: list[Dep] = []
        self.buffers: dict[str, Buffer] = {}
        self.groups: list[Group] = []
        self.params: tuple[str, ...] = func.size_symbols()
        self.fused = False   # the fuse pass ran over it (the MLU schedule runs op by op otherwise)

    # ------------------------------------------------------------------ queries
    @property
    def name(self) -> str:
        return self.func.name

    def producer(self, tensor: str) -> Stmt | None:
        index = self.__dict__.get("_producers")
        if index is None or index[0] != len(self.stmts):
            index = (len(self.stmts), {s.target: s for s in self.stmts})
            self._producers = index
        return index[1].get(tensor)

    def stmt_nodes(self, stmt: int, kind: str | None = None) -> list[Node]:
        index = self.__dict__.get("_by_stmt")
        if index is None or index[0] != len(self.nodes):
            by: dict[int, list[Node]] = {}
            for n in self.nodes:
                by.setdefault(n.stmt, []).append(n)
            index = (len(self.nodes), by)
            self._by_stmt = index
        nodes = index[1].get(stmt, [])
        return nodes if kind is None else [n for n in nodes if n.kind == kind]

    def loads(self, stmt: int) -> list[Node]:
        return self.stmt_nodes(stmt, "load")

    def store(self, stmt: int) -> Node:
        return self.stmt_nodes(stmt, "store")[0]

    def _dep_index(self):
        index = self.__dict__.get("_deps_by")
        if index is None or index[0] != (len(self.deps), len(self.nodes)):
            into: dict[int, list[Dep]] = {}
            frm: dict[int, list[Dep]] = {}
            for d in self.deps:
                into.setdefault(self.nodes[d.dst].stmt, []).append(d)
                frm.setdefault(self.nodes[d.src].stmt, []).append(d)
            index = ((len(self.deps), len(self.nodes)), into, frm)
            self._deps_by = index
        return index

    def deps_into(self, stmt: int) -> list[Dep]:
        return list(self._dep_index()[1].get(stmt, []))

    def deps_from(self, stmt: int) -> list[Dep]:
        return list(self._dep_index()[2].get(stmt, []))

    def consumers(self, stmt: int) -> list[int]:
        out: list[int] = []
        for d in self.deps_from(stmt):
            s = self.nodes[d.dst].stmt
            if s not in out:
                out.append(s)
        return out

    def group_of(self, stmt: int) -> Group:
        for g in self.groups:
            if stmt in g.stmts:
                return g
        raise KeyError(stmt)

    def deps_within(self, group: Group) -> list[Dep]:
        members = set(group.stmts)
        return [d for s in group.stmts for d in self.deps_into(s) if self.nodes[d.src].stmt in members]

    def value_loads(self, stmt: int) -> dict[int, Node]:
        """Preorder position of each tensor reference in the statement's value -> its load node."""
        return {k: n for k, n in enumerate(self.loads(stmt))}

    # ------------------------------------------------------------------ editing
    def set_value(self, stmt: int, value: ir.Expr) -> None:
        """Replace a statement's expression (a pass that rewrites compute nodes): its loads and dependences are
        derived again; its group and the decisions about buffers stay."""
        from gir.passes.middle.naive import rebuild_stmt_nodes
        s = self.stmts[stmt]
        s.value = value
        self.__dict__.pop("_by_stmt", None)
        self.__dict__.pop("_deps_by", None)
        rebuild_stmt_nodes(self, s)
        self.__dict__.pop("_by_stmt", None)
        self.__dict__.pop("_deps_by", None)

    # ------------------------------------------------------------------ printing
    def to_text(self) -> str:
        """The graph as text: statements, nodes with their domains and accesses, dependences with relations,
        groups and buffer decisions (what `gir analyze --idfg` prints for an operator-layer function)."""
        from gir.passes.middle import relations as rel
        lines = [f"idfg {self.name}: {len(self.stmts)} statements, {len(self.nodes)} nodes, {len(self.deps)} deps, "
                 f"{len(self.groups)} groups"]
        for s in self.stmts:
            lines.append(f"  S{s.id}: {s.text()}")
            for n in self.stmt_nodes(s.id):
                what = format_ref(n.ref) if n.ref is not None else format_expr(s.value)
                flags = [f for f, on in (("forwarded", n.forwarded), ("removed", n.removed)) if on]
                if n.merged_into is not None:
                    flags.append(f"merged into N{n.merged_into}")
                tail = f"  [{', '.join(flags)}]" if flags else ""
                dom = rel.domain(self, n)
                lines.append(f"    {n.name} {n.kind:7s} {what}   {dom}{tail}")
        for d in self.deps:
            lines.append(f"  {self.nodes[d.src].name} -> {self.nodes[d.dst].name} RAW {d.tensor}  {d.relation}")
        for g in self.groups:
            axes = ", ".join(f"{a}:{e}" for a, e in g.axes.items())
            cross = f" cross={sorted(g.cross)}" if g.cross else ""
            lines.append(f"  group {g.id}: stmts={g.stmts} axes=[{axes}] team=[{', '.join(g.team)}]{cross}")
        for b in self.buffers.values():
            if b.role == "input":
                continue
            lines.append(f"  buffer {b.name}: {format_type(b.type)} {b.role} level={b.level}"
                         f"{' stored' if b.stored else ''}")
        return "\n".join(lines) + "\n"


@dataclass
class ModuleGraph:
    """The IDFG state of a pipeline: one FuncGraph per operator-layer function, explicit functions unchanged."""
    funcs: list  # FuncGraph | ir.Func, in module order
    loc: Loc | None = None

    def graphs(self) -> list[FuncGraph]:
        return [f for f in self.funcs if isinstance(f, FuncGraph)]

    def to_module(self) -> ir.Module:
        """The graph printed as explicit GIR (printer.py): every state prints and runs on the simulator."""
        from gir.passes.middle.printer import print_graph
        return ir.Module(tuple(print_graph(f) if isinstance(f, FuncGraph) else f for f in self.funcs), loc=self.loc)

    def to_text(self) -> str:
        return "".join(g.to_text() for g in self.graphs())
