"""Mutation fuzzing of the `gir` CLI over the sample corpus.

    python -m tests.fuzz.driver --cases 2000 --seed 1 --save /tmp/gir-fuzz   # a long run; saves failures

Each case mutates one corpus file, then runs `check` and `fmt` on it and, if it verifies, `eval`, `compile
--target cuda -o DIR` and `run --target sim` with small (occasionally malformed) sizes. See harness.py for
what counts as a failure.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from tests.fuzz.harness import Outcome, invoke
from tests.fuzz.mutate import mutate, sizes_arg

ROOT = Path(__file__).resolve().parents[2]
# valid programs (operator layer and explicit kernels) and the negative tests
VALID = sorted([*ROOT.glob("samples/*.gir"), *ROOT.glob("samples/explicit/*.gir"),
                *ROOT.glob("tests/sim/kernels/*.gir"), *ROOT.glob("tests/gpu_codegen/kernels/*.gir"),
                *ROOT.glob("tests/analysis/kernels/*.gir")])
ERRORS = sorted(ROOT.glob("tests/frontend/errors/*.gir"))
CORPUS = VALID + ERRORS


def size_symbols(text: str) -> list[str]:
    """Size symbols of the parsed program, in order; [] if it does not parse."""
    from gir.errors import GirError
    from gir.parser import parse_text

    try:
        module = parse_text(text, "<fuzz>")
    except GirError:
        return []
    except Exception:  # noqa: BLE001 - a parser crash is reported by the CLI run itself
        return []
    out: list[str] = []
    for f in module.funcs:
        for p in (*f.params, *f.results):
            for d in p.type.shape:
                if isinstance(d, str) and d not in out:
                    out.append(d)
    return out


def commands(path: str, text: str, original: str, rng: random.Random, out_dir: Path, verified: bool):
    """The argv lists to try on one mutated file."""
    syms = size_symbols(text) or size_symbols(original)
    yield ["check", path]
    yield ["fmt", path]
    if not verified:
        if rng.random() < 0.3:  # bad files must fail the same way in every subcommand
            yield rng.choice([["eval", path, "--sizes", sizes_arg(syms, rng)],
                              ["compile", path, "--target", "cuda", "-o", str(out_dir)],
                              ["run", path, "--sizes", sizes_arg(syms, rng), "--no-races"]])
        return
    explicit = "kernel" in text
    if not explicit:
        yield ["eval", path, "--sizes", sizes_arg(syms, rng)]
    argv = ["compile", path, "--target", "cuda", "-o", str(out_dir)]
    if rng.random() < 0.5:
        argv += ["--sizes", sizes_arg(syms, rng, 0.05)]
    yield argv
    yield ["run", path, "--sizes", sizes_arg(syms, rng), "--no-races"]


def fuzz_case(seed: int, work: Path, timeout: float = 20.0) -> tuple[str, str, list[Outcome], int]:
    """One case: (corpus file, mutated text, failing outcomes, number of timeouts)."""
    rng = random.Random(seed)
    src = rng.choice(VALID if rng.random() < 0.75 else ERRORS)
    original = src.read_text()
    text = mutate(original, rng, semantic=src in VALID and rng.random() < 0.7)
    path = work / f"case_{seed}.gir"
    path.write_text(text)
    out_dir = work / f"out_{seed}"
    bad: list[Outcome] = []
    timeouts = 0
    first = invoke(["check", str(path)], None, timeout)
    outcomes = [first]
    for argv in commands(str(path), text, original, rng, out_dir, verified=first.status == 0):
        if argv[0] != "check":
            outcomes.append(invoke(argv, out_dir if "-o" in argv else None, timeout))
    for o in outcomes:
        timeouts += o.status == "timeout"
        if not o.ok:
            bad.append(o)
    return str(src.relative_to(ROOT)), text, bad, timeouts


def explicit_case(seed: int, work: Path, timeout: float = 30.0) -> tuple[str, str, list[Outcome], int]:
    """One generated explicit kernel: check, compile and run (against its operator-layer reference) must
    agree: a kernel that checks must compile and match the reference on the simulator; one that does not
    must fail `run` too, with located diagnostics."""
    from tests.fuzz.explicit_gen import generate

    g = generate(seed)
    k, ref, out_dir = work / f"gen_{seed}.gir", work / f"gen_{seed}_ref.gir", work / f"gen_out_{seed}"
    k.write_text(g.kernel)
    ref.write_text(g.reference)
    # the same sizes everywhere: a kernel may be safe for N=128 but not for every N (a tail)
    sizes = ["--sizes", g.sizes] if g.sizes else []
    chk = invoke(["check", str(k), *sizes], None, timeout)
    comp = invoke(["compile", str(k), "--target", "cuda", "-o", str(out_dir), *sizes], out_dir, timeout)
    run = invoke(["run", str(k), "--reference", str(ref), "--no-races", *sizes], None, timeout)
    bad = [o for o in (chk, comp, run) if not o.ok]
    timeouts = sum(o.status == "timeout" for o in (chk, comp, run))
    if not bad and not timeouts:
        for o in (comp, run):
            if o.status != chk.status:
                o.problems.append(f"check exited {chk.status} but {o.argv[0]} exited {o.status}: "
                                  f"{(o.stderr or o.stdout).strip()[:300]}")
                bad.append(o)
    return f"{g.what} check={chk.status}", g.kernel, bad, timeouts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", default="/tmp/gir-fuzz")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--explicit", action="store_true", help="generated explicit kernels instead of mutations")
    args = ap.parse_args(argv)
    save = Path(args.save)
    save.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    t0 = time.time()
    total_to = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.cases):
            seed = args.seed * 1_000_000 + k
            case = explicit_case if args.explicit else fuzz_case
            src, text, bad, to = case(seed, Path(tmp), args.timeout)
            total_to += to
            for o in bad:
                key = o.problems[0] + (o.exc.strip().splitlines()[-3] if o.exc else "")
                seen[key] = seen.get(key, 0) + 1
                if seen[key] <= 2:
                    (save / f"crash_{seed}.gir").write_text(text)
                    (save / f"crash_{seed}.txt").write_text(
                        f"source: {src}\nargv: {o.argv}\nstatus: {o.status}\nproblems: {o.problems}\n"
                        f"--- stderr\n{o.stderr}\n--- traceback\n{o.exc or ''}")
                    print(f"[{seed}] {src} {o.argv[0]}: {o.problems[0][:200]}", flush=True)
            if (k + 1) % 50 == 0:
                print(f"... {k + 1} cases, {time.time() - t0:.0f}s, {len(seen)} distinct, {total_to} timeouts",
                      flush=True)
    print(f"done: {args.cases} cases in {time.time() - t0:.0f}s; {len(seen)} distinct problems; "
          f"{total_to} timeouts")
    for key, n in sorted(seen.items(), key=lambda kv: -kv[1]):
        print(f"{n:5d}  {key[:300]}")
    return 1 if seen else 0


if __name__ == "__main__":
    raise SystemExit(main())
