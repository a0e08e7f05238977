"""Divergence checks: instructions that every participating thread must reach together.

- check_barriers: `sync @block` / `sync @cluster` only under conditions uniform across the block/cluster, an MLU
  `sync @all` only under conditions uniform across every task of the kernel;
- check_collectives: a cross-lane collective only under conditions uniform across the lanes taking part in it:
  `allreduce ... over l` (shuffles over the lanes of `l`) and, on CUDA, `sync @warp` (`__syncwarp()`).

Both use one encoding (`_diverges`): two instances of the instruction that share the variables of everything
outside the participating group (blocks, sizes, sequential loops) and have their own copies of the varying
parallel variables; z3 looks for a pair where one instance runs the instruction and the other does not. A
sequential loop whose bounds depend on a varying variable is derived from it: its variable is shared, and
each instance's own loop bounds are part of whether it runs.

Who takes part in a collective follows the generated code (codegen/lower.py): CUDA shuffles name every lane
of the hardware warp (mask 0xffffffff), so the group is the 32 consecutive linear thread indices of a warp;
HIP shuffles have no mask and read within their width, so the group is the `width` lanes of one shuffle.
Lanes the launch has but a narrower scope masks off (`parallel l in 0..16 @lane` in a 32-lane warp) are
members that never arrive.
"""
from __future__ import annotations

import z3

from gir import ir
from gir.affine import free_vars
from gir.chain import per_thread
from gir.passes.analysis import z3_helpers as zh
from gir.passes.analysis.access import BARRIER_LEVELS, Instr
from gir.passes.analysis.diagnostics import CheckDiagnostic, make
from gir.passes.analysis.launch import gpu_machine_of, launch_shape, scope_extent
from gir.passes.analysis.races import INNER, OUTER


def check_barriers(ki, ctx) -> list[CheckDiagnostic]:
    out = []
    for ins in ki.instrs:
        chain = ins.kind == "chain"   # a block's chain waits for every thread of its block, as a barrier does
        if chain:
            out += _chain_skipped(ins)
        if chain and per_thread(ins.stmt, ins.par_vars(*INNER)):
            continue                  # a chain per thread: a thread may skip it, in every block of its chain
        every = not chain and ins.kind == "sync" and ins.stmt.level == ir.ParLevel.all   # (an MLU kernel's tasks)
        if not chain and not every and (ins.kind != "sync" or ins.stmt.level not in BARRIER_LEVELS):
            continue
        status, model = _diverges(ins, ctx, set(ins.par_vars(*INNER)) | (set(ins.par_vars(*OUTER)) if every else set()))
        what, level = ("chain", "block") if chain else (f"sync @{ins.stmt.level.value}", ins.stmt.level.value)
        level = "kernel" if every else level
        if status == "sat":
            out.append(make("barrier", f"{what} under a condition that differs between "
                            f"threads of one {level}", ins, model, names=_shown(ki, ins),
                            notes=["thread 1 reaches the barrier and thread 2 does not (or the other way round)"]))
        elif status == "unknown":
            out.append(make("barrier", "could not prove the barrier block-uniform (timeout)", ins,
                            severity="warning"))
    return out


def _chain_skipped(ins: Instr) -> list[CheckDiagnostic]:
    """A chain under a condition, or in a loop whose bounds, name its chain variable: a block that skips it (or
    a trip of it) leaves the blocks after it waiting for its status word."""
    g = ins.stmt.var
    conds = [c for c in ins.conds if g in free_vars(c)]
    loops = [v.name for v in ins.vars if v.level is None and g in free_vars(v.lo) | free_vars(v.hi)]
    if not conds and not loops:
        return []
    where = f"a condition on '{g}'" if conds else f"the loop over '{loops[0]}', whose bounds depend on '{g}'"
    return [make("barrier", f"chain under {where}: a block of the chain that skips it leaves the blocks after it "
                 "waiting for its status word", ins, notes=["every block of a chain must reach it, and as often"])]


def check_collectives(ki, ctx) -> list[CheckDiagnostic]:
    if ki.family != "gpu":
        return []
    out = []
    shape = launch_shape(ki.kernel, ctx.sizes)
    machine = gpu_machine_of(ctx.target)
    cuda = machine.vendor == "nvidia"   # shuffles and __syncwarp name every lane of the warp
    for ins in ki.instrs:
        if ins.kind == "allreduce":
            what = f"allreduce over '{ins.stmt.var}'"
        elif ins.kind == "sync" and ins.stmt.level == ir.ParLevel.warp and cuda:
            what = "sync @warp"
        else:
            continue
        group, hw, varying = _group(ins, shape, cuda, machine.warp)
        status, model = _diverges(ins, ctx, varying, hw, group)
        if status == "sat":
            who = "the lanes of one warp" if cuda else f"the {group} lanes of one shuffle"
            out.append(make("collective", f"{what} under a condition that differs between {who}", ins, model,
                            names=_shown(ki, ins),
                            notes=["lane 1 reaches the collective and lane 2 does not (or the other way round): "
                                   "a warp collective waits for every lane it names",
                                   "move it out of the lane-dependent `if`/loop and mask the value instead"]))
        elif status == "unknown":
            out.append(make("collective", f"could not prove the {what} warp-uniform (timeout)", ins,
                            severity="warning"))
    return out


