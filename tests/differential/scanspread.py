"""Seeded spread of scans along the last axis at 1M-8M elements, rows mostly off the 64-byte DMA granule: every
op, exclusive and reverse forms, f32 / f16 / bf16, with and without a per-position weight. Prints the simulated
time over the DMA roofline of each on mlu-sim (timing-only), one line per configuration, to compare the MLU scan's
choices between two trees (docs/mlu.md "Units of one tile"). `python3 tests/differential/scanspread.py SEED COUNT`
(the docs' figures: SEED 5 COUNT 24, SEED 6 COUNT 30)."""
from __future__ import annotations

import random
import sys


def configs(seed: int, count: int) -> list:
    """[(name, program text, sizes)]."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        t = rng.choice(("f32", "f16", "bf16"))
        op = rng.choice(("cumsum", "cumprod", "cummax", "cummin"))
        flags = (", exclusive=1" if rng.random() < 0.3 else "") + (", reverse=1" if rng.random() < 0.4 else "")
        e = "x[i, j]" if op != "cumprod" else "1.0 + 0.001 * x[i, j]"
        if rng.random() < 0.3:
            e = f"{e} * w[j]"
        n = rng.randint(1_000_000, 8_000_000)
        N = rng.choice((rng.randint(65, 600), rng.randint(600, 3000)))
        text = f"func s{k}(x: {t}[M, N], w: {t}[N]) -> (y: {t}[M, N]) {{\n  y[i, j] = {op}({e}, j{flags})\n}}\n"
        name = f"{k} {t} {op}{flags.replace(', ', ' ')} e={'w' if 'w[' in e else '-'}"
        out.append((name, text, {"M": max(1, n // N), "N": N}))
    return out


def main(seed: int, count: int) -> None:
    from gir.codegen.mlu.report import compulsory_bytes
    from gir.parser import parse_text
    from gir.targets.mlu.run import run_func
    for name, text, sizes in configs(seed, count):
        f = parse_text(text).funcs[0]
        r = run_func(f, None, sizes, values=False)
        ratio = r.stats["seconds"] / (compulsory_bytes(f, sizes) / 307e9)
        print(f"{name} M={sizes['M']} N={sizes['N']} ratio {ratio:.3f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
