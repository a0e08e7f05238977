"""Seeded random valid operator-layer GIR programs for the differential test (evaluator vs sim vs mlu-sim).

`program(seed)` -> (GIR text, sizes). Each program has one to four statements over tensors of rank 1 to 4:
element-wise chains, operands broadcast over any subset of the axes, reductions (sum / mean / max / min) over any
non-empty subset of the axes (leading, middle, trailing or all of them), statistics that then normalise their
input, casts to f16 / bf16 / f32 inside expressions, f32 / f16 / bf16 tensors, inputs the program never reads,
and index variables used as values. Sizes are 1, small primes and non-multiples of 32, kept small (a few thousand
elements at most) so that hundreds of programs run in a few minutes on the simulators.
"""
from __future__ import annotations

import random

AXES = "abcd"
DIMS = "ABCD"
DTYPES = ["f32", "f32", "f16", "bf16"]
UNARY = ["exp", "tanh", "sigmoid", "abs", "neg"]
SIZES = [1, 2, 3, 5, 7, 13, 31, 37, 67]
MAX_ELEMENTS = 4096


def _sizes(rng: random.Random, rank: int) -> dict[str, int]:
    while True:
        sizes = {DIMS[k]: rng.choice(SIZES) for k in range(rank)}
        n = 1
        for v in sizes.values():
            n *= v
        if n <= MAX_ELEMENTS:
            return sizes


class _Builder:
    def __init__(self, rng: random.Random, rank: int):
        self.rng, self.rank = rng, rank
        self.params: list[str] = []
        self.values: dict[str, tuple] = {}     # name -> axes positions it is indexed by (tensors readable)

    def param(self, name: str, axes: tuple, dtype: str) -> None:
        self.params.append(f"{name}: {dtype}[{', '.join(DIMS[k] for k in axes)}]")
        self.values[name] = axes

    def ref(self, name: str, names=AXES) -> str:
        return f"{name}[{', '.join(names[k] for k in self.values[name])}]"

    def leaf(self, over: tuple) -> str:
        """A value readable inside a statement whose index axes are `over`."""
        rng = self.rng
        usable = [n for n, ax in self.values.items() if set(ax) <= set(over)]
        r = rng.random()
        if r < 0.12:
            return rng.choice(["0.5", "3.3", "2.0", "1.25"])
        if r < 0.2 and over:   # an index variable used as a value (int arithmetic, then promoted)
            k = rng.choice(over)
            return rng.choice([f"{AXES[k]}", f"({AXES[k]} * {AXES[k]} - {DIMS[k]})", f"f32({AXES[k]})"])
        return self.ref(rng.choice(usable))

    def expr(self, over: tuple, depth: int) -> str:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self.leaf(over)
        r = rng.random()
        if r < 0.25:
            return f"{rng.choice(UNARY)}({self.expr(over, depth - 1)})" if rng.random() < 0.8 \
                else f"-({self.expr(over, depth - 1)})"
        if r < 0.37:   # a cast inside the expression
            return f"{rng.choice(['f16', 'bf16', 'f32'])}({self.expr(over, depth - 1)})"
        op = rng.choice(["+", "-", "*", "*", "max", "min"])
        a, b = self.expr(over, depth - 1), self.expr(over, depth - 1)
        return f"{op}({a}, {b})" if op in ("max", "min") else f"({a} {op} {b})"


NESTED = "efgh"   # variables of a reduction nested inside another one (over the same axes)


def _index_value(rng: random.Random, axes: tuple) -> str:
    """An integer expression of the index variables `axes` (maybe negative: floored // and % matter)."""
    k = rng.choice(axes)
    a, n = AXES[k], DIMS[k]
    if len(axes) > 1 and rng.random() < 0.3:   # a flat position over two axes
        k2 = rng.choice([x for x in axes if x != k])
        return f"{a} * {DIMS[k2]} + {AXES[k2]}"
    return rng.choice([a, a, f"{n} - 1 - {a}", f"({a} - 2 * {n} // 3) // 3", f"({a} * 5 - {n}) % 4",
                       f"{a} * {a} - {n}"])


