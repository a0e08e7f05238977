"""Run one random program (diffprog.py) on the evaluator, the SIMT simulator and the MLU simulator and judge both
targets against the float64 evaluator with gir.verdict (per-dtype tolerance, widened only where the result is
ill-conditioned). `python3 tests/differential/diffrun.py FIRST COUNT [TARGETS]` prints a failure census (TARGETS: comma-separated,
default sim,mlu-sim; cuda runs the emitted CUDA on a real GPU)."""
from __future__ import annotations

import sys
import traceback

import numpy as np

from gir.errors import GirError
from gir.evaluate import random_inputs
from gir.parser import parse_text
from gir.rounding import expected_and_bounds
from gir.verdict import compare
from gir.verifier import verify_module
from gir.views import complete_sizes

try:
    from diffprog import program
except ImportError:   # run as a script from the repository root
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from diffprog import program


def _sim(module, inputs, sizes):
    from gir.passes.schedule import lower_module
    from gir.targets.sim import run_func
    low = lower_module(module, "sim", {"sizes": sizes}).funcs[0]
    return run_func(low, inputs, sizes).outputs


def _mlu(module, inputs, sizes):
    """Through the compile pipeline, as `gir run --target mlu-sim` runs it (IDFG passes, the MLU schedule,
    software-pipeline)."""
    from gir.passes.middle import lower_module
    from gir.targets.mlu.run import run_func
    low = lower_module(module, "mlu-sim", {"sizes": sizes}).funcs[0]
    return run_func(low, inputs, sizes, pipeline=False).outputs


def _cuda(module, inputs, sizes):
    """The emitted CUDA on a real GPU (cupy), through the same pipeline as `gir run --target cuda`."""
    from gir.passes.schedule import lower_module
    from gir.targets.cuda import run_func
    low = lower_module(module, "cuda", {"sizes": sizes}).funcs[0]
    return run_func(low, inputs, sizes).outputs


RUNNERS = {"sim": _sim, "mlu-sim": _mlu, "cuda": _cuda}


def check(seed: int, targets=("sim", "mlu-sim")) -> dict[str, str]:
    """{target: problem} for the targets that disagree with the evaluator ('' = all agree). A GirError on the
    MLU is a refusal (allowed when it is located); any other exception is a failure."""
    text, sizes = program(seed)
    return check_text(text, sizes, seed, f"<random {seed}>", targets)


def check_text(text: str, sizes: dict[str, int], seed: int = 0, name: str = "<program>",
               targets=("sim", "mlu-sim")) -> dict[str, str]:
    """`check` of one given program (its first function) on seeded random inputs."""
    module = parse_text(text, name)
    verify_module(module)
    func = module.funcs[0]
    inputs = random_inputs(func, sizes, np.random.default_rng(seed))
    sizes = complete_sizes(func, dict(sizes))   # (with the derived sizes of reshape views, as gir run binds them)
    want, bounds = expected_and_bounds(func, inputs, sizes)   # (in the declared shapes of reshape views too)
    problems = {}
    for name in targets:
        runner = RUNNERS[name]
        try:
            with np.errstate(all="ignore"):
                got = runner(module, inputs, sizes)
        except GirError as e:
            located = e.loc is not None and getattr(e.loc, "line", 0) >= 1
            problems[name] = f"{'refused' if located else 'unlocated error'}: {e.message}"
            continue
        except Exception as e:   # noqa: BLE001 - the census names every crash
            frame = traceback.extract_tb(e.__traceback__)[-1]
            problems[name] = f"crash: {type(e).__name__}: {e} ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
            continue
        for r in func.results:
            v = compare(got[r.name], want[r.name], r.type.dtype, bounds.get(r.name))
            if not v.passed:
                problems[name] = f"wrong {r.name}: error {v.error:.2e} > {v.tolerance:.1e} {v.reason}"
    return problems


def main(first: int, count: int, targets=("sim", "mlu-sim")) -> None:
    import collections
    census = collections.Counter()
    bad = 0
    for seed in range(first, first + count):
        problems = check(seed, targets)
        if problems:
            bad += 1
            text, sizes = program(seed)
            print(f"--- seed {seed} {sizes}\n{text}" + "".join(f"  {k}: {v}\n" for k, v in problems.items()),
                  flush=True)
            for k, v in problems.items():
                census[(k, v.split(":")[0] + ":" + v.split(":")[1][:60])] += 1
    print(f"{bad} of {count} programs fail")
    for (k, v), n in census.most_common():
        print(f"{n:5d}  {k}: {v}")


def targets_arg(argv: list[str]) -> tuple[str, ...]:
    """The optional third argument: comma-separated targets (sim, mlu-sim, cuda; default sim,mlu-sim)."""
    names = tuple(argv[3].split(",")) if len(argv) > 3 else ("sim", "mlu-sim")
    unknown = [n for n in names if n not in RUNNERS]
    if unknown:
        sys.exit(f"unknown target {unknown[0]!r} (known: {', '.join(RUNNERS)})")
    return names


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), targets_arg(sys.argv))
