"""Fused group normalisation on the MLU: one kernel for

    mu[n, g] = mean(x[n, g, c, p]);  d[n, g, c, p] = x[n, g, c, p] - mu[n, g]
    vr[n, g] = mean(d[n, g, c, p] * d[n, g, c, p])
    y[n, g, c, p] = d[n, g, c, p] * rsqrt(vr[n, g] + EPS) * gamma[g, c] + beta[g, c]

(any tensor / index names, f32). A work unit is one (n, g): its CG*HW elements are one `[CG, HW]` NRAM tile
(rows = channels of the group), gamma[g, :] / beta[g, :] are `[CG, 1]` per-row vectors. Per unit: row sums
(`__bang_reduce_sum_rows`) → a scalar total (a CG-step scalar loop) → mean; `d` in place; `d * d` into the
output tile, row sums → variance → rstd (scalar); `a = gamma * rstd` ([CG, 1]); `y = d * a + beta` (per-row
scalar ops). Units are blocked: blocks of K consecutive groups (K divides G, so a block never straddles n) go
cyclically to the tasks; each block's loop over its K groups is software-pipelined by the emitter. x is read
once and y written once (the compulsory traffic). NotRowModel if the function is not of this form or a unit's
tiles do not fit NRAM (the op-by-op schedule takes over)."""
from __future__ import annotations

from gir import ir
from gir.passes.schedule_mlu import build as B
from gir.passes.schedule_mlu import layout as L
from gir.passes.schedule_mlu.rowmodel import NotRowModel

F32 = ir.DType.f32


def _is_ref(e, name=None, idx=None):
    return (isinstance(e, ir.Ref) and (name is None or e.name == name)
            and (idx is None or [getattr(i, "name", None) for i in e.index] == list(idx)))


def _match(spec: ir.Func, info):
    """(x, gamma, beta, y, eps) if `spec` is a group normalisation, else NotRowModel."""
    if len(info.stmts) != 4 or len(spec.params) != 3 or len(spec.results) != 1:
        raise NotRowModel("not a group normalisation")
    s0, s1, s2, s3 = (st.stmt for st in info.stmts)
    types = info.types
    ov = info.stmts[1].out_vars
    if len(ov) != 4:
        raise NotRowModel("not a group normalisation")
    n, g, c, p = ov
    ng = (n, g)
    mu, d, vr, y = (s.target.name for s in (s0, s1, s2, s3))
    # statement 0: mu[n, g] = mean(x[n, g, c, p]) (its own index names)
    o0, r0 = info.stmts[0].out_vars, list(info.stmts[0].reduce_vars.values())
    v0 = s0.value
    if not (isinstance(v0, ir.Reduce) and v0.op == "mean" and len(o0) == 2 and r0 and len(r0[0]) == 2
            and _is_ref(v0.arg, None, list(o0) + list(r0[0]))):
        raise NotRowModel("not a group normalisation")
    x = v0.arg.name
    v1 = s1.value
    if not (isinstance(v1, ir.BinOp) and v1.op == "-" and _is_ref(v1.lhs, x, ov) and _is_ref(v1.rhs, mu, ng)):
        raise NotRowModel("not a group normalisation")
    o2, r2 = info.stmts[2].out_vars, list(info.stmts[2].reduce_vars.values())
    v2 = s2.value
    full2 = list(o2) + list(r2[0]) if r2 else []
    if not (isinstance(v2, ir.Reduce) and v2.op == "mean" and len(o2) == 2 and len(full2) == 4
            and isinstance(v2.arg, ir.BinOp) and v2.arg.op == "*"
            and _is_ref(v2.arg.lhs, d, full2) and _is_ref(v2.arg.rhs, d, full2)):
        raise NotRowModel("not a group normalisation")
    o3 = info.stmts[3].out_vars
    v3 = s3.value   # ((d * rsqrt(vr + EPS)) * gamma[g, c]) + beta[g, c]
    try:
        add, mul2 = v3, v3.lhs
        mul1, rs = mul2.lhs, mul2.lhs.rhs
        ok = (add.op == "+" and mul2.op == "*" and mul1.op == "*" and _is_ref(mul1.lhs, d, o3)
              and isinstance(rs, ir.Call) and rs.fn == "rsqrt" and rs.args[0].op == "+"
              and _is_ref(rs.args[0].lhs, vr, o3[:2]) and isinstance(rs.args[0].rhs, ir.Const)
              and _is_ref(mul2.rhs, None, o3[1:3]) and _is_ref(add.rhs, None, o3[1:3]))
    except AttributeError:
        ok = False
    if not ok:
        raise NotRowModel("not a group normalisation")
    gamma, beta, eps = mul2.rhs.name, add.rhs.name, float(rs.args[0].rhs.value)
    if {x, gamma, beta} != {q.name for q in spec.params} or y != spec.results[0].name:
        raise NotRowModel("not a group normalisation")
    shape = types[x].shape
    if (types[y].shape != shape or types[gamma].shape != shape[1:3] or types[beta].shape != shape[1:3]
            or any(types[t].dtype != F32 for t in (x, gamma, beta, y))):
        raise NotRowModel("group normalisation with other shapes or types")
    return x, gamma, beta, y, eps


