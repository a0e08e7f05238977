"""Naive lowering: an operator-layer function becomes its op-by-op program, held as an IDFG.

Each statement is its own loop nest (parallel over its output indices, serial over its reduction indices) with
one load per tensor reference, one compute and one store; every intermediate lives in @global. Each statement
is its own group, so the graph prints (printer.py) as the op-by-op baseline. Nothing clever happens here.
"""
from __future__ import annotations

from gir import ir
from gir.shapes import func_info
from gir.passes.analysis.index_bounds import clamp_guarded
from gir.passes.builtin.exprs import children
from gir.passes.builtin.narrow import round_read_results
from gir.passes.middle import relations as rel
from gir.passes.middle.graph import Buffer, Dep, FuncGraph, Group, ModuleGraph, Node, Stmt


def build_module(module: ir.Module) -> ModuleGraph:
    return ModuleGraph([f if f.is_explicit else build_func(f) for f in module.funcs], loc=module.loc)


def build_func(func: ir.Func) -> FuncGraph:
    from gir.limits import refuse_empty_tensors
    from gir.passes.builtin.argreduce import lower_arg_reductions

    refuse_empty_tensors(func)
    func = lower_arg_reductions(func)   # argmax/argmin, boolean max/min: reductions every target runs
    func = round_read_results(func)     # a 16-bit result read again is read rounded (passes/builtin/narrow.py)
    info = func_info(func)
    g = FuncGraph(func, info)
    results = {p.name for p in func.results}
    for p in func.params:
        g.buffers[p.name] = Buffer(p.name, p.type, "input")
    for st in info.stmts:
        value = clamp_guarded(func, info.types, st.stmt.value, st.ranges)  # both select branches are computed
        s = Stmt(len(g.stmts), st.stmt.target.name, st.out_vars, dict(st.ranges), value,
                 dict(st.reduce_vars), st.stmt.loc)
        g.stmts.append(s)
        role = "result" if s.target in results else "temp"
        g.buffers[s.target] = Buffer(s.target, info.types[s.target], role)
        _add_nodes(g, s)
        g.groups.append(singleton_group(g, s.id))
    return g


def singleton_group(g: FuncGraph, stmt: int) -> Group:
    """One statement, one kernel: its variables are the axes, its output variables the team axes."""
    s = g.stmts[stmt]
    return Group(len(g.groups), [stmt], {v: s.ranges[v] for v in s.vars}, {stmt: {v: v for v in s.vars}},
                 tuple(s.out_vars))


def load_scopes(s: Stmt) -> list[tuple[ir.Ref, tuple[str, ...]]]:
    """Every tensor reference of the value in preorder, with the variables in scope at it (the output
    variables, then those of each enclosing reduction)."""
    out: list[tuple[ir.Ref, tuple[str, ...]]] = []
    counter = [0]

    def visit(x, scope: tuple[str, ...]) -> None:
        if isinstance(x, ir.Reduce):
            n = counter[0]
            counter[0] += 1
            inner = scope + tuple(v for v in s.reduce_vars.get(n, ()) if v not in scope)
            visit(x.arg, inner)
            return
        if isinstance(x, ir.Ref):
            out.append((x, scope))
            return
        for child in children(x):
            visit(child, scope)

    visit(s.value, tuple(s.out_vars))
    return out


def _add_nodes(g: FuncGraph, s: Stmt) -> None:
    for ref, scope in load_scopes(s):
        g.nodes.append(Node(len(g.nodes), s.id, "load", ref, scope))
    g.nodes.append(Node(len(g.nodes), s.id, "compute", None, s.vars))
    target = ir.Ref(s.target, tuple(ir.Var(v) for v in s.out_vars), loc=s.loc)
    store = Node(len(g.nodes), s.id, "store", target, tuple(s.out_vars))
    g.nodes.append(store)
    _add_deps(g, s)


def _add_deps(g: FuncGraph, s: Stmt) -> None:
    """Dependences of the loads of `s` on earlier stores (the function is in single-assignment form)."""
    for n in g.loads(s.id):
        prod = g.producer(n.tensor)
        if prod is None or prod.id >= s.id:
            continue
        store = g.store(prod.id)
        g.deps.append(Dep(store.id, n.id, n.tensor, rel.dependence(g, store, n)))


def rebuild_stmt_nodes(g: FuncGraph, s: Stmt) -> None:
    """After `s.value` changed: new load/compute/store nodes for `s` (ids stay dense), dependences re-derived."""
    old = {n.id for n in g.stmt_nodes(s.id)}
    store_was_removed = g.store(s.id).removed
    g.deps = [d for d in g.deps if d.src not in old and d.dst not in old]
    keep = [n for n in g.nodes if n.id not in old]
    remap: dict[int, int] = {}
    g.nodes = []
    g.__dict__.pop("_by_stmt", None)
    g.__dict__.pop("_deps_by", None)
    for n in keep:
        remap[n.id] = len(g.nodes)
        n.id = len(g.nodes)
        g.nodes.append(n)
    for n in g.nodes:
        if n.merged_into is not None:
            n.merged_into = remap.get(n.merged_into)
    for d in g.deps:
        d.src, d.dst = remap[d.src], remap[d.dst]
    forwarded = {n.tensor for n in keep if n.kind == "load" and n.forwarded}
    group = g.group_of(s.id)
    g.__dict__.pop("_by_stmt", None)
    g.__dict__.pop("_deps_by", None)
    for ref, scope in load_scopes(s):
        prod = g.producer(ref.name)
        fwd = prod is not None and prod.id in group.stmts and (ref.name in forwarded or g.store(prod.id).removed)
        g.nodes.append(Node(len(g.nodes), s.id, "load", ref, scope, forwarded=fwd))
    g.nodes.append(Node(len(g.nodes), s.id, "compute", None, s.vars))
    target = ir.Ref(s.target, tuple(ir.Var(v) for v in s.out_vars), loc=s.loc)
    g.nodes.append(Node(len(g.nodes), s.id, "store", target, tuple(s.out_vars), removed=store_was_removed))
    _add_deps(g, s)
    for later in g.stmts[s.id + 1:]:  # loads of this statement's result
        for n in g.loads(later.id):
            if n.tensor == s.target:
                store = g.store(s.id)
                g.deps.append(Dep(store.id, n.id, n.tensor, rel.dependence(g, store, n)))
