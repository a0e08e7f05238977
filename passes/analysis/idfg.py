"""The instruction-level dataflow graph (IDFG) of an explicit kernel.

Nodes: one per instruction (load, store, copy, compute, allreduce, sync). Edges: RAW / WAR / WAW
dependences from an earlier instruction to a later one (in program order) whose access relations
reach a common buffer element for some sizes (isl, parametric in the size symbols). Elements of
private buffers carry their owner's parallel variables, so a @reg tile of one thread never depends
on another thread's. The graph prints as text and Graphviz dot and turns back into GIR.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from gir import ir
from gir.printer import format_stmt
from gir.passes.analysis import isl_helpers as ih
from gir.passes.analysis.access import Instr, KernelInfo, collect


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    kind: str  # RAW WAR WAW
    buf: str


@dataclass
class IDFG:
    info: KernelInfo
    edges: list[Edge]

    @property
    def nodes(self) -> list[Instr]:
        return self.info.instrs

    def preds(self, node: int) -> list[Edge]:
        return [e for e in self.edges if e.dst == node]

    def succs(self, node: int) -> list[Edge]:
        return [e for e in self.edges if e.src == node]

    def to_text(self) -> str:
        lines = [f"idfg {self.info.kernel.name}: {len(self.nodes)} nodes, {len(self.edges)} edges"]
        for ins in self.nodes:
            text = format_stmt(ins.stmt, 0)[0].strip()
            lines.append(f"  {ins.name} [{ins.kind}] {text}")
        for e in self.edges:
            lines.append(f"  S{e.src} -> S{e.dst} {e.kind} {e.buf}")
        return "\n".join(lines) + "\n"

    def to_dot(self) -> str:
        lines = [f'digraph "{self.info.kernel.name}" {{', "  node [shape=box, fontname=monospace];"]
        for ins in self.nodes:
            label = format_stmt(ins.stmt, 0)[0].strip().replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'  S{ins.id} [label="{ins.name}: {label}"];')
        style = {"RAW": "solid", "WAR": "dashed", "WAW": "dotted"}
        for e in self.edges:
            lines.append(f'  S{e.src} -> S{e.dst} [label="{e.kind} {e.buf}", style={style[e.kind]}];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_gir(self, keep: set[int] | None = None) -> ir.Kernel:
        """The kernel rebuilt from the nodes (all, or those in `keep`) inside their original scopes."""
        items = [(p, x) for p, x in self.info.items if not isinstance(x, Instr) or keep is None or x.id in keep]
        return replace(self.info.kernel, body=tuple(_rebuild(items, 0)))


def _rebuild(items, depth: int) -> list:
    out, i = [], 0
    while i < len(items):
        path, leaf = items[i]
        if len(path) == depth:
            out.append(leaf.stmt if isinstance(leaf, Instr) else leaf)
            i += 1
            continue
        node = path[depth][0]
        j = i
        while j < len(items) and len(items[j][0]) > depth and items[j][0][depth][0] is node:
            j += 1
        group = items[i:j]
        if isinstance(node, ir.If):
            then = [it for it in group if it[0][depth][1] == "then"]
            orelse = [it for it in group if it[0][depth][1] == "else"]
            out.append(replace(node, then=tuple(_rebuild(then, depth + 1)),
                               orelse=tuple(_rebuild(orelse, depth + 1))))
        else:
            out.append(replace(node, body=tuple(_rebuild(group, depth + 1))))
        i = j
    return out


def build_idfg(func: ir.Func, kernel: ir.Kernel) -> IDFG:
    info = collect(func, kernel)
    params = ih.size_params(info.params, None)
    ranges = {}
    for ins in info.instrs:
        for k, acc in enumerate(ins.accesses):
            ranges[ins.id, k] = info.access_map(ins, acc).range().intersect_params(params)
    edges: list[Edge] = []
    for a in info.instrs:
        for b in info.instrs[a.id + 1:]:
            found = set()
            for i, x in enumerate(a.accesses):
                for j, y in enumerate(b.accesses):
                    if x.buf.name != y.buf.name or not (x.write or y.write):
                        continue
                    kind = "WAW" if x.write and y.write else "RAW" if x.write else "WAR"
                    if (kind, x.buf.name) in found:
                        continue
                    if not ranges[a.id, i].intersect(ranges[b.id, j]).is_empty():
                        found.add((kind, x.buf.name))
                        edges.append(Edge(a.id, b.id, kind, x.buf.name))
    return IDFG(info, edges)