def _index_program(seed: int, rng: random.Random) -> tuple[str, dict[str, int]]:
    """A program with an integer-valued result (see the module docstring)."""
    rank = rng.choice([1, 2, 2, 3])
    full = tuple(range(rank))
    b = _Builder(rng, rank)
    b.param("x", full, rng.choice(DTYPES))
    if rank > 1 and rng.random() < 0.5:
        b.param("w0", tuple(sorted(rng.sample(range(rank), rng.randint(1, rank - 1)))), rng.choice(DTYPES))
    xr = b.ref("x")
    red = tuple(sorted(rng.sample(range(rank), rng.randint(1, rank))))
    kept = tuple(k for k in full if k not in red)
    form = rng.choice(["select_reduce", "select_reduce", "select_reduce", "elementwise", "cast_extreme", "arg"])
    if form == "elementwise":
        red, kept = (), full
    elif form == "arg":   # a position along one index
        red = (rng.choice(full),)
        kept = tuple(k for k in full if k not in red)
    cmp = rng.choice(["==", "<=", ">", "!="])
    nested = form == "select_reduce" and rng.random() < 0.7
    if nested:   # the condition holds a reduction over the same axes
        names = "".join(NESTED[k] if k in red else AXES[k] for k in range(len(AXES)))
        cond = f"{xr} {cmp} {rng.choice(['max', 'min', 'sum'])}({b.ref('x', names)})"
    else:
        cond = f"{xr} {cmp} {b.expr(full, 1)}" if rng.random() < 0.7 else f"{xr} > 0.25"
    if form == "select_reduce":
        other = rng.choice([DIMS[red[0]], "0 - 1", _index_value(rng, full)])
        value = f"{rng.choice(['min', 'min', 'max', 'sum'])}(select({cond}, {_index_value(rng, red)}, {other}))"
    elif form == "elementwise":
        value = f"select({cond}, {_index_value(rng, full)}, {_index_value(rng, full)})"
    elif form == "cast_extreme":
        value = f"{rng.choice(['max', 'min'])}(i32({xr} * {rng.choice(['4.0', '9.5', '-3.0'])}))"
    else:
        value = f"{rng.choice(['argmax', 'argmin'])}({xr}{rng.choice(['', ' * ' + b.expr(full, 1)])})"
    ydt = rng.choice(["i32", "i32", "i32", "f32"])
    out = ", ".join(AXES[k] for k in kept)
    text = (f"func rand{seed}({', '.join(b.params)}) -> (y: {ydt}[{', '.join(DIMS[k] for k in kept)}]) {{\n"
            f"  y[{out}] = {value}\n}}\n")
    while True:   # a nested reduction is quadratic in scalar kernels: few reduced elements keep runs short
        sizes = _sizes(rng, rank)
        count = 1
        for k in red:
            count *= sizes[DIMS[k]]
        if not nested or count <= 67:
            return text, sizes


def program(seed: int) -> tuple[str, dict[str, int]]:
    pick = random.Random(seed * 7919 + 1)   # its own stream: the other programs of a seed stay as they were
    if pick.random() < 0.16:
        return _index_program(seed, random.Random(seed))
    rng = random.Random(seed)
    rank = rng.choice([1, 2, 2, 3, 3, 4])
    full = tuple(range(rank))
    b = _Builder(rng, rank)
    b.param("x", full, rng.choice(DTYPES))
    for k in range(rng.choice([0, 1, 1, 2])):   # broadcast operands over any subset of the axes
        sub = tuple(sorted(rng.sample(range(rank), rng.randint(0, rank - 1)))) if rank > 1 else ()
        b.param(f"w{k}", sub, rng.choice(DTYPES))
    if rng.random() < 0.2:   # an input the program never reads
        b.param("u", tuple(sorted(rng.sample(range(rank), rng.randint(1, rank)))), rng.choice(DTYPES))
        unused = "u"
    else:
        unused = None
    readable = {n: ax for n, ax in b.values.items() if n != unused}
    b.values = readable
    body: list[str] = []
    kind = rng.choice(["elementwise", "reduce", "normalise", "normalise"])
    out_axes = full
    if kind == "elementwise":
        for k in range(rng.choice([1, 2])):
            base = b.ref(f"t{k - 1}" if k else "x")   # every statement reads a full-rank tensor (gives its axes ranges)
            e = b.expr(full, 3)
            body.append(f"t{k}[{', '.join(AXES[i] for i in full)}] = "
                        + (f"{rng.choice(UNARY[:3])}({base} {rng.choice(['+', '*', '-'])} {e})" if rng.random() < 0.3
                           else f"{base} {rng.choice(['+', '*', '-'])} {e}"))
            b.values[f"t{k}"] = full
        last = f"t{len(body) - 1}"
    else:
        red = tuple(sorted(rng.sample(range(rank), rng.randint(1, rank))))
        kept = tuple(k for k in full if k not in red)
        op = rng.choice(["sum", "mean", "max", "min"])
        arg = f"{b.ref('x')} {rng.choice(['+', '*', '-'])} {b.expr(full, 2)}" if rng.random() < 0.7 else b.ref("x")
        body.append(f"s[{', '.join(AXES[k] for k in kept)}] = {op}({arg})")
        b.values["s"] = kept
        if kind == "reduce":
            out_axes, last = kept, "s"
        else:
            centre = f"({b.ref('x')} - {b.ref('s')})"
            body.append(f"t0[{', '.join(AXES[i] for i in full)}] = {centre} * {b.expr(full, 1)}")
            b.values["t0"] = full
            last = "t0"
    ydt = rng.choice(DTYPES)
    body.append(f"y[{', '.join(AXES[k] for k in out_axes)}] = {b.ref(last)}")
    if body[-2].startswith(f"{last}[") and last != "s" and rng.random() < 0.5:
        # fold the last value straight into the result (no intermediate)
        body = body[:-2] + ["y" + body[-2][len(last):]]
    results = f"y: {ydt}[{', '.join(DIMS[k] for k in out_axes)}]"
    text = f"func rand{seed}({', '.join(b.params)}) -> ({results}) {{\n"
    text += "".join(f"  {line}\n" for line in body) + "}\n"
    return text, _sizes(rng, rank)
