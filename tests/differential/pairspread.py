"""Seeded spread of pair maps (samples/rope.gir, samples/rope_flat.gir) at 1M-8M elements, f32 and f16: the
simulated time over the DMA roofline of each on mlu-sim (timing-only), one line per configuration, to compare the
MLU pair recipe's choices between two trees (passes/schedule_mlu/tiles_pairs_blocks.py; docs/mlu.md "Pair-map
blocks"). `python3 tests/differential/pairspread.py SEED COUNT` (the docs' figures: SEED 7, COUNT 20)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def configs(seed: int, count: int) -> list:
    """[(sample, dtype, sizes)]: rope_flat with K in 16..2099, rope with K in 16..299, H in 1..32, B in 1..7,
    S filling a drawn element count."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        name = ("rope", "rope_flat")[i % 2]
        dtype = ("f32", "f16")[(i // 2) % 2]
        target = rng.uniform(1e6, 8e6)
        if name == "rope_flat":
            K = int(rng.integers(16, 2100))
            out.append((name, dtype, dict(S=max(1, int(target / (2 * K))), D=2 * K, K=K)))
        else:
            K, H, B = int(rng.integers(16, 300)), int(rng.integers(1, 33)), int(rng.integers(1, 8))
            out.append((name, dtype, dict(B=B, S=max(1, int(target / (2 * K * H * B))), H=H, K=K)))
    return out


def main(argv: list[str]) -> None:
    from gir.codegen.mlu.report import compulsory_bytes
    from gir.parser import parse_text
    from gir.targets.mlu.run import run_func
    from gir.views import complete_sizes
    for name, dtype, sizes in configs(int(argv[1]), int(argv[2])):
        text = re.sub(r"\bf32\b", dtype, (ROOT / "samples" / f"{name}.gir").read_text())
        f = parse_text(text, f"{name}.gir").funcs[0]
        full = complete_sizes(f, sizes)
        r = run_func(f, None, full, values=False)
        ratio = r.stats["seconds"] / (compulsory_bytes(f, full) / 307e9)
        print(f"{name:9s} {dtype} {str(sizes):44s} {ratio:7.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv)
