"""Hostile inputs for every subcommand: bytes, sizes and flags a user (or a fuzzer) can throw at `gir`.

Each case is (name, file bytes, extra argv per subcommand). `python -m tests.fuzz.hostile` runs all of them
through every subcommand with the fuzz oracle (harness.invoke) and a time limit, and prints the failures;
tests/fuzz/test_hostile.py runs the same cases in the suite.
"""
from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.harness import Outcome, invoke

SOFTMAX = """\
# softmax
func softmax(x: f32[M, N]) -> (y: f32[M, N]) {
  mx[i]   = max(x[i, j])
  e[i, j] = exp(x[i, j] - mx[i])
  s[i]    = sum(e[i, j])
  y[i, j] = e[i, j] / s[i]
}
"""

EXPLICIT = """\
func k(x: f32[M, N]) -> (y: f32[M, N]) {
  kernel rows with grid = M, block = 32 {
    parallel i in 0..M @block {
      parallel t in 0..32 @thread {
        for j in t..N step 32 {
          y[i, j] = x[i, j] * 2.0
        }
      }
    }
  }
}
"""


@dataclass
class Case:
    name: str
    data: bytes
    sizes: str = "M=3,N=5"
    extra: dict[str, list[str]] = field(default_factory=dict)
    expect: dict[str, int] = field(default_factory=dict)   # exit status each subcommand must give (when stated)


def _sum_terms(n: int) -> str:
    body = " + ".join(f"x[i, j] * {k}.0" for k in range(n))
    return f"func f(x: f32[M, N]) -> (y: f32[M, N]) {{\n  y[i, j] = {body}\n}}\n"


def _chain(n: int) -> str:
    lines = ["func f(x: f32[M, N]) -> (y: f32[M, N]) {", "  t0[i, j] = x[i, j] + 1.0"]
    lines += [f"  t{k}[i, j] = t{k - 1}[i, j] * 0.5 + x[i, j]" for k in range(1, n)]
    lines += [f"  y[i, j] = t{n - 1}[i, j]", "}"]
    return "\n".join(lines) + "\n"


def _nested_select(n: int) -> str:
    expr = "x[i, j]"
    for k in range(n):
        expr = f"select(x[i, j] > {k}.0, {expr}, 0.0)"
    return f"func f(x: f32[M, N]) -> (y: f32[M, N]) {{\n  y[i, j] = {expr}\n}}\n"


def _nested_parens(n: int) -> str:
    return f"func f(x: f32[M, N]) -> (y: f32[M, N]) {{\n  y[i, j] = {'(' * n}x[i, j]{')' * n}\n}}\n"


def _funcs(n: int) -> str:
    return "".join(f"func f{k}(x: f32[M, N]) -> (y: f32[M, N]) {{\n  y[i, j] = x[i, j] + {k}.0\n}}\n"
                   for k in range(n))


def _sibling_reductions(n: int) -> str:
    lines = ["func f(x: f32[M, N]) -> (y: f32[M]) {"]
    lines += [f"  s{k}[i] = sum(x[i, j] * {k}.0)" for k in range(n)]
    lines += ["  y[i] = " + " + ".join(f"s{k}[i]" for k in range(n)), "}"]
    return "\n".join(lines) + "\n"


