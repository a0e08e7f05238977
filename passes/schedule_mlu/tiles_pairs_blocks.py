"""The block size of a pair map (tiles_pairs.py, RoPE): how many values of the blocked axis one pipelined tile
holds.

Larger blocks pay fewer DMA latencies (each DMA waits 500 cycles on its core's IO pipe; a block of rope_flat moves
four), but cut a batch's rows into coarser parts (48 batches of 64 rows: one block of 36 rows and a tail each,
1.69x the DMA roofline; blocks of 32 rows 1.31x). The first guess is about 128 KiB of x rows; when it does not
fit NRAM it shrinks to the largest block that does (NRAM grows about linearly with the block: scaled by the
budget over the bytes, then down by one). Candidates at or below that block -- its halvings down to a quarter,
the first guess's halvings (the blocks of the rule before this one), and the blocks cutting the rows about
evenly into as many blocks or up to three more -- are ranked by the MLU cost model, among those estimated
within 15% of the fastest, that keep at least nine tenths of the cores the best-spread of those keeps busy: the
model times the busiest core as if every core moved in step and misses the latencies cores out of step hide
behind each other's transfers (20 batches of 128 rows: blocks of 32 rows, one part on each of 20 cores,
estimated 47.9 us against 50.6 for blocks of 16 on all 32 cores; simulated 45.4 and 41.9). Beyond 15% the
estimate stands (7 batches of 256 x 7 rows: blocks of one row keep all 32 cores busy, estimated 105.6 us against
49.7 for blocks of 16 on 28 cores; simulated 2.87x and 1.69x the roofline).
"""
from __future__ import annotations

from gir.passes.schedule_mlu.tiles import NotTile

NEAR = 1.15   # candidates estimated within this factor of the fastest count as near it (the model's blind spot)


def choose_block(vb: int, sb: int, build, budget: int):
    """The scheduled function of the chosen block: `build(sb) -> (function, NRAM bytes)` builds one
    (tiles_pairs._kernel); `vb` values of the blocked axis, `sb` the first guess."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    first = sb
    items, used = build(sb)
    for _ in range(8):
        if used <= budget or sb == 1:
            break
        sb = max(1, min(sb - 1, sb * budget // used))
        items, used = build(sb)
    if used > budget:
        raise NotTile("a pair tile does not fit NRAM")
    cands = [(sb, items, estimate(items))]
    for alt in sorted(block_candidates(vb, sb, first), reverse=True):
        f, u = build(alt)
        if u <= budget:
            cands.append((alt, f, estimate(f)))
    fastest = min(c[2].seconds for c in cands)
    near = [c for c in cands if c[2].seconds <= NEAR * fastest]
    spread = max(_busy(c[2]) for c in near)
    near = [c for c in near if 10 * _busy(c[2]) >= 9 * spread]
    return order(near, lambda c: c[2].seconds, MLU_RANKING)[0][1]


def _busy(est) -> int:
    """Cores a pair kernel's estimate keeps busy."""
    return min(k.busy_tasks for k in est.kernels)


def block_candidates(vb: int, sb: int, first: int) -> set:
    """Blocks smaller than the largest `sb` that fits, for the cost model to rank: its halvings (down to a
    quarter), the halvings of the first guess `first` below `sb` (six at most), and the blocks that cut the `vb`
    values about evenly into as many blocks as `sb` does or up to three more."""
    n = -(-vb // sb)
    out = {sb // 2, sb // 4} | {-(-vb // m) for m in range(n, n + 4)}
    out = {b for b in out if 4 * b >= sb}
    out |= {first >> k for k in range(7)}
    return {b for b in out if 1 <= b < sb}
