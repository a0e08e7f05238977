"""strength-reduce-idfg: the same rewrites as strength-reduce, applied to the instruction-level dataflow graph.

A graph pass receives the IDFG the built-in passes share (`passes.middle.graph.ModuleGraph`): it rewrites the
compute node of every statement (`FuncGraph.set_value` derives its loads and dependences again) and the search
(`schedule`) then emits kernels from the rewritten graph, e.g.

    gir compile example.gir --target cuda --passes \\
        'naive-lower,fuse,strength-reduce-idfg,forward-stores,dead-stores,load-cse,promote,schedule'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gir_plugin_example.strength_reduce import StrengthReduce
from gir.passes.base import GraphPass, PassContext
from gir.passes.builtin.exprs import map_expr


@dataclass(frozen=True)
class StrengthReduceGraph(GraphPass):
    """Rewrite x / c as x * (1/c) and small integer powers as products, on the IDFG's compute nodes.

    Options as strength-reduce: max_pow, exact_only."""
    name: ClassVar[str] = "strength-reduce-idfg"
    max_pow: int = 4
    exact_only: bool = True

    def apply(self, ctx: PassContext, graph):
        rule = StrengthReduce(self.max_pow, self.exact_only)
        for fg in graph.graphs():
            for st in fg.stmts:
                def rewrite(e):
                    out = rule._division(e) or rule._power(e, fg.types)
                    if out is None:
                        return e
                    ctx.bump("strength-reduce-idfg.rewrites")
                    return out
                value = map_expr(st.value, rewrite)
                if value != st.value:
                    fg.set_value(st.id, value)
        return graph
