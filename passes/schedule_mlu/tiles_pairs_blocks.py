"""The block size of a pair map (tiles_pairs.py, RoPE): how many values of the blocked axis one pipelined tile
holds.

Larger blocks pay fewer DMA latencies (each DMA waits 500 cycles on its core's IO pipe; a block of rope_flat moves
four), but cut a batch's rows into coarser parts (48 batches of 64 rows: one block of 36 rows and a tail each,
1.69x the DMA roofline; blocks of 32 rows 1.31x). So the largest block that fits NRAM is built first (NRAM grows
about linearly with the block: the first guess scales it by the budget over the bytes, then down by one), and
smaller ones -- its halvings down to a quarter, and the blocks that cut the rows evenly into as many blocks or up
to three more -- are ranked against it by the MLU cost model, among the candidates that keep at least nine
tenths of the cores the best-spread one keeps busy: the model times the busiest core as if every core moved in
step and misses the latencies cores out of step hide behind each other's transfers (20 batches of 128 rows:
blocks of 32 rows, one part on each of 20 cores, estimated 47.9 us against 50.6 for blocks of 16 on all 32
cores; simulated 45.4 and 41.9).
"""
from __future__ import annotations

from gir.passes.schedule_mlu.tiles import NotTile


def choose_block(p, spec, vb: int, sb: int, tasks: int, build, budget: int):
    """The scheduled function of the chosen block: `build(p, spec, sb, tasks) -> (function, NRAM bytes)` builds
    one (tiles_pairs._kernel); `vb` values of the blocked axis, `sb` the first guess."""
    from gir.passes.middle.search.ranking import order
    from gir.passes.schedule_mlu.cost import MLU_RANKING, estimate
    items, used = build(p, spec, sb, tasks)
    for _ in range(8):
        if used <= budget or sb == 1:
            break
        sb = max(1, min(sb - 1, sb * budget // used))
        items, used = build(p, spec, sb, tasks)
    if used > budget:
        raise NotTile("a pair tile does not fit NRAM")
    cands = [(sb, items, estimate(items))]
    for alt in sorted(block_candidates(vb, sb), reverse=True):
        f, u = build(p, spec, alt, tasks)
        if u <= budget:
            cands.append((alt, f, estimate(f)))
    spread = max(_busy(c[2]) for c in cands)
    cands = [c for c in cands if 10 * _busy(c[2]) >= 9 * spread]
    return order(cands, lambda c: c[2].seconds, MLU_RANKING)[0][1]


def _busy(est) -> int:
    """Cores a pair kernel's estimate keeps busy."""
    return min(k.busy_tasks for k in est.kernels)


def block_candidates(vb: int, sb: int) -> set:
    """Blocks smaller than the largest `sb` that fits, for the cost model to rank: its halvings (down to a
    quarter) and the blocks that cut the `vb` values evenly into as many blocks as `sb` does or up to three
    more."""
    n = -(-vb // sb)
    out = {sb // 2, sb // 4} | {-(-vb // m) for m in range(n, n + 4)}
    return {b for b in out if 1 <= b < sb and 4 * b >= sb}
