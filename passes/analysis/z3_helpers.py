"""The one door to z3: GIR integer expressions and instance domains as z3 terms, and solving
with a timeout. Each instance of an instruction gets its own copy of the enclosing variables
(`b@1`, `t@2`: the two-thread encoding); sizes are shared between copies."""
from __future__ import annotations

import z3

from gir import ir

TIMEOUT_MS = 2000


class Env:
    """Names → z3 integers: sizes (shared) and one suffixed copy of loop/parallel variables per instance."""

    def __init__(self, params, sizes: dict[str, int] | None = None):
        self.sizes = {p: z3.Int(p) for p in params}
        self.constraints = [v >= 1 for v in self.sizes.values()]
        for p, v in (sizes or {}).items():
            if p in self.sizes:
                self.constraints.append(self.sizes[p] == v)

    def instance(self, ins, suffix: str) -> tuple[dict, list]:
        """(name → term, domain constraints) for one instance of `ins`."""
        env = dict(self.sizes)
        cons = []
        for v in ins.vars:
            x = z3.Int(f"{v.name}@{suffix}")
            lo, hi = expr(v.lo, env), expr(v.hi, env)
            env[v.name] = x
            cons += [lo <= x, x < hi]
            if v.step != 1:
                cons.append((x - lo) % v.step == 0)
        cons += [cond(c, env) for c in ins.conds]
        return env, cons


def expr(e: ir.Expr, env: dict) -> z3.ArithRef:
    if isinstance(e, ir.Const):
        return z3.IntVal(int(e.value))
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.UnOp) and e.op == "-":
        return -expr(e.operand, env)
    if isinstance(e, ir.BinOp):
        a, b = expr(e.lhs, env), expr(e.rhs, env)
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op == "//":
            return a / b  # z3 integer division floors for positive divisors
        if e.op == "%":
            return a % b
    if isinstance(e, ir.Call) and len(e.args) == 2:
        a, b = expr(e.args[0], env), expr(e.args[1], env)
        if e.fn == "cdiv":
            return -((-a) / b)
        if e.fn == "min":
            return z3.If(a <= b, a, b)
        if e.fn == "max":
            return z3.If(a >= b, a, b)
    raise ValueError(f"not an integer expression: {e!r}")


def cond(e: ir.Expr, env: dict) -> z3.BoolRef:
    if isinstance(e, ir.Const) and isinstance(e.value, bool):
        return z3.BoolVal(e.value)
    if isinstance(e, ir.UnOp) and e.op == "not":
        return z3.Not(cond(e.operand, env))
    if isinstance(e, ir.BinOp):
        if e.op == "and":
            return z3.And(cond(e.lhs, env), cond(e.rhs, env))
        if e.op == "or":
            return z3.Or(cond(e.lhs, env), cond(e.rhs, env))
        a, b = expr(e.lhs, env), expr(e.rhs, env)
        ops = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}
        if e.op in ops:
            return ops[e.op]
    raise ValueError(f"not a condition: {e!r}")


def dim_term(d, env: dict) -> z3.ArithRef:
    return z3.IntVal(d) if isinstance(d, int) else env[d]


def solve(constraints, timeout_ms: int = TIMEOUT_MS) -> tuple[str, dict | None]:
    """('sat', {name: value}) with a model, ('unsat', None), or ('unknown', None) on timeout."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*constraints)
    r = s.check()
    if r == z3.sat:
        m = s.model()
        return "sat", {d.name(): m[d].as_long() for d in m.decls() if z3.is_int_value(m[d])}
    return ("unsat", None) if r == z3.unsat else ("unknown", None)


def value(model: dict, term: z3.ArithRef) -> int | None:
    """Evaluate a term under a model returned by `solve` (missing names count as 0)."""
    subs = [(z3.Int(k), z3.IntVal(v)) for k, v in model.items()]
    r = z3.simplify(z3.substitute(term, *subs)) if subs else z3.simplify(term)
    return r.as_long() if z3.is_int_value(r) else None


def optimize_choices(costs: dict[str, dict[str, float]],
                     capacities: list[tuple[dict[tuple[str, str], float], float]]) -> dict[str, str]:
    """Pick one option per item minimising the total cost under linear capacity limits (z3 Optimize).

    `costs[item][option]` lists the allowed options of each item with their cost; each capacity is
    ({(item, option): weight}, limit): the weights of the chosen options must sum to at most the limit."""
    opt = z3.Optimize()
    opt.set("timeout", TIMEOUT_MS)
    pick = {(i, o): z3.Bool(f"pick[{i}][{o}]") for i, opts in costs.items() for o in opts}
    for i, opts in costs.items():
        opt.add(z3.PbEq([(pick[i, o], 1) for o in opts], 1))
    scale = 1000  # costs and weights become integers (z3's Optimize is exact on integers)
    for weights, limit in capacities:
        terms = [z3.If(pick[k], z3.IntVal(int(round(w * scale))), z3.IntVal(0)) for k, w in weights.items() if k in pick]
        if terms:
            opt.add(z3.Sum(terms) <= int(limit * scale))
    total = z3.Sum([z3.If(pick[i, o], z3.IntVal(int(round(c * scale))), z3.IntVal(0))
                    for i, opts in costs.items() for o, c in opts.items()]) if pick else z3.IntVal(0)
    opt.minimize(total)
    if opt.check() != z3.sat:
        raise ValueError("no choice satisfies the capacities")
    model = opt.model()
    return {i: next(o for o in opts if z3.is_true(model.eval(pick[i, o], model_completion=True)))
            for i, opts in costs.items()}
