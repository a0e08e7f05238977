"""Every ONNX backend node test that GIR imports, run on a target through gir.compile and compared with the
test's expected outputs (gir.onnx.backend runs only the evaluator):

    python3 tests/onnx/census_targets.py sim|mlu-sim [PREFIX ...]

Prints MISMATCH / REFUSED / CRASH lines and a summary; f64 cases are skipped (the MLU has no f64)."""
import sys
import numpy as np
import gir
from gir.onnx.backend import node_cases, freeze_parameters, DEFAULT_PREFIXES
from gir.onnx.importer import import_onnx
from gir.onnx.crosscheck import compare, tolerance


class _Skip(Exception):
    """A case this census does not run (f64)."""


target = sys.argv[1]
prefixes = tuple(sys.argv[2:]) or DEFAULT_PREFIXES
ok = bad = skipped = 0
for case in node_cases(prefixes):
    try:
        case = freeze_parameters(case)
        r = import_onnx(case.model)
        if r.left_out or not r.functions:
            skipped += 1; continue
        env = {**case.inputs, **r.graph.constants}
        pending = list(r.functions)
        dtypes = {}
        while pending:
            fn = next((f for f in pending if all(t in env for t in f.inputs.values())), None)
            if fn is None: raise RuntimeError("cycle")
            pending.remove(fn)
            if any(p.type.dtype.value == "f64" for p in fn.func.params + fn.func.results):
                raise _Skip("f64")
            k = gir.compile(fn.text, target=target, cache=False)
            args = {g: np.asarray(env[t]) for g, t in fn.inputs.items()}
            got = k(**args)
            if len(fn.func.results) == 1: got = (got,)
            for p, v in zip(fn.func.results, got):
                env[fn.outputs[p.name]] = np.asarray(v); dtypes[fn.outputs[p.name]] = p.type.dtype
        worst = []
        for name, want in case.outputs.items():
            if name not in env: continue
            err, tol = compare(env[name], want, dtypes[name]), tolerance(dtypes[name])
            if not err <= tol: worst.append(f"{name}: {err:.3g} > {tol:g}")
        if worst:
            bad += 1; print("MISMATCH", case.name, worst, flush=True)
        else:
            ok += 1
    except _Skip:
        skipped += 1
    except gir.GirError as e:
        msg = str(e).splitlines()[0][:200]
        print("REFUSED", case.name, msg, flush=True); bad += 1
    except Exception as e:
        bad += 1; print("CRASH", case.name, type(e).__name__, str(e)[:200], flush=True)
print("target", target, "ok", ok, "bad", bad, "skipped", skipped)