def groupnorm_items(spec: ir.Func, info, tasks: int = 32, nram: int = 768 * 1024) -> list:
    """The fused kernel of a group normalisation (sizes specialised), or NotRowModel."""
    x, gamma, beta, y, eps = _match(spec, info)
    nn, gg, cg, hw = (int(dim) for dim in info.types[x].shape)
    full = (cg, hw)
    per_full = L.phys_elems(full) * 4
    need = per_full * (4 + (3 if hw % L.PITCH else 0)) + 6 * L.phys_elems((cg, 1)) * 4 + 4096
    if need > nram:
        raise NotRowModel("a group does not fit NRAM")
    units = nn * gg
    k = max(q for q in range(1, gg + 1) if gg % q == 0 and q <= max(1, units // tasks))
    blocks = units // k
    bpn = gg // k                                      # blocks per n
    blk = B.add(B.mul(B.v("b_"), tasks), B.v("task_"))
    inv = 1.0 / (cg * hw)
    gv = B.add(B.mul(B.v("g0_"), k), B.v("q_"))       # the group of the current unit

    def t2(name):
        return B.ref(name, B.sl(0, cg), B.sl(0, hw))

    def rv(name):
        return B.ref(name, B.sl(0, cg), B.sl(0, 1))

    def sc(name):
        return B.ref(name, B.sl(0, 1))

    loads = [B.move("load", t2("x_t"), B.ref(x, B.v("n_"), gv, B.sl(0, cg), B.sl(0, hw))),
             B.move("load", rv("gm_t"), B.ref(gamma, gv, B.sl(0, cg))),
             B.move("load", rv("bt_t"), B.ref(beta, gv, B.sl(0, cg)))]

    def total(dst, src_full):   # dst (scalar) = mean of a [CG, HW] tile
        return [ir.Assign(rv("rs_"), ir.Reduce("sum", src_full, (1,))),
                ir.Assign(sc("tot_"), ir.Reduce("sum", rv("rs_"), (0,))),
                ir.Assign(sc(dst), ir.BinOp("*", sc("tot_"), B.c(inv)))]

    comps = total("mu_", t2("x_t"))
    comps.append(ir.Assign(t2("x_t"), ir.BinOp("-", t2("x_t"), sc("mu_"))))            # d, in place
    comps.append(ir.Assign(t2("y_t"), ir.BinOp("*", t2("x_t"), t2("x_t"))))
    comps += total("vr_", t2("y_t"))
    comps.append(ir.Assign(sc("rstd_"), ir.Call("rsqrt", (ir.BinOp("+", sc("vr_"), B.c(eps)),))))
    comps.append(ir.Assign(rv("a_"), ir.BinOp("*", rv("gm_t"), sc("rstd_"))))
    comps.append(ir.Assign(t2("y_t"), ir.BinOp("*", t2("x_t"), rv("a_"))))
    comps.append(ir.Assign(t2("y_t"), ir.BinOp("+", t2("y_t"), rv("bt_t"))))
    stores = [B.move("store", B.ref(y, B.v("n_"), gv, B.sl(0, cg), B.sl(0, hw)), t2("y_t"))]

    inner = ir.For("q_", B.c(0), B.c(k), tuple(loads + comps + stores))
    g0 = ir.For("g0_", ir.BinOp("%", blk, B.c(bpn)), B.add(ir.BinOp("%", blk, B.c(bpn)), 1), (inner,))
    nl = ir.For("n_", ir.BinOp("//", blk, B.c(bpn)), B.add(ir.BinOp("//", blk, B.c(bpn)), 1), (g0,))
    hi = ir.BinOp("//", B.add(ir.BinOp("-", B.c(blocks), B.v("task_")), tasks - 1), B.c(tasks))
    loop = ir.For("b_", B.c(0), hi, (nl,))
    allocs = [B.alloc("x_t", F32, full, "nram"), B.alloc("y_t", F32, full, "nram"),
              B.alloc("gm_t", F32, (cg, 1), "nram"), B.alloc("bt_t", F32, (cg, 1), "nram"),
              B.alloc("a_", F32, (cg, 1), "nram"), B.alloc("rs_", F32, (cg, 1), "nram")]
    allocs += [B.alloc(s, F32, (1,), "nram") for s in ("tot_", "mu_", "vr_", "rstd_")]
    top = ir.Parallel("task_", B.c(0), B.c(tasks), ir.ParLevel.core, tuple(allocs + [loop]))
    return [ir.Kernel(f"{spec.name}_mlu", (top,), (("task_dim", str(tasks)),))]