def _group(ins: Instr, shape, cuda: bool, warp: int) -> tuple[int | None, dict, set[str]]:
    """(lanes per group, {variable: (launched extent, stride)} of the varying variables, varying names).

    With the launch geometry known, every inner variable varies and the group is a range of linear thread
    indices; otherwise only the reduced variable varies, grouped by its own value (a `sync @warp` then compares
    any two threads of the block)."""
    inner = [v for v in ins.vars if v.level in INNER]
    reduced = ins.stmt.var if ins.kind == "allreduce" else None
    size: int | None = warp
    if not cuda and reduced is not None:
        v = next((v for v in inner if v.name == reduced), None)
        size = ins.stmt.width or (_const_extent(v) if v is not None else None) or warp   # lower.py's width
    hw = {v.name: shape.position(v.node) for v in inner}
    if None not in hw.values():
        return size, hw, set(hw)
    if reduced is None:
        return None, {}, {v.name for v in inner}
    return size, {}, {reduced}


def _diverges(ins: Instr, ctx, varying: set[str], hw: dict | None = None, group: int | None = None):
    """Whether two instances differing in `varying` (inside one group) disagree on running `ins`.

    `hw` gives (launched extent, stride) for varying variables placed on hardware lanes: an instance is then any
    launched thread (its own scope's bounds are part of whether it runs) and `group` consecutive linear thread
    indices form one group. Without `hw`, instances range over the scope bounds and, with `group`, the single
    varying variable is grouped by `(v - lo) // group`. Returns zh.solve's (status, model)."""
    hw = hw or {}
    derived = set(varying)
    for v in ins.vars:
        if v.level is None and (_free(v.lo) | _free(v.hi)) & derived:
            derived.add(v.name)
    guarded = any(hw[v.name][0] != _const_extent(v) for v in ins.vars if v.name in hw)
    if not guarded and not any(_free(c) & derived for c in ins.conds) and not any(
            v.level is None and v.name in derived for v in ins.vars):
        return "unsat", None
    envs, cons, execs = [dict(ctx.env.sizes), dict(ctx.env.sizes)], list(ctx.env.constraints), []
    for v in ins.vars:
        if v.name in varying:
            for s, env in zip("12", envs):
                env[v.name] = z3.Int(f"{v.name}@{s}")
                lo = zh.expr(v.lo, env)
                if v.name in hw:
                    cons += [lo <= env[v.name], env[v.name] < lo + hw[v.name][0]]
                else:
                    cons += [lo <= env[v.name], env[v.name] < zh.expr(v.hi, env)]
        elif v.name in derived:   # lanes step through the loop together: compare the same iteration
            k = z3.Int(f"{v.name}#iter")
            cons.append(k >= 0)
            for s, env in zip("12", envs):
                env[v.name] = z3.Int(f"{v.name}@{s}")
                cons.append(env[v.name] == zh.expr(v.lo, env) + v.step * k)
        else:
            x = z3.Int(v.name)
            for env in envs:
                env[v.name] = x
            if v.level is not None:
                cons += [zh.expr(v.lo, envs[0]) <= x, x < zh.expr(v.hi, envs[0])]
    for env in envs:
        parts = [zh.cond(c, env) for c in ins.conds]
        for v in ins.vars:
            if v.level is None or v.name in hw:
                lo = zh.expr(v.lo, env)
                parts += [lo <= env[v.name], env[v.name] < zh.expr(v.hi, env)]
                if v.step != 1 and v.name not in derived:
                    parts.append((env[v.name] - lo) % v.step == 0)
        execs.append(z3.And(parts))
    if group is not None:
        cons += _same_group(ins, envs, varying, hw, group)
    return zh.solve(cons + [execs[0] != execs[1]])


def _same_group(ins: Instr, envs, varying: set[str], hw: dict, group: int) -> list:
    lin = []
    for env in envs:
        if hw:
            terms = [(env[v.name] - zh.expr(v.lo, env)) * hw[v.name][1] for v in ins.vars if v.name in hw]
        else:
            terms = [env[v.name] - zh.expr(v.lo, env) for v in ins.vars if v.name in varying]
        lin.append(z3.Sum(terms) if terms else z3.IntVal(0))
    return [lin[0] / group == lin[1] / group]


def _const_extent(v) -> int | None:
    return scope_extent(v, {})


def _free(e) -> set[str]:
    return free_vars(e)


def _shown(ki, ins) -> list[str]:
    return list(ki.params) + ins.var_names
