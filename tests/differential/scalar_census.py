"""Scalar-kernel census of the MLU path: the differential generator's programs (diffprog.py) with every dimension
scaled up (to at most 4.2M elements), compiled for mlu-sim (no simulation), counting the statements that run as
scalar kernels ("runs as a scalar MLU kernel" remarks) and the recipes' reasons.
`python3 tests/differential/scalar_census.py FIRST COUNT` prints each such program and a summary."""
from __future__ import annotations

import collections
import math
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diffprog import program  # noqa: E402

from gir.errors import GirError  # noqa: E402
from gir.parser import parse_text  # noqa: E402
from gir.passes.middle import run_default  # noqa: E402


def scaled(seed: int) -> tuple[str, dict[str, int]]:
    text, sizes = program(seed)
    rng = random.Random(seed)
    big = {k: (v if v == 1 else rng.choice([v * 37, v * 61, 1000, 4099, 257])) for k, v in sizes.items()}
    while math.prod(big.values()) > 4_200_000:
        k = max(big, key=big.get)
        big[k] = max(1, big[k] // 3)
    return text, big


def main(first: int, count: int) -> None:
    why: collections.Counter = collections.Counter()
    programs = 0
    for seed in range(first, first + count):
        text, sizes = scaled(seed)
        try:
            _, ctx = run_default(parse_text(text), "mlu-sim", {"sizes": sizes})
        except GirError as e:
            why["refused: " + e.diagnostics[0].message[:80]] += 1
            continue
        hits = [r for r in ctx.remarks if "scalar MLU kernel" in r.message]
        programs += bool(hits)
        for r in hits:
            m = re.search(r"tiles: ([^;)]*)", r.message)
            why[m.group(1) if m else "no vector schedule covers it"] += 1
        if hits:
            print(f"seed {seed} {sizes}: {len(hits)} scalar statement(s)\n{text}")
    print(f"{programs} of {count} programs have a scalar kernel; reasons: {why.most_common()}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
