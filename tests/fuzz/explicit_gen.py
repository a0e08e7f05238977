"""Seeded random small explicit kernels (with an operator-layer reference for each).

The parameters are drawn so that many kernels are valid and some are not (vector widths that do not
divide, missing masks on tails, missing barriers, lane extents other than 32): valid ones must check,
compile and run on the simulator to the reference's numbers; invalid ones must fail with located
diagnostics.
"""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass
class Generated:
    kernel: str         # explicit-layer program
    reference: str      # operator-layer program computing the same results
    sizes: str          # --sizes for run
    what: str           # a one-line description (template + parameters)


def elementwise(rng: random.Random) -> Generated:
    dt = rng.choice(["f32", "f32", "f16"])
    T = rng.choice([1, 7, 32, 64, 128])
    V = rng.choice([1, 2, 4, 8])
    W = rng.choice([1, 2, 4, 8, 3])
    mask = rng.random() < 0.8
    op = rng.choice(["+", "-", "*"])
    N = rng.choice([1, 5, 33, 100, T * V, 3 * T * V])
    fixed = rng.random() < 0.3
    dim = str(N) if fixed else "N"
    base = f"blk * {T * V} + t * {V}"
    m = ", mask, other=0.0" if mask else ""
    sm = ", mask" if mask else ""
    kernel = f"""func ew(a: {dt}[{dim}], b: {dt}[{dim}]) -> (c: {dt}[{dim}]) {{
  kernel ew {{
    parallel blk in 0..cdiv({dim}, {T * V}) @block {{
      parallel t in 0..{T} @thread {{
        alloc ra: {dt}[{V}] @reg
        alloc rb: {dt}[{V}] @reg
        load ra[0:{V}] <- a[{base}:{base} + {V}] with vec={W}{m}
        load rb[0:{V}] <- b[{base}:{base} + {V}] with vec={W}{m}
        ra[0:{V}] = ra[0:{V}] {op} rb[0:{V}]
        store c[{base}:{base} + {V}] <- ra[0:{V}] with vec={W}{sm}
      }}
    }}
  }}
}}
"""
    reference = f"""func ew(a: {dt}[{dim}], b: {dt}[{dim}]) -> (c: {dt}[{dim}]) {{
  c[i] = a[i] {op} b[i]
}}
"""
    return Generated(kernel, reference, "" if fixed else f"N={N}",
                     f"elementwise dt={dt} T={T} V={V} vec={W} mask={mask} op={op} N={N} fixed={fixed}")


def rowreduce(rng: random.Random) -> Generated:
    dt = rng.choice(["f32", "f32", "f16"])
    lanes = rng.choice([32, 32, 32, 16])
    V = rng.choice([1, 2, 4])
    W = rng.choice([1, 2, 4, 8])
    red = rng.choice(["sum", "max"])
    K = lanes * V
    M = rng.choice([1, 3, 17])
    kernel = f"""func rr(x: {dt}[M, {K}]) -> (y: {dt}[M]) {{
  kernel rr {{
    parallel b in 0..M @block {{
      parallel w in 0..1 @warp {{
        parallel l in 0..{lanes} @lane {{
          alloc xr: {dt}[{V}] @reg
          alloc s: {dt}[1] @reg
          load xr[0:{V}] <- x[b, l * {V}:l * {V} + {V}] with vec={W}
          s[0:1] = {red}(xr[0:{V}])
          allreduce {red} s[0:1] over l
          if l == 0 {{
            store y[b:b + 1] <- s[0:1]
          }}
        }}
      }}
    }}
  }}
}}
"""
    reference = f"""func rr(x: {dt}[M, {K}]) -> (y: {dt}[M]) {{
  y[i] = {red}(x[i, j])
}}
"""
    return Generated(kernel, reference, f"M={M}", f"rowreduce dt={dt} lanes={lanes} V={V} vec={W} red={red} M={M}")


def reverse_shared(rng: random.Random) -> Generated:
    """Stage a block of T elements in shared memory, then each thread stores its mirror element."""
    T = rng.choice([4, 32, 64, 128])
    sync = rng.random() < 0.8
    M = rng.choice([1, 2, 5])
    barrier = "        sync @block\n" if sync else ""
    kernel = f"""func rev(x: f32[M, {T}]) -> (y: f32[M, {T}]) {{
  kernel rev {{
    parallel b in 0..M @block {{
      alloc sh: f32[{T}] @shared
      parallel t in 0..{T} @thread {{
        alloc r: f32[1] @reg
        load sh[t:t + 1] <- x[b, t:t + 1]
{barrier}        copy r[0:1] <- sh[{T - 1} - t:{T} - t]
        store y[b, t:t + 1] <- r[0:1]
      }}
    }}
  }}
}}
"""
    reference = f"""func rev(x: f32[M, {T}]) -> (y: f32[M, {T}]) {{
  y[i, j] = x[i, {T - 1} - j]
}}
"""
    return Generated(kernel, reference, f"M={M}", f"reverse_shared T={T} sync={sync} M={M}")


TEMPLATES = [elementwise, elementwise, rowreduce, reverse_shared]


def generate(seed: int) -> Generated:
    rng = random.Random(seed)
    return rng.choice(TEMPLATES)(rng)
