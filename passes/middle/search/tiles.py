"""Recipe `tiles`: the tile kernel (passes/schedule/tiles.py) as points of the search space.

It maps groups the row kernel does not: reductions whose kept axis is the contiguous one (column softmax, a
softmax over the middle or the leading axis: column tiles, warps splitting the reduced axis), statistics over
several in-team axes (warps on one, lanes on another), element-wise groups whose operands are broadcast over
some axes (those axes walked by each block, the operand loaded once per block), small innermost axes covered
by one thread (RoPE's pairs), and cross-team reductions (partials per persistent block, then a combine).
"""
from __future__ import annotations

from gir.passes.middle.search.candidate import Candidate, Emitted
from gir.passes.middle.search.decision import Decision
from gir.passes.schedule.tiles import TileKernel
from gir.passes.schedule.tiles_skew import SkewTileKernel
from gir.passes.schedule.tiles_cost import candidates as tile_candidates
from gir.passes.schedule.tiles_plan import TileAnalysis, Unsupported


def analysis(g, unit) -> TileAnalysis:
    return TileAnalysis(g, unit)


def why_not(g, unit) -> str:
    """Why the tile kernel does not map this group (for remarks)."""
    try:
        TileAnalysis(g, unit)
    except Unsupported as exc:
        return f"the tile recipe does not map it: {exc}"
    return "no configuration of the tile recipe fits (registers, shared memory or grid limits)"


def candidates(g, unit, m, hints: dict[str, int]) -> list[Candidate]:
    try:
        a = TileAnalysis(g, unit)
    except Unsupported:
        return []
    out = []
    for est in tile_candidates(a, m, hints):
        out.append(_candidate(a, est))
    return out


def _candidate(a: TileAnalysis, est) -> Candidate:
    cfg = est.config
    col = cfg.lane in a.team
    loops = tuple(ax for ax in a.inner if ax not in (cfg.lane, cfg.warp_axis, cfg.tile)) + tuple(cfg.tloop)
    levels = tuple((r.name, "reg" if cfg.cache else "stream") for r in a.inputs)
    reduction = "none"
    if a.slots:
        reduction = "shared" if (cfg.warps > 1 and (cfg.warp_axis or not col)) else \
            ("shuffle" if not col or cfg.lanes_w > 1 else "serial")
    if a.cross:
        reduction = "multi-block"
    tile = ((cfg.lane, cfg.lanes_l * (cfg.tw if cfg.tile == cfg.lane else 1)),)
    if cfg.tile and cfg.tile != cfg.lane:
        tile += ((cfg.tile, cfg.tw),)
    if cfg.lanew:
        tile += ((cfg.lanew, cfg.lanes_w),)
    dec = Decision("tiles", blocks=cfg.grid, lanes=cfg.lane, warps=cfg.warp_axis, loops=loops,
                   vec=cfg.tw if cfg.tile == cfg.lane else 1, team="persistent" if cfg.persistent else "block",
                   threads=cfg.threads, tile=tile, reduction=reduction, levels=levels,
                   notes={"column": col, "persistent": cfg.persistent})

    def emit(name: str) -> Emitted:
        kern = (SkewTileKernel if cfg.skew else TileKernel)(a, cfg)
        texts = kern.emit(name)
        names = [name] + [f"{name}_{c.target}" for c in a.cross]
        return Emitted(texts, kern.partial_allocs(), names)

    info = {"seconds": est.seconds, "dram_bytes": est.dram_bytes, "blocks": est.blocks, "regs": est.regs,
            "smem": est.smem, **est.notes}
    return Candidate(dec, "column-tiles" if col else "row-tiles", est.seconds, est.dram_bytes, 0.0,
                     est.compulsory, emit, cfg, info)
