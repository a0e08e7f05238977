"""Benchmark of gir.compile's on-disk cache: the first compile of a program against the second.

    python3 samples/python/cache_bench.py [FILE.gir] [--sizes M=4096,N=1000] [--targets sim,cuda,mlu-sim]

Every measurement runs in a fresh process with a fresh temporary cache directory (never the user's). The
one-off costs of a process are not counted: imports, building the Lark parser of the grammar, and the
target's own imports (a one-line program is compiled first, without the cache). Columns:
  first compile   the compile pipeline, the cache empty (a miss; the entry is stored)
  again, same     gir.compile of the same program again in that process (a hit; a new Kernel; median)
  again, new      the same in another process (a hit read from disk)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import statistics, sys, time
import gir
from gir.parser import parse_text
file, target, sizes, repeat = sys.argv[1], sys.argv[2], eval(sys.argv[3]), int(sys.argv[4])
parse_text("func f(x: f32[N]) -> (y: f32[N]) {\\n  y[i] = x[i]\\n}\\n")   # builds the parser
gir.compile("func w(x: f32[N]) -> (y: f32[N]) {\\n  y[i] = x[i] * 2.0\\n}\\n", target=target, sizes={"N": 64},
            cache=False)                                                  # the target's imports
times, hits = [], []
for _ in range(1 + repeat):
    t = time.perf_counter()
    k = gir.compile(file, target=target, sizes=sizes)
    times.append(time.perf_counter() - t)
    hits.append(next(iter(k.programs.values())).from_cache)
print(times[0], hits[0], statistics.median(times[1:]) if repeat else 0.0, all(hits[1:]))
"""


def child(file: str, target: str, sizes: dict, repeat: int, cache: str) -> tuple[float, bool, float]:
    env = {**os.environ, "GIR_CACHE_DIR": cache, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", CHILD, file, target, repr(sizes), str(repeat)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[3] == "True", out
    return float(out[0]), out[1] == "True", float(out[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(ROOT / "samples" / "softmax.gir"))
    ap.add_argument("--sizes", default="M=4096,N=1000")
    ap.add_argument("--targets", default="sim,cuda,mlu-sim")
    ap.add_argument("--repeat", type=int, default=5, help="compiles of the cached program timed (median)")
    args = ap.parse_args()
    sizes = {k: int(v) for k, v in (part.split("=") for part in args.sizes.split(","))}
    from gir.cache import compiler_fingerprint

    print(f"{args.file} at {args.sizes}; compiler {compiler_fingerprint()}; time of the gir.compile call only")
    print(f"{'target':<8} {'first compile':>14} {'again, same':>12} {'again, new':>11} {'speed-up':>9}")
    for target in args.targets.split(","):
        with tempfile.TemporaryDirectory(prefix="gir-cache-bench-") as cache:
            first, hit, same = child(args.file, target, sizes, args.repeat, cache)
            assert not hit
            new, hit, _ = child(args.file, target, sizes, 0, cache)
            assert hit
        print(f"{target:<8} {first * 1e3:>11.0f} ms {same * 1e3:>9.1f} ms {new * 1e3:>8.1f} ms "
              f"{first / same:>8.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
