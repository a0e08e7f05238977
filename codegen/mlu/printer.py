"""The MLU's spellings of the C-style printer (codegen/cstyle.py): the kernel AST of codegen/ast.py printed as the
BANG-C-like language of targets/mlu (docs: targets/mlu/LANGUAGE.md). The MLU emitter (emit.py) builds the kernel
as that AST -- loops, conditions, blocks, declarations, on-chip arrays, the core and cluster barriers -- whose
leaves are the DMA and vector instructions vecops.py / cexpr.py spell (`Line`, `Verbatim`)."""
from __future__ import annotations

from gir.codegen import ast as C
from gir.codegen.cstyle import CStylePrinter

CTYPE = {"f32": "float", "f16": "half", "bf16": "bfloat16_t", "i32": "int", "i64": "int", "bool": "uint8_t"}
SPACE = {"nram": "__nram__", "sram": "__mlu_shared__", "wram": "__wram__"}


class MluPrinter(CStylePrinter):
    name = "mlu"
    extension = ".mlu"
    dtypes = CTYPE
    index_ctype = "int"   # the language has no 64-bit integers
    spell = {
        "kernel": "__mlu_global__ void {name}({params})",
        "barrier_core": "__sync_io_move_compute()",      # the core's IO and compute pipes
        "barrier_cluster": "__sync_cluster()",           # the cores of a cluster
    }

    def kernel(self, k: C.KernelFunc, post=None) -> str:
        """`k.shared`: the on-chip arrays; `post(lines) -> lines`: a peephole over the printed body (the MLU's
        multiply-add fusion, fuse.py)."""
        params = ", ".join(self.param(p) for p in k.params)
        lines = [self.spell["kernel"].format(name=k.name, params=params) + " {"]
        for d in k.shared:
            lines += self.stmt(d, 1)
        body = self.block(k.body, 1)
        return "\n".join(lines + (post(body) if post else body) + ["}"]) + "\n"

    def ctype(self, t: str) -> str:
        """GIR dtypes by the MLU's table (bool is uint8_t, i64 is int); "int", "float" and "index" as in C."""
        return self.dtypes.get(t) or {"int": "int", "float": "float", "index": "int"}[t]

    def param(self, p: C.Param) -> str:
        return f"{self.ctype(p.ctype)}* {p.name}"

    def stmt(self, s: C.CStmt, depth: int) -> list[str]:
        if isinstance(s, C.Decl) and s.size is not None:   # on-chip arrays: `__nram__ float t[N];`
            return [f"{'  ' * depth}{SPACE[s.space]} {self.ctype(s.ctype)} {s.name}[{s.size}];"]
        return super().stmt(s, depth)
