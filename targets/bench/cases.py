"""Benchmark suites: which operators at which sizes. Shapes follow public practice
(Triton tutorials, QuACK, Apex, KernelBench); `--quick` sizes keep CI short."""
from __future__ import annotations

from dataclasses import dataclass, field

from gir.targets.bench.programs import PROGRAMS, program_text

DTYPES = ("f32", "f16", "bf16")


@dataclass(frozen=True)
class Case:
    suite: str
    op: str
    dtype: str
    sizes: dict[str, int] = field(hash=False)
    source: str = field(default="", hash=False)
    filename: str = "<bench>"

    @property
    def label(self) -> str:
        dims = "x".join(str(v) for v in self.sizes.values())
        return f"{self.op}[{dims}] {self.dtype}"

    @property
    def spelled(self) -> str:
        """`softmax f32 M=4096,N=1024` (a file: its path and sizes), as progress lines name a case."""
        sizes = ",".join(f"{k}={v}" for k, v in self.sizes.items())
        head = self.filename if self.suite == "files" else f"{self.op} {self.dtype}"
        return f"{head} {sizes}".rstrip()

    def make_inputs(self, func, rng):
        """Fresh random inputs of the case's function (gir.evaluate.random_inputs)."""
        from gir.evaluate import random_inputs

        return random_inputs(func, self.sizes, rng)

    def judge(self, func, inputs: dict, outputs: dict) -> dict:
        """`status`, `rel_err`, `tolerance` (and `note`) of a target's outputs (in the kernels' shapes) on
        `inputs` (in the declared shapes): the verdict of `gir run` against the float64 reference evaluator
        (runners.check_outputs)."""
        from gir.targets.bench.runners import check_outputs
        from gir.views import to_outer

        return check_outputs(func, inputs, to_outer(func, outputs, self.sizes), self.sizes)

    def viewed(self, func, inputs: dict) -> dict:
        """Inputs in the shapes the kernels take (a reshape view's; the same arrays otherwise)."""
        from gir.views import to_view

        return to_view(func, inputs, self.sizes)


_R3 = (128, 4096, 4095)

FULL: dict[str, list[tuple[str, dict[str, int]]]] = {
    "softmax": [(op, {"M": 4096, "N": n}) for op in ("softmax", "log_softmax")
                for n in (256, 1024, 1025, 4096, 12672, 32768)],
    "norm": [(op, {"M": 32768, "N": n}) for op in ("layernorm", "rmsnorm")
             for n in (768, 1024, 4096, 5120, 8192, 16384)],
    "reduce": [(f"{r}_{ax}", dict(zip("ABC", _R3))) for r in ("sum", "mean", "max") for ax in ("dim1", "last")],
    "transpose": [("transpose", {"M": 8192, "N": 8192}),
                  ("permute0213", {"B": 8, "S": 2048, "H": 32, "D": 128})],
    "elementwise": [("bias_gelu", {"M": 8192, "N": 8192}), ("chain5", {"M": 8192, "N": 8192})],
    "scan": [("cumsum_last", {"M": 2048, "N": 2048}), ("cumsum_first", {"M": 2048, "N": 2048}),
             ("cumsum_1d", {"N": 4194304}), ("cummax_rev_cols", {"M": 65536, "N": 64})],
}

QUICK: dict[str, list[tuple[str, dict[str, int]]]] = {
    "softmax": [(op, {"M": 64, "N": n}) for op in ("softmax", "log_softmax") for n in (256, 1025)],
    "norm": [(op, {"M": 64, "N": n}) for op in ("layernorm", "rmsnorm") for n in (768, 1000)],
    "reduce": [(f"{r}_{ax}", {"A": 4, "B": 64, "C": 63}) for r in ("sum", "mean", "max") for ax in ("dim1", "last")],
    "transpose": [("transpose", {"M": 96, "N": 65}), ("permute0213", {"B": 2, "S": 16, "H": 4, "D": 32})],
    "elementwise": [("bias_gelu", {"M": 64, "N": 1000}), ("chain5", {"M": 64, "N": 1000})],
    "scan": [("cumsum_last", {"M": 7, "N": 1500}), ("cumsum_first", {"M": 1500, "N": 7}),
             ("cumsum_1d", {"N": 9001}), ("cummax_rev_cols", {"M": 3001, "N": 5})],
}

SUITE_NAMES = tuple(FULL) + ("all",)


def suite_cases(suite: str, quick: bool = False, dtypes=DTYPES) -> list[Case]:
    table = QUICK if quick else FULL
    names = list(table) if suite == "all" else [suite]
    return [Case(name, op, dt, dict(sizes), program_text(op, dt), f"<bench:{op}:{dt}>")
            for name in names for op, sizes in table[name] for dt in dtypes]


assert all(op in PROGRAMS for table in (FULL, QUICK) for cases in table.values() for op, _ in cases)
