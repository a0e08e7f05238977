"""Candidate generation (Roller-style) and the analytic cost model for row kernels.

A candidate is a `RowConfig`; its cost is the estimated time in seconds:
DRAM bytes / DRAM bandwidth + L2 bytes (re-read broadcast operands) / L2 bandwidth, divided by the
achieved parallelism (threads in flight relative to what saturates the machine, and the share of
lanes that hold real elements), plus launch overhead, barrier rounds and an instruction term.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir.passes.schedule import halo, shift
from gir.passes.schedule.rowplan import staged_rows
from gir.passes.schedule.rows import RowConfig, RowKernel
from gir.passes.machines import GpuMachine

REG_CACHE_WORDS = 160  # registers per thread we allow the row cache to take (of 255)
# Re-reads of broadcast operands (gamma[j]) hit L2, but they still cost sector transactions and the
# traffic goal counts them: we charge them at half the DRAM bandwidth's cost (share = 2).
L2_REREAD_BW_SHARE = 2.0


@dataclass
class Estimate:
    config: RowConfig
    seconds: float
    dram_bytes: float
    l2_bytes: float
    blocks: int
    threads_per_block: int
    regs: int
    smem: int
    notes: dict = field(default_factory=dict)


def hint(d, hints: dict[str, int]) -> int:
    return d if isinstance(d, int) else int(hints.get(d, 4096))


def candidates(rk: RowKernel, m: GpuMachine, hints: dict[str, int], vmax: int) -> list[RowConfig]:
    g = rk.g
    cin = hint(g.C[-1], hints)
    rows = 1
    for d in g.R:
        rows *= hint(d, hints)
    out = []
    vecs = [v for v in sorted({1, 2, vmax}) if v == 1 or _aligned(rk, v, hints)]
    if len(vecs) > 2:
        vecs.remove(2)  # vec=2 only where the widest vector does not divide the row (hints)
    teams = [(t, 1) for t in (64, 128, 256, 512, 1024) if t % m.warp == 0 and t <= m.max_threads_per_block]
    teams += [(m.warp, r) for r in (1, 2, 4, 8)]
    variants = [(v, 0, (), False) for v in vecs]
    unit = shift.shift_unit(rk)
    res = shift.residues(rk, unit, hints) if unit else None
    if res is not None:  # rows start off a sector at the hinted sizes: shifted lanes, full vectors
        variants.append((vmax, unit, res, False))
    if rk.halos:  # tensors read at several column offsets: staged once per chunk (halo.py)
        variants += [(v, 0, (), True) for v in sorted({1, 2, vmax}) if v == 1 or _aligned(rk, v, hints, True)]
        hunit = shift.shift_unit(rk, halo=True)
        hres = shift.residues(rk, hunit, hints) if hunit else None
        if hres is not None:
            variants.append((vmax, hunit, hres, True))
    staged = bool(shift.staged(rk))
    for t, rw in teams:
        for v, sh, rs, hl in variants:
            kc = -(-(cin + max(sh - 1, 0)) // (t * v))
            caches = [(0, 0)]
            bc = any(c.broadcast and c.mode != "inv" for c in rk.colrefs)
            if len(g.C) == 1 and (rk.nphases + bool(rk.full_stores) > 1 or bc):
                caches.append((kc, 0))  # reuse across phases, or broadcast operands kept by persistent blocks
            elif len(g.C) == 2 and rk.nphases + bool(rk.full_stores) > 1:
                caches.append((hint(g.C[0], hints) * kc, kc))  # (C0, C1) rows: C0 x kc chunks
            for cached, inner in caches:
                if sh and staged and (rw > 1 or not cached):
                    continue  # broadcast operands are staged per block, for a cached row (shift.py)
                if hl and rw > 1:
                    continue  # halos are staged by block teams (their barrier is the block's)
                pers = [0]
                if len(g.R) == 1 and rows > 0:
                    per_sm = max(1, min(m.max_threads_per_sm // (t * rw), 16))
                    pers += sorted({m.sms * min(k, per_sm) for k in (1, 2, 4, 8)} | {m.sms * per_sm})
                for p in pers:
                    if p and p * rw >= rows:
                        continue
                    out.append(RowConfig(t, rw, v, cached, p, 0, inner, sh, rs, hl))
    return out


SECTOR = 32


def _inv_loads(rk: RowKernel, cfg: RowConfig, hints: dict[str, int], passes: int) -> int:
    """Loads per warp and row of operands invariant along the innermost column dim (inv mode): once per
    outer column index when cached (hoisted), otherwise once per chunk and pass."""
    inv = [c for c in rk.colrefs if c.mode == "inv"]
    if not inv:
        return 0
    outer = 1
    for d in rk.g.C[:-1]:
        outer *= hint(d, hints)
    chunks = 1 if cfg.cached else -(-hint(rk.g.C[-1], hints) // (cfg.threads * cfg.vec))
    return len(inv) * outer * chunks * (1 if cfg.cached else passes)


def _aligned(rk: RowKernel, v: int, hints: dict[str, int], staged_halo: bool = False) -> bool:
    """Whether vector width v divides every extent the vectorised path needs aligned, at the hinted
    sizes (otherwise its size guard fails there and a vec=v candidate would never run as estimated)."""
    exts = [c.align_ext for c in rk.colrefs if c.mode == "vec" and c.aligned_offset]
    exts += [rk.types[n].shape[-1] for n in rk.full_stores]
    exts += [h.ext for h in rk.halos] if staged_halo else []
    return all(hint(e, hints) % v == 0 for e in exts)


def _misaligned(rk: RowKernel, itemsize: int, cfg: RowConfig, m: GpuMachine, hints: dict[str, int]) -> float:
    """Extra bytes per element of a row tensor whose rows start off a 32-byte sector: one sector more per
    warp access of `warp * vec * itemsize` bytes, for the share of rows that start misaligned."""
    frac = shift.misaligned_fraction(rk, hints, itemsize)
    return itemsize * frac * SECTOR / (m.warp * cfg.vec * itemsize)


def _cin_stride(rk: RowKernel, c, hints: dict[str, int]) -> int:
    """Elements between the addresses of a column operand at consecutive innermost-column positions, at the
    hinted sizes (1 where its index is not affine in it: a data-dependent gather counts as contiguous)."""
    from gir.affine import to_affine

    shape = rk.types[c.ref.name].shape
    stride, step = 0, 1
    for k in range(len(c.ref.index) - 1, -1, -1):
        aff = to_affine(c.ref.index[k])
        if aff is None:
            return 1
        stride += aff.coeffs.get(rk.cin, 0) * step
        step *= hint(shape[k], hints)
    return max(1, abs(stride))


def estimate(rk: RowKernel, cfg: RowConfig, m: GpuMachine, hints: dict[str, int]) -> Estimate | None:
    g = rk.g
    cin = hint(g.C[-1], hints)
    ncol = 1
    for d in g.C:
        ncol *= hint(d, hints)
    rows = 1
    for d in g.R:
        rows *= hint(d, hints)
    tpb = cfg.threads * cfg.rows_per_block
    regs = rk.reg_words(cfg)
    if cfg.cached and regs > REG_CACHE_WORDS:
        return None
    nw = cfg.threads // m.warp
    nw_team = max(1, nw)
    smem = 4 * nw * len(rk.slots) if cfg.rows_per_block == 1 else 0
    if cfg.shift:
        smem += sum(rk.colrefs[i].dtype.nbytes for i in shift.staged(rk)) * (cfg.shift + cfg.cached * cfg.threads
                                                                              * cfg.vec)
    smem += halo.smem_bytes(rk, cfg)
    if smem > m.smem_per_block_default or tpb > m.max_threads_per_block:
        need = halo.smem_bytes(rk, cfg)
        if need > m.smem_per_block_default:
            rk.halo_refused = min(rk.halo_refused or need, need)
        return None
    blocks = cfg.persistent or -(-rows // cfg.rows_per_block)
    passes = 1 if cfg.cached else max(1, rk.nphases + bool(rk.full_stores))
    staged = halo.members(rk) if halo.active(cfg) else set()
    row_in = sum(c.dtype.nbytes * (1 if c.mode == "inv" else ncol) for i, c in enumerate(rk.colrefs)
                 if not c.broadcast and i not in staged)
    row_in += sum(h.dtype.nbytes * ncol for h in rk.halos) if halo.active(cfg) else 0
    # compulsory: a tensor of a halo group counts once, whether or not this configuration stages it
    row_need = sum(c.dtype.nbytes * (1 if c.mode == "inv" else ncol) for i, c in enumerate(rk.colrefs)
                   if not c.broadcast and i not in halo.members(rk)) + sum(h.dtype.nbytes * ncol for h in rk.halos)
    bc_in = sum(c.dtype.nbytes * (1 if c.mode == "inv" else ncol) for c in rk.colrefs if c.broadcast)
    # a row result is stored by one thread: a whole sector per row
    out_b = sum(rk.types[n].dtype.nbytes * ncol for n in rk.full_stores) + SECTOR * len(rk.row_stores)
    # element-wise (gather) operands: consecutive lanes are `vec * stride` elements apart (stride: the tensor's
    # step along the innermost column, e.g. a row count for x[c, r]), up to a whole sector per element
    waste = sum(ncol * (min(SECTOR, c.dtype.nbytes * _cin_stride(rk, c, hints) * min(cfg.vec, 8)) - c.dtype.nbytes)
                for i, c in enumerate(rk.colrefs) if c.mode == "elem" and not c.broadcast and i not in staged)
    dram = rows * ((row_in + waste) * passes + out_b) + bc_in
    if not cfg.shift:  # rows starting off a sector: one more sector per warp access of a row tensor
        mis_in = sum(_misaligned(rk, c.dtype.nbytes, cfg, m, hints) * ncol for i, c in enumerate(rk.colrefs)
                     if c.mode == "vec" and not c.broadcast and i not in staged)
        mis_in += sum(_misaligned(rk, h.dtype.nbytes, cfg, m, hints) * ncol
                      for h in (rk.halos if halo.active(cfg) else []))
        mis_out = sum(_misaligned(rk, rk.types[n].dtype.nbytes, cfg, m, hints) * ncol for n in rk.full_stores)
        dram += rows * (mis_in * passes + mis_out)
    # every row team (persistent: once per team; a block of warp teams has rows_per_block of them) or
    # every row re-reads broadcast operands, served by L2 (a shifted kernel stages them once per block)
    bc_reads = (blocks * cfg.rows_per_block if (cfg.persistent and cfg.cached) else rows) * passes
    if cfg.shift:
        bc_reads = blocks if cfg.persistent else rows
    l2 = bc_in * bc_reads
    # per-row scalars (label[i]) and values invariant along the innermost dim (gamma[g, c] of a row with
    # two column dims) are loaded by every warp of the team: one 32-byte sector per warp and load
    # (block teams stage per-row scalars through shared memory: one load per row)
    l2 += rows * (1 if staged_rows(cfg, m.warp) else nw_team) * SECTOR * len(rk.rowrefs)
    l2 += rows * nw_team * SECTOR * _inv_loads(rk, cfg, hints, passes)
    span = cfg.threads * cfg.vec
    chunks = shift.chunks(cin, cfg)
    if halo.active(cfg):  # the halos between chunks are read by both chunks beside them
        dram += rows * passes * max(chunks - 1, 0) * SECTOR * sum(halo.extra_sectors(h) for h in rk.halos)
    lane_util = cin / (chunks * span)
    resident = min(m.max_threads_per_sm // max(tpb, 1), 32)
    regs_per_thread = max(32, regs)
    resident = min(resident, m.regs_per_sm // (regs_per_thread * tpb) if regs_per_thread * tpb else resident)
    if resident < 1:
        return None
    in_flight = min(blocks, resident * m.sms) * tpb
    util = min(1.0, in_flight / (m.sms * 1024)) * lane_util
    # memory-level parallelism: vector accesses move more bytes per instruction
    mlp = min(1.0, 0.55 + 0.15 * cfg.vec)
    mem_t = max((dram / m.dram_bw + l2 / L2_REREAD_BW_SHARE / m.dram_bw) / max(util * mlp, 1e-3), m.dispatch_s(blocks))
    sync_rounds = rk.nphases * (2 if cfg.rows_per_block == 1 and nw > 1 else 0)
    sync_rounds += 2 * chunks * passes * len(rk.halos) if halo.active(cfg) else 0
    per_team_rows = -(-rows // max(blocks * cfg.rows_per_block, 1))
    lat = (sync_rounds * 200 + rk.nphases * 5 * 40) * per_team_rows / m.clock_hz
    instr = rows * ncol * passes * (4 + len(rk.slots)) / (m.sms * 128 * m.clock_hz)
    secs = mem_t + m.launch_s + lat + instr
    return Estimate(cfg, secs, dram, l2, blocks, tpb, regs, smem,
                    {"passes": passes, "lane_util": round(lane_util, 3), "util": round(util, 3),
                     "compulsory": rows * (row_need + out_b) + bc_in})


SPLIT_THREADS = 256
SPLIT_MIN_ROW = 65536  # elements; shorter rows never split
SPLIT_MIN_OUTER = 32   # points of the outermost column dim at least, for the blocks to share it


def split_candidates(rk: RowKernel, m: GpuMachine, hints: dict[str, int], vmax: int) -> list[RowConfig]:
    """Multi-block rows (passes/schedule/split.py): only for few (< 2 x SMs), very long rows."""
    from gir.passes.schedule.split import splittable
    rows = 1
    for d in rk.g.R:
        rows *= hint(d, hints)
    if not splittable(rk) or rows >= 2 * m.sms:
        return []
    cin = hint(rk.g.C[-1], hints)
    if cin >= SPLIT_MIN_ROW:
        return [RowConfig(SPLIT_THREADS, 1, v, 0, 0, 2 * m.sms) for v in sorted({1, vmax})]
    total = 1
    for d in rk.g.C:
        total *= hint(d, hints)
    outer = hint(rk.g.C[0], hints) if len(rk.g.C) > 1 else 0
    # (an outer dim of a few points gives a few blocks; inner rows under a warp's 32 lanes waste most of every
    # sector, which this estimate does not count)
    if outer < SPLIT_MIN_OUTER or cin < 32 or total < SPLIT_MIN_ROW:
        return []
    # several column dims (a whole-tensor statistic: mse_loss's C = (M, N)) with short inner rows: the blocks
    # share the outermost dim, each walking whole inner rows (one block for all of it ran at one SM's bandwidth)
    split = min(2 * m.sms, outer)
    threads = [t for t in (128, 256, 512) if t <= max(128, -(-cin // 32) * 32)]
    return [RowConfig(t, 1, v, 0, 0, split, outer=True) for t in threads for v in sorted({1, vmax})]


def estimate_split(rk: RowKernel, cfg: RowConfig, m: GpuMachine, hints: dict[str, int]) -> Estimate:
    """Two launches; kernel 1 streams the rows with rows x split blocks, kernel 2 reads the partials."""
    cin = hint(rk.g.C[-1], hints)
    rows = 1
    for d in rk.g.R:
        rows *= hint(d, hints)
    ncol = 1
    for d in rk.g.C:
        ncol *= hint(d, hints)
    row_in = sum(c.dtype.nbytes * (1 if c.mode == "inv" else ncol) for c in rk.colrefs)
    part = 4 * len(rk.slots) * rows * cfg.split
    dram = rows * row_in + 2 * part + sum(rk.types[n].dtype.nbytes for n in rk.row_stores) * rows
    blocks = rows * cfg.split
    in_flight = min(blocks, m.sms * (m.max_threads_per_sm // cfg.threads)) * cfg.threads
    span = cfg.threads * cfg.vec * (1 if cfg.outer else cfg.split)
    lane_util = cin / (-(-cin // span) * span)
    if cfg.outer:   # the outer points over the blocks: the last round partly idle
        c0 = hint(rk.g.C[0], hints)
        lane_util *= c0 / (-(-c0 // cfg.split) * cfg.split)
    util = min(1.0, in_flight / (m.sms * 1024)) * lane_util
    mlp = min(1.0, 0.55 + 0.15 * cfg.vec)
    nw = cfg.threads // m.warp
    secs = max(dram / m.dram_bw / max(util * mlp, 1e-3), m.dispatch_s(blocks)) + 2 * m.launch_s + 600 / m.clock_hz
    secs += rows * ncol * (4 + len(rk.slots)) / (m.sms * 128 * m.clock_hz)
    return Estimate(cfg, secs, dram, 0.0, blocks, cfg.threads, rk.reg_words(cfg), 4 * nw * len(rk.slots),
                    {"passes": 1, "lane_util": round(lane_util, 3), "util": round(util, 3),
                     "compulsory": rows * row_in + sum(rk.types[n].dtype.nbytes for n in rk.row_stores) * rows})


def search(rk: RowKernel, m: GpuMachine, hints: dict[str, int], vmax: int) -> list[Estimate]:
    """All feasible candidates, best first."""
    ests = []
    rk.halo_refused = None
    for cfg in candidates(rk, m, hints, vmax):
        e = estimate(rk, cfg, m, hints)
        if e is not None:
            ests.append(e)
    ests += [estimate_split(rk, cfg, m, hints) for cfg in split_candidates(rk, m, hints, vmax)]
    if not ests:
        return ests
    # the traffic goal: a candidate within the goal's bytes if it is nearly as fast
    # (passes/middle/search/ranking.py, the GPU policy)
    from gir.passes.middle.search.ranking import order, policy
    ests = order(ests, lambda e: e.seconds, policy("gpu"), lambda e: e.dram_bytes + e.l2_bytes,
                 min(e.notes["compulsory"] for e in ests), key=lambda e: -e.config.vec)
    if rk.halo_refused and not any(halo.active(e.config) for e in ests):
        names = ", ".join(sorted({h.name for h in rk.halos}))
        for e in ests:
            e.notes["remark"] = (f"the halo of {names} is not staged in shared memory: it needs at least "
                                 f"{rk.halo_refused} bytes per block, more than {m.smem_per_block_default}; "
                                 f"each column offset is a separate global load")
    return ests
