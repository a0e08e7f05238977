"""`promote`: the memory level of every value kept inside its group, chosen with z3 Optimize under the
machine's capacities (AutoTM-style).

Each forwarded value (a temporary read on chip by its own group) gets one of:
- `reg`: a register tile per team; only for constant-size tiles, all of them within the register budget;
- `shared`: a shared-memory tile per team; constant size, all within a block's shared memory;
- `recompute`: no storage, its expression is evaluated where it is read (element-wise values only: a reduced
  value is computed once by its team);
- `global`: written and read back through @global (always possible, the most traffic).
Costs are in bytes-equivalents over the whole problem at the size hints, counted with isl: @global costs the
bytes written and read back; recomputing costs the extra evaluations; registers and shared memory cost a
little per element. Values already in @global only
because nothing forwarded them are not touched.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir.walk import walk
from gir.passes.analysis import isl_helpers as ih
from gir.passes.analysis.z3_helpers import optimize_choices
from gir.passes.base import GraphPass, PassContext
from gir.passes.machines import machine_for
from gir.passes.middle import relations as rel
from gir.passes.middle.graph import FuncGraph

REG_SHARE = 0.25       # of a thread's registers that kept values may take (the rest: caches, addresses)
NRAM_SHARE = 0.25      # of an MLU core's NRAM that kept values may take
OP_COST = 0.5          # bytes-equivalent of one arithmetic op per element (memory-bound machines)
REG_COST, SHARED_COST = 0.05, 0.25  # per element kept, bytes-equivalent


@dataclass(frozen=True)
class Promote(GraphPass):
    """Choose the memory level (reg, shared, recompute, global) of every value kept inside its group (z3 Optimize
    under the machine's register and shared-memory capacities).

    sizes: size hints for the byte counts ("M=4096,N=4096"; 4096 for any other size)."""
    name: ClassVar[str] = "promote"
    target: str = "cuda"
    machine: str = ""
    sizes: tuple[str, ...] = ()

    def apply(self, ctx: PassContext, graph):
        from gir.passes.middle.search.options import parse_hints
        from gir.passes.middle.search.mlu import is_mlu, mlu_machine
        if is_mlu(self.target):   # a team is one MLU core: kept values go to its NRAM
            m = mlu_machine(self.machine)
        else:
            m = machine_for(self.target if self.target in ("cuda", "hip", "sim") else "cuda", self.machine or None)
        hints = parse_hints(self.sizes)
        for fg in graph.graphs():
            promote_func(fg, m, hints, ctx)
        return graph


def promote_func(g: FuncGraph, m, hints: dict[str, int], ctx: PassContext | None = None) -> None:
    sizes = {p: hints.get(p, 4096) for p in g.params}
    for grp in g.groups:
        kept = sorted({g.nodes[d.dst].tensor for d in g.deps_within(grp) if g.nodes[d.dst].forwarded})
        if not kept:
            continue
        costs: dict[str, dict[str, float]] = {}
        reg_w: dict = {}
        smem_w: dict = {}
        for t in kept:
            p = g.producer(t)
            elem = g.types[t].dtype.nbytes
            produced = ih.count(rel.domain(g, g.store(p.id)), g.params, sizes)
            reads = sum(ih.count(rel.domain(g, n), g.params, sizes)
                        for n in g.nodes if n.kind == "load" and n.tensor == t and n.forwarded)
            tile = [p.ranges[v] for v in p.out_vars if grp.varmap[p.id][v] not in grp.team]
            opts = {"global": 2.0 * elem * produced + elem * max(0, reads - produced)}
            if not p.is_reduction:  # a reduced value is computed once, by its team
                opts["recompute"] = OP_COST * _ops(p.value) * max(0, reads - produced)
            if all(isinstance(d, int) for d in tile):
                words = 1
                for d in tile:
                    words *= d
                opts["reg"] = REG_COST * produced
                opts["shared"] = SHARED_COST * produced
                reg_w[t, "reg"] = words * max(1, elem // 4)
                smem_w[t, "shared"] = words * elem
            costs[t] = opts
        choice = optimize_choices(costs, list(zip((reg_w, smem_w), capacities(m))))
        for t, level in choice.items():
            b = g.buffers[t]
            if b.level != level and ctx is not None:
                ctx.remark("promote", "analysis", f"'{t}' kept in {level} (was {b.level}); costs considered: "
                           + ", ".join(f"{o} {c:.3g}" for o, c in sorted(costs[t].items(), key=lambda x: x[1])),
                           g.producer(t).loc)
            b.level = level
            if level == "global" and not b.stored:
                b.stored = True
                g.store(g.producer(t).id).removed = False
            if level == "global":
                for n in g.nodes:
                    if n.kind == "load" and n.tensor == t:
                        n.forwarded = False


def capacities(m) -> tuple[float, float]:
    """(register words, shared bytes) one team point may keep. A GPU: REG_SHARE of a thread's registers and the
    block's shared memory over 256 threads. The MLU (an MluMachine): no register tiles (vector operands live in
    NRAM), NRAM_SHARE of a core's NRAM as the 'shared' level (the rest: pipeline slots and scratch tiles)."""
    if hasattr(m, "nram_bytes"):
        return 0.0, m.nram_bytes * NRAM_SHARE
    return m.max_regs_per_thread * REG_SHARE, m.smem_per_block_default / 256


def _ops(e) -> int:
    from gir import ir
    return max(1, sum(1 for x in walk(e) if isinstance(x, (ir.BinOp, ir.UnOp, ir.Call, ir.Reduce))))


