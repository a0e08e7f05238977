"""Seeded text mutations of GIR sources: token edits that aim at the parser, verifier and later passes."""
from __future__ import annotations

import random
import re

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\.|->|<-|//|[<>=!]=|\S")
DTYPES = ["f32", "f16", "bf16", "i32", "i64", "bool", "f64", "u8"]
LEVELS = ["global", "shared", "reg", "gdram", "sram", "nram", "wram", "local"]
PARLEVELS = ["block", "warp", "lane", "thread", "cluster", "core", "grid"]
NUMBERS = ["0", "-1", "1", "2", "3", "7", "31", "32", "33", "1024", "65536", str(2**31), str(2**40), "1.5", "1e40"]
VEC = ["0", "1", "2", "3", "4", "8", "16", "32", "-4"]
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
NUM = re.compile(r"\d")


def tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of every token outside comments."""
    out = []
    code = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text)
    for m in TOKEN.finditer(code):
        out.append((m.start(), m.end(), m.group()))
    return out


def _replace(text: str, tok, new: str) -> str:
    return text[:tok[0]] + new + text[tok[1]:]


def _pick(rng, toks, pred):
    cands = [t for t in toks if pred(t[2])]
    return rng.choice(cands) if cands else None


def m_delete(rng, text, toks):
    t = rng.choice(toks)
    return _replace(text, t, "")


def m_duplicate(rng, text, toks):
    t = rng.choice(toks)
    return _replace(text, t, t[2] + " " + t[2])


def m_swap(rng, text, toks):
    k = rng.randrange(len(toks) - 1)
    a, b = toks[k], toks[k + 1]
    return text[:a[0]] + b[2] + text[a[1]:b[0]] + a[2] + text[b[1]:]


def m_number(rng, text, toks):
    t = _pick(rng, toks, lambda s: NUM.match(s))
    return _replace(text, t, rng.choice(NUMBERS)) if t else None


def m_rename(rng, text, toks):
    t = _pick(rng, toks, lambda s: IDENT.match(s))
    if t is None:
        return None
    idents = sorted({s for _, _, s in toks if IDENT.match(s)})
    new = rng.choice(idents + ["zz", "M", "N", "i", "j", "b", "x", "y", "exp", "max", "sum", "func", "kernel"])
    if rng.random() < 0.5:  # rename every occurrence (a consistent rename)
        return re.sub(rf"\b{re.escape(t[2])}\b", new, text)
    return _replace(text, t, new)


def m_dtype(rng, text, toks):
    t = _pick(rng, toks, lambda s: s in DTYPES)
    return _replace(text, t, rng.choice(DTYPES)) if t else None


def m_level(rng, text, toks):
    cands = [k for k, t in enumerate(toks[:-1]) if t[2] == "@"]
    if not cands:
        return None
    t = toks[rng.choice(cands) + 1]
    return _replace(text, t, rng.choice(LEVELS + PARLEVELS))


def m_brace(rng, text, toks):
    t = _pick(rng, toks, lambda s: s in "{}[]()")
    return _replace(text, t, "") if t else None


def m_index_swap(rng, text, toks):
    spans = [m for m in re.finditer(r"\[([^\[\]]*),([^\[\]]*)\]", text)]
    if not spans:
        return None
    m = rng.choice(spans)
    return text[:m.start()] + f"[{m.group(2).strip()}, {m.group(1).strip()}]" + text[m.end():]


def m_slice(rng, text, toks):
    spans = [m for m in re.finditer(r"([\w+*() -]+):([\w+*() -]+)(?=[,\]])", text)]
    if not spans:
        return None
    m = rng.choice(spans)
    lo, hi = m.group(1).strip(), m.group(2).strip()
    new = rng.choice([f"{hi}:{lo}", f"{lo}:{lo}", f"{lo}:{hi} + 1", f"{lo} - 1:{hi}", f"{lo}:{hi}:2",
                      f"{lo} + 1:{hi}", f"0:{hi}", f"{lo}:{hi} * 2"])
    return text[:m.start()] + " " + new + text[m.end():]


def m_vec(rng, text, toks):
    spans = list(re.finditer(r"vec\s*=\s*(-?\d+)", text))
    if not spans:
        return None
    m = rng.choice(spans)
    return text[:m.start(1)] + rng.choice(VEC) + text[m.end(1):]


def m_line(rng, text, toks):
    """Delete, duplicate or swap whole lines."""
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return None
    k = rng.randrange(len(lines))
    op = rng.randrange(3)
    if op == 0:
        del lines[k]
    elif op == 1:
        lines.insert(k, lines[k])
    else:
        j = rng.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
    return "".join(lines)


MUTATORS = [m_delete, m_duplicate, m_swap, m_number, m_number, m_rename, m_dtype, m_level, m_level, m_brace,
            m_index_swap, m_slice, m_slice, m_vec, m_vec, m_line]


# mutations that usually keep the text parseable, so that later passes see the damage
SEMANTIC = [m_number, m_number, m_dtype, m_level, m_level, m_index_swap, m_slice, m_slice, m_vec, m_vec]


def mutate(text: str, rng: random.Random, rounds: int | None = None, semantic: bool = False) -> str:
    rounds = rounds or rng.choice([1, 1, 1, 2, 3])
    pool = SEMANTIC if semantic else MUTATORS
    for _ in range(rounds):
        toks = tokens(text)
        if len(toks) < 2:
            break
        for _attempt in range(5):
            new = rng.choice(pool)(rng, text, toks)
            if new is not None and new != text:
                text = new
                break
    return text


SIZE_VALUES = [1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33]
BAD_SIZE_VALUES = ["0", "-1", str(2**40), "x", ""]


def sizes_arg(symbols: list[str], rng: random.Random, bad_rate: float = 0.1) -> str:
    """A --sizes value binding `symbols` to small sizes, occasionally malformed/huge/missing/unknown."""
    parts = [f"{s}={rng.choice(SIZE_VALUES)}" for s in symbols]
    if rng.random() < bad_rate:
        op = rng.randrange(4)
        if op == 0 and parts:
            k = rng.randrange(len(parts))
            parts[k] = parts[k].split("=")[0] + "=" + rng.choice(BAD_SIZE_VALUES)
        elif op == 1 and parts:
            parts.pop(rng.randrange(len(parts)))
        elif op == 2:
            parts.append("Q=3")
        else:
            parts.append(rng.choice(["=3", "M", "M=3=4", ",", "M=2"]))
    return ",".join(parts)