def cases() -> list[Case]:
    s = SOFTMAX
    out = [
        Case("utf8-bad-byte", s.replace("# softmax", "# caf\xe9").encode("latin-1")),
        Case("utf8-bad-in-code", s.encode().replace(b"mx[i]   =", b"m\xffx[i] =")),
        Case("utf16-bom", s.encode("utf-16")),
        Case("nul-byte", s.encode().replace(b"exp", b"e\x00p")),
        Case("empty", b""),
        Case("only-comment", b"# nothing here\n"),
        Case("binary", bytes(random.Random(0).randrange(256) for _ in range(400))),
    ]
    for ch in ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r", "\x00", "\x7f", "\u00a0"]:
        code = f"U+{ord(ch):04X}"
        out.append(Case(f"ctl-linestart-{code}", ("func f(x: f32[M]) -> (y: f32[M]) {\n" + ch
                                                  + "  y[i] = x[i] +\n}\n").encode()))
        out.append(Case(f"ctl-comment-{code}", s.replace("# softmax", f"# soft{ch}max")
                        .replace("s[i]    = sum(e[i, j])", "s[i]    = sum(e[i, k])").encode()))
    out += [
        Case("sum-250-at-limit", _sum_terms(250).encode()),
        Case("exp-nest-250", ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = " + "exp(" * 250 + "x[i, j]"
                              + ")" * 250 + "\n}\n").encode()),
        Case("sum-500", _sum_terms(500).encode()),
        Case("sum-2000", _sum_terms(2000).encode()),
        Case("chain-400", _chain(400).encode()),
        Case("chain-2000", _chain(2000).encode()),       # over the 1024-statement limit
        Case("select-300", _nested_select(300).encode()),
        Case("parens-2000", _nested_parens(2000).encode()),
        Case("funcs-2000", _funcs(2000).encode()),
        Case("siblings-300", _sibling_reductions(300).encode()),
        Case("literal-5000-digits", s.replace("exp(x[i, j] - mx[i])", "exp(x[i, j] - " + "9" * 5000 + ".0)")
             .encode()),
        Case("int-literal-5000-digits", ("func f(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, "
                                         + "1" * 5000 + "]\n}\n").encode()),
        Case("int-overflow-i32", b"func f(x: i32[M]) -> (y: i32[M]) {\n  y[i] = x[i] + 3000000000\n}\n"),
        Case("int-overflow-i32-mul", b"func f(x: i32[M]) -> (y: i32[M]) {\n  y[i] = x[i] * 2147483647\n}\n",
             sizes="M=3"),
        Case("float-overflow-literal", b"func f(x: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i] + 1e999\n}\n",
             sizes="M=3"),
        # empty tensors run (empty results, a reduction's identity: gir/empty.py); emitting kernels for them is a
        # located error
        Case("zero-dim", b"func f(x: f32[0, N]) -> (y: f32[0, N]) {\n  y[i, j] = x[i, j] + 1.0\n}\n",
             sizes="N=5", expect=ZERO_SIZE),
        Case("zero-dim-reduce", b"func f(x: f32[M, 0]) -> (y: f32[M]) {\n  y[i] = sum(x[i, j])\n}\n",
             sizes="M=5", expect=ZERO_SIZE),
        # (no expectation for compile: mlu-sim gets the --sizes and refuses, the GPU targets get none and emit)
        Case("zero-size-binding", s.encode(), sizes="M=4,N=0", expect={"check": 0, "eval": 0, "run": 0}),
        Case("zero-size-argmax", b"func f(x: f32[M, N]) -> (y: i32[M]) {\n  y[i] = argmax(x[i, j])\n}\n",
             sizes="M=4,N=0", expect={"check": 0, "eval": 1, "run": 1}),
        Case("huge-literal-shape", b"func f(x: f32[4294967296, 2]) -> (y: f32[4294967296]) {\n"
                                   b"  y[i] = sum(x[i, j])\n}\n", sizes=""),
        Case("huge-2p40", b"func f(x: f32[1099511627776]) -> (y: f32[1099511627776]) {\n"
                          b"  y[i] = x[i] * 2.0\n}\n", sizes=""),
        Case("dup-axis", b"func f(a: f32[3, 5]) -> (y: f32[1]) {\n"
                         b"  y[z] = sum(a[0:3, 0:5], axis=[0, 0, 1])\n}\n", sizes=""),
        Case("gather-cols-gpu", b"func f(x: f32[M, N], idx: i32[M, K]) -> (y: f32[M, K]) {\n"
                                b"  y[i, k] = gather_cols(x[i, j], idx[i, k])\n}\n", sizes="M=3,N=5,K=2"),
        Case("sizes-negneg", s.encode(), sizes="M=--4,N=5"),
        Case("sizes-unknown", s.encode(), sizes="M=3,N=5,Q=7"),
        Case("sizes-huge", s.encode(), sizes="M=99999999999999999999999,N=5"),
        Case("sizes-empty-entry", s.encode(), sizes="M=3,,N=5"),
        Case("sizes-unicode-digit", s.encode(), sizes="M=\u0663,N=5"),
        Case("sizes-plus", s.encode(), sizes="M=+3,N=5"),
        Case("sizes-dup", s.encode(), sizes="M=3,M=4,N=5"),
        Case("threads-4096", EXPLICIT.replace("block = 32", "block = 4096")
             .replace("0..32 @thread", "0..4096 @thread").replace("step 32", "step 4096").encode()),
        Case("gather-cols-kernel", (Path(__file__).parents[1] / "sim/kernels/transpose_gather_builtins.gir")
             .read_bytes(), sizes=""),
        Case("allreduce-divergent", (Path(__file__).parents[1] / "sim/kernels/warp_rowsum.gir").read_text()
             .replace("          allreduce sum s[0:1] over l\n",
                      "          if l < 16 {\n            allreduce sum s[0:1] over l\n          }\n").encode(),
             sizes="M=3"),
        Case("store-input", EXPLICIT.replace("y[i, j] = x[i, j] * 2.0", "x[i, j] = x[i, j] * 2.0").encode()),
    ]
    return out


