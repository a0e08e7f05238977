"""The MLU's spellings of the C-style printer (codegen/cstyle.py): the kernel AST of codegen/ast.py printed as the
BANG-C-like language of targets/mlu (docs: targets/mlu/LANGUAGE.md). The MLU emitter (emit.py) builds the kernel
as that AST -- loops, conditions, blocks, declarations, on-chip arrays, the core and cluster barriers, and the DMA
and vector instructions as intrinsics (`Eval(Intrinsic("bang_cycle_add", ...))` prints `__bang_cycle_add(...);`,
`memcpy_async` prints `__memcpy_async`) -- and their operands, the pointer and offset arithmetic, as expressions
(codegen/mlu/cexpr.py, instr.py)."""
from __future__ import annotations

from gir.codegen import ast as C
from gir.codegen.cstyle import _ATOM, _UNARY, CStylePrinter

CTYPE = {"f32": "float", "f16": "half", "bf16": "bfloat16_t", "i32": "int", "i64": "int", "bool": "uint8_t"}
SPACE = {"nram": "__nram__", "sram": "__mlu_shared__", "wram": "__wram__"}


class MluPrinter(CStylePrinter):
    name = "mlu"
    extension = ".mlu"
    dtypes = CTYPE
    index_ctype = "int"   # the language has no 64-bit integers
    INF = {"f": "INFINITY", "": "INFINITY"}   # the language's constants (targets/mlu/lang.py)
    NAN = {"f": "NAN", "": "NAN"}
    spell = {
        "kernel": "__mlu_global__ void {name}({params})",
        "barrier_core": "__sync_io_move_compute()",      # the core's IO and compute pipes
        "barrier_cluster": "__sync_cluster()",           # the cores of a cluster
        "barrier_all": "__sync_all()",                   # every task of the launch
    }

    def kernel(self, k: C.KernelFunc) -> str:
        """`k.shared`: the on-chip arrays."""
        params = ", ".join(self.param(p) for p in k.params)
        lines = [self.spell["kernel"].format(name=k.name, params=params) + " {"]
        for d in k.shared:
            lines += self.stmt(d, 1)
        return "\n".join(lines + self.block(k.body, 1) + ["}"]) + "\n"

    def ctype(self, t: str) -> str:
        """GIR dtypes by the MLU's table (bool is uint8_t, i64 is int); "int", "float" and "index" as in C; a
        trailing `*` is a pointer to the type (`f16*` is `half*`)."""
        if t.endswith("*"):
            return self.ctype(t[:-1]) + "*"
        return self.dtypes.get(t) or {"int": "int", "float": "float", "index": "int"}[t]

    def param(self, p: C.Param) -> str:
        return f"{self.ctype(p.ctype)}* {p.name}"

    def stmt(self, s: C.CStmt, depth: int) -> list[str]:
        if isinstance(s, C.Decl) and s.size is not None:   # on-chip arrays: `__nram__ float t[N];`
            return [f"{'  ' * depth}{SPACE[s.space]} {self.ctype(s.ctype)} {s.name}[{s.size}];"]
        if isinstance(s, C.For) and s.inline:   # `for (int r_ = 0; r_ < R; r_++) { __bang_...; }`
            body = " ".join(line.strip() for x in s.body for line in self.stmt(x, 0))
            return [f"{'  ' * depth}for (int {s.var} = {self.expr(s.lo)}; {s.var} < {self.expr(s.hi)}; {s.var}++) "
                    f"{{ {body} }}"]
        return super().stmt(s, depth)

    def literal(self, e: C.Num) -> tuple[str, int]:
        """Integers without C's `LL` suffix: the language's integers are 32-bit (`int`), its parser reads any
        literal (an i32 scan's identity is `-2147483648`)."""
        if e.kind == "i":
            v = int(e.value)
            return str(v), _UNARY if v < 0 else _ATOM
        return super().literal(e)

    def intrinsic(self, e: C.Intrinsic) -> str:
        """The MLU's instructions: `__` + the intrinsic's name (`bang_add`, `memcpy_async`, `bang_float2half`)."""
        return f"__{e.name}({', '.join(self.expr(a) for a in e.args)})"
