"""Seeded random programs with scans (docs/gir.md, "Scans") for the differential test: one to three scans along
any axis with any op and flags, operands computed from the input and a weight broadcast over any axes, sibling
scans (the same axis, sharing the input), a scan of a scan, consumers (element-wise, a reduction) after them,
f32 / f16 / bf16 / i32, sizes 1 / primes / non-multiples of 32 and long rows (the MLU's long scans).
`python3 tests/differential/scanprog.py FIRST COUNT [TARGETS]` prints a failure census (sim and mlu-sim vs the
evaluator by default; TARGETS as diffrun.py's, e.g. cuda on a real GPU)."""
from __future__ import annotations

import math
import random
import sys

OPS = ("cumsum", "cumprod", "cummax", "cummin")
EXTENTS = (1, 2, 3, 7, 31, 33, 64, 97, 130, 257, 1031)
LONG = (4096, 5003, 9001, 20011)
MAX_ELEMENTS = 24000


def _sizes(rng: random.Random, dims: str) -> dict[str, int]:
    sizes = {d: rng.choice(EXTENTS) for d in dims}
    if len(dims) <= 2 and rng.random() < 0.3:     # a long row over few rows
        sizes[dims[-1]] = rng.choice(LONG)
        if len(dims) == 2:
            sizes[dims[0]] = rng.choice((1, 2, 3))
    while math.prod(sizes.values()) > MAX_ELEMENTS:
        big = max(sizes, key=sizes.get)
        sizes[big] = max(1, sizes[big] // 3)
    return sizes


def _operand(rng: random.Random, op: str, x: str, w: str | None, integer: bool, prev: str | None) -> str:
    if prev is not None and rng.random() < 0.5:
        base = prev
    else:
        forms = [x] + ([f"{x} * {w}", f"{x} + {w}", f"{w} - {x}"] if w else [])
        if not integer:
            forms += [f"exp(0.1 * {x})", f"f32({x}) * 0.5"]
        base = rng.choice(forms)
    if op == "cumprod":
        # (a product of 20,000 factors 1 + 0.01 v with v ~ 1 would leave the f32 range: 1.0005^20000 ~ e^10)
        return f"select({base} > 0, 1, -1)" if integer else f"1.0 + 0.0005 * ({base})"
    return base


def program(seed: int) -> tuple[str, dict[str, int]]:
    rng = random.Random(seed)
    rank = rng.choice((1, 1, 2, 2, 2, 3))
    dims = "ABC"[:rank]
    sizes = _sizes(rng, dims)
    dt = rng.choice(("f32", "f32", "f16", "bf16", "i32"))
    integer = dt == "i32"
    out_t = "i32" if integer else rng.choice(("f32", "f32", dt))
    w_dims = [d for d in dims if rng.random() < 0.5]
    params = [f"x: {dt}[{', '.join(dims)}]"] + ([f"w: {dt}[{', '.join(w_dims)}]"] if w_dims else [])
    axis = rng.randrange(rank)
    stmts, results, prev = [], [], None
    for k in range(rng.choice((1, 2, 2, 3))):
        names = [f"{d.lower()}{k}" for d in dims]
        idx = ", ".join(names)
        x = f"x[{idx}]"
        w = f"w[{', '.join(n for d, n in zip(dims, names) if d in w_dims)}]" if w_dims else None
        if k and rng.random() < 0.4:
            axis = rng.randrange(rank)
        op = rng.choice(OPS)
        chained = f"f32(y{k - 1}[{idx}])" if prev is not None and not integer else \
            (f"y{k - 1}[{idx}]" if prev is not None else None)
        arg = _operand(rng, op, x, w, integer, chained)
        flags = (", exclusive=1" if rng.random() < 0.4 else "") + (", reverse=1" if rng.random() < 0.5 else "")
        stmts.append(f"  y{k}[{idx}] = {op}({arg}, {names[axis]}{flags})")
        results.append(f"y{k}: {out_t}[{', '.join(dims)}]")
        prev = f"y{k}"
    # consumers compute on the scans' results: not of i32 ones (an exclusive cummax/cummin starts from the
    # integer type's extreme, which the MLU's f32 arithmetic does not represent: a known gap, docs/mlu.md)
    if rng.random() < 0.4 and not integer:
        names = [f"{d.lower()}9" for d in dims]
        idx = ", ".join(names)
        if rank > 1 and rng.random() < 0.5:
            keep = ", ".join(names[:-1])
            stmts.append(f"  r[{keep}] = sum(y0[{idx}])")
            results.append(f"r: {out_t}[{', '.join(dims[:-1])}]")
        else:
            stmts.append(f"  z[{idx}] = f32(y0[{idx}]) * 0.5 + f32(x[{idx}])")
            results.append(f"z: f32[{', '.join(dims)}]")
    text = (f"func scans{seed}({', '.join(params)}) -> ({', '.join(results)}) {{\n" + "\n".join(stmts) + "\n}\n")
    return text, sizes


def main(first: int, count: int, targets=("sim", "mlu-sim")) -> None:
    import collections
    from diffrun import check_text
    census, bad = collections.Counter(), 0
    for seed in range(first, first + count):
        text, sizes = program(seed)
        problems = check_text(text, sizes, seed, f"<scans {seed}>", targets)
        if problems:
            bad += 1
            print(f"--- seed {seed} {sizes}\n{text}" + "".join(f"  {k}: {v}\n" for k, v in problems.items()),
                  flush=True)
            for k, v in problems.items():
                census[(k, v[:70])] += 1
    print(f"{bad} of {count} programs fail")
    for (k, v), n in census.most_common():
        print(f"{n:5d}  {k}: {v}")


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from diffrun import targets_arg
    main(int(sys.argv[1]), int(sys.argv[2]), targets_arg(sys.argv))