SUBCOMMANDS = ["check", "fmt", "eval", "compile", "run", "analyze", "opt"]
ZERO_SIZE = {"check": 0, "eval": 0, "run": 0, "compile": 1}


def argv_for(sub: str, path: str, case: Case, out: Path) -> list[list[str]]:
    sz = ["--sizes", case.sizes] if case.sizes else []
    if sub == "check":
        return [["check", path]]
    if sub == "fmt":
        return [["fmt", path], ["fmt", "--check", path]]
    if sub == "eval":
        return [["eval", path, *sz]]
    if sub == "compile":
        return [["compile", path, "--target", t, *(sz if t == "mlu" else []), "-o", str(out / t) + "/"]
                for t in ("cuda", "hip", "mlu")]
    if sub == "run":
        return [["run", path, *sz, "--target", t] for t in ("sim", "mlu-sim")]
    if sub == "analyze":
        return [["analyze", path, *sz]]
    return [["opt", path, "--passes", "canonicalize,cse,dce"]]


def run_case(case: Case, tmp: Path, timeout: float, subs=SUBCOMMANDS) -> list[tuple[Outcome, float]]:
    path = tmp / f"{case.name}.gir"
    path.write_bytes(case.data)
    bad = []
    for sub in subs:
        for argv in argv_for(sub, str(path), case, tmp / "out" / case.name / sub):
            out = Path(argv[argv.index("-o") + 1]) if "-o" in argv else None
            t0 = time.perf_counter()
            o = invoke(argv, out, timeout=timeout)
            dt = time.perf_counter() - t0
            if o.status == "timeout":
                o.problems.append(f"hung (> {timeout:g} s)")
            elif sub in case.expect and o.status != case.expect[sub]:
                o.problems.append(f"exit status {o.status}, expected {case.expect[sub]}")
            if o.problems:
                bad.append((o, dt))
    return bad


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--only", help="substring of case names")
    ap.add_argument("--sub", help="comma-separated subcommands")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the end of each traceback")
    args = ap.parse_args()
    import tempfile

    subs = args.sub.split(",") if args.sub else SUBCOMMANDS
    n_bad = 0
    with tempfile.TemporaryDirectory() as d:
        for case in cases():
            if args.only and args.only not in case.name:
                continue
            t0 = time.perf_counter()
            bad = run_case(case, Path(d), args.timeout, subs)
            print(f"{case.name:28s} {time.perf_counter() - t0:6.1f}s {'ok' if not bad else 'BAD'}", flush=True)
            for o, dt in bad:
                n_bad += 1
                print(f"   gir {' '.join(o.argv[:1] + o.argv[2:])} -> {o.status} ({dt:.1f}s): {o.problems}")
                if o.exc and args.verbose:
                    print("     " + "\n     ".join(o.exc.strip().splitlines()[-4:]))
    print(f"{n_bad} failures")
    return 1 if n_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
