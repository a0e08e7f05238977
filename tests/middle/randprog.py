"""Seeded random operator-layer programs of the classes the middle must handle: element-wise chains with
broadcasts over any axes, reductions over random axes (alone, or as statistics that normalise their input, one
or two phases), and permutations followed by element-wise work.

`program(seed)` -> (GIR text, sizes for a correctness run, sizes of about 4M elements for the traffic bound);
tensors are f32, f16 or bf16 (arithmetic in f32, results rounded once).
"""
from __future__ import annotations

import random

AXES = "abcd"
DIMS = "ABCD"
UNARY = ["exp", "tanh", "sigmoid", "abs"]


def _dims(rank: int) -> str:
    return ", ".join(DIMS[:rank])


def _idx(axes) -> str:
    return ", ".join(axes)


def _small_sizes(rng: random.Random, rank: int) -> dict[str, int]:
    return {DIMS[k]: rng.choice([1, 2, 3, 5, 7, 13, 33]) for k in range(rank)}


def _big_sizes(rng: random.Random, rank: int, team_cap: tuple = (), total: int = 1 << 22) -> dict[str, int]:
    """Sizes whose product is about `total` (each at least 4, the innermost at least 32; powers of two and a few
    odd ones). `team_cap`:
    (axes, n) - the product of these axes' extents stays at most n (the data of one team fits on chip: a
    statistic over more elements than a block can hold must re-read its input, whatever the schedule)."""
    capped = set(team_cap[0]) if team_cap else set()
    big = [16, 32, 64, 96, 128, 256, 512, 1024, 2048, 4096, 16384, 65536]
    while True:
        dims = [rng.choice([4, 8, 16, 32, 64, 128] if k in capped else big) for k in range(rank)]
        dims[-1] = max(dims[-1], 32)  # the innermost extent fills a warp's lanes (see docs/scheduling.md, Limits)
        n = 1
        for d in dims:
            n *= d
        team = 1
        for k in (team_cap[0] if team_cap else ()):
            team *= dims[k]
        if total <= n <= 4 * total and (not team_cap or team <= team_cap[1]):
            return {DIMS[k]: d for k, d in enumerate(dims)}


def program(seed: int) -> tuple[str, dict[str, int], dict[str, int]]:
    rng = random.Random(seed)
    dtype = rng.choice(["f32", "f32", "f16", "bf16"])
    text, small, big = _program(rng, seed)
    return text.replace("f32[", f"{dtype}["), small, big


def _program(rng: random.Random, seed: int) -> tuple[str, dict[str, int], dict[str, int]]:
    rank = rng.choice([2, 3, 3, 4])
    kind = rng.choice(["elementwise", "normalise", "normalise", "reduce", "permute"])
    cap: tuple = ()
    axes = list(AXES[:rank])
    params = [f"x: f32[{_dims(rank)}]"]
    body: list[str] = []
    results = [f"y: f32[{_dims(rank)}]"]
    full = _idx(axes)
    if kind == "elementwise":
        expr = f"x[{full}]"
        for k in range(rng.choice([1, 2])):
            sub = sorted(rng.sample(range(rank), rng.randint(1, rank - 1)))
            name = f"wt{k}"
            params.append(f"{name}: f32[{', '.join(DIMS[i] for i in sub)}]")
            op = rng.choice(["*", "+", "-"])
            expr = f"({expr}) {op} {name}[{', '.join(axes[i] for i in sub)}]"
        body.append(f"tv[{full}] = {rng.choice(UNARY)}({expr})")
        body.append(f"y[{full}] = tv[{full}] * 0.5 + x[{full}]")
    elif kind in ("normalise", "reduce"):
        red = sorted(rng.sample(range(rank), rng.randint(1, rank - 1)))
        kept = [axes[i] for i in range(rank) if i not in red]
        if kind == "normalise":
            cap = (red, 2048)
        kidx = _idx(kept)
        op = rng.choice(["max", "sum", "mean"])
        if kind == "reduce":
            results = [f"y: f32[{', '.join(DIMS[i] for i in range(rank) if i not in red)}]"]
            body.append(f"y[{kidx}] = {op}(x[{full}] * 2.0)")
        elif rng.random() < 0.5:  # softmax over the reduced axes (two phases)
            body += [f"mx[{kidx}] = max(x[{full}])", f"ex[{full}] = exp(x[{full}] - mx[{kidx}])",
                     f"sx[{kidx}] = sum(ex[{full}])", f"y[{full}] = ex[{full}] / sx[{kidx}]"]
        else:  # centre by the statistic, scale by a second one
            body += [f"st[{kidx}] = {op}(x[{full}])", f"dv[{full}] = x[{full}] - st[{kidx}]",
                     f"vr[{kidx}] = mean(dv[{full}] * dv[{full}])",
                     f"y[{full}] = dv[{full}] * rsqrt(vr[{kidx}] + 1e-5)"]
    else:  # permute
        perm = axes[:]
        while perm == axes:
            rng.shuffle(perm)
        results = [f"y: f32[{', '.join(DIMS[axes.index(p)] for p in perm)}]"]
        body.append(f"y[{_idx(perm)}] = {rng.choice(UNARY)}(x[{full}]) * 2.0")
    text = f"func rand{seed}({', '.join(params)}) -> ({', '.join(results)}) {{\n"
    text += "".join(f"  {line}\n" for line in body) + "}\n"
    return text, _small_sizes(rng, rank), _big_sizes(rng, rank, cap)
