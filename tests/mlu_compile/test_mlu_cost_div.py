"""The MLU cost model charges a division as the emitter writes it (passes/schedule_mlu/cost_vector.py
`_reciprocal`, codegen/mlu/vecops.py `_scalar_form` / `_per_row`): by a single value, or by a per-row statistic
of a full tile, a multiply by the reciprocal (a simple-class op) -- unless the kernel must divide exactly
(exactdiv.py: a quotient read by `floor`), where the division stays one; element by element always a division.
A narrowing cast (f32 to bf16) costs the vector units of its wider source (cost_vector.py `_narrowing`).
The estimated compute cycles of the slowest task must be the simulated ones of the slowest core (within 5%):
softmax in f16 was estimated at 1.43x its simulated time with every `e / s[i]` charged as a division."""
import pytest

from gir import ir
from gir.codegen.mlu import emit_func
from gir.parser import parse_text
from gir.passes.schedule_mlu import schedule_mlu
from gir.passes.schedule_mlu.cost import estimate
from gir.passes.schedule_mlu.exactdiv import is_exact
from gir.targets.mlu import MLU370, ShapeOnly, parse_program, simulate
from gir.targets.mlu.run import _dev_dtype

SOFTMAX = ("func f(x: {t}[M, N]) -> (y: {t}[M, N]) {{\n  m[i] = max(x[i, j])\n  e[i, j] = exp(x[i, j] - m[i])\n"
           "  s[i] = sum(e[i, j])\n  y[i, j] = e[i, j] / s[i]\n}}\n")
CASES = [   # (source, sizes, whether the kernel divides exactly)
    (SOFTMAX.format(t="f16"), {"M": 512, "N": 2048}, False),
    (SOFTMAX.format(t="f32"), {"M": 257, "N": 1000}, False),
    ("func f(x: f32[M, N], s: f32[M]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] / s[i]\n}\n",
     {"M": 512, "N": 1024}, False),
    ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] / 3.0\n}\n", {"M": 300, "N": 777}, False),
    # (and the cast back to bf16: the units of its f32 source, as the simulator counts a narrowing conversion)
    ("func f(x: bf16[M, N]) -> (y: bf16[M, N]) {\n  y[i, j] = x[i, j] / 3.0\n}\n", {"M": 300, "N": 777}, False),
    (SOFTMAX.format(t="bf16"), {"M": 129, "N": 3000}, False),
    ("func f(x: f32[M, N], s: f32[M]) -> (y: f32[M, N]) {\n  y[i, j] = floor(x[i, j] / s[i])\n}\n",
     {"M": 512, "N": 1024}, True),
    ("func f(x: f32[M, N], z: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j] / z[i, j]\n}\n",
     {"M": 512, "N": 1024}, False),
]


def _simulated(explicit: ir.Func) -> list:
    kernels = emit_func(explicit)
    program = parse_program("".join(k.source for k in kernels), "f.mlu")
    shapes = {p.name: p.type for p in explicit.params + explicit.results}
    shapes.update({a.name: a.type for a in explicit.body if isinstance(a, ir.Alloc)})
    mem = {n: ShapeOnly(tuple(t.shape), _dev_dtype(t.dtype)) for n, t in shapes.items()}
    return [simulate(program, k.name, {n: mem[n] for n in k.metadata["params"]}, k.metadata["task_dim"], MLU370,
                     values=False) for k in kernels]


@pytest.mark.parametrize("src,sizes,exact", CASES)
def test_estimated_compute_is_the_simulated_one(src, sizes, exact):
    explicit = schedule_mlu(parse_text(src).funcs[0], sizes)
    assert [is_exact(k) for k in explicit.kernels] == [exact] * len(explicit.kernels)
    for est, sim in zip(estimate(explicit).kernels, _simulated(explicit)):
        slowest = max(sim.per_core, key=lambda c: c.finish_cycles)
        assert est.compute == pytest.approx(slowest.compute_busy_cycles, rel=0.05), (est, slowest)


def test_a_function_that_divides_exactly_is_estimated_so_while_it_is_scheduled():
    """Its kernels carry `division=exact` only once its schedule is done (schedule.py `mark_exact`): the search's
    estimates before that read the exact scope (`exactdiv.SCOPES`)."""
    from gir.passes.schedule_mlu.exactdiv import SCOPES, mark_exact
    src, sizes = CASES[2][:2]   # y = x / s[i]: a reciprocal unless exact
    plain = schedule_mlu(parse_text(src).funcs[0], sizes)
    SCOPES.append("f")
    try:
        inside = estimate(plain).kernels[0].compute
    finally:
        SCOPES.pop()
    assert inside == estimate(mark_exact(plain)).kernels[0].compute > estimate(plain).kernels[0].compute
