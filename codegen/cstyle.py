"""One C-style printer for kernel ASTs; backends subclass it and fill in `spell`, a table of spellings."""
from __future__ import annotations

import dataclasses
import math

from gir.codegen import ast as C

# C operator precedence (higher binds tighter)
_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5,
         "*": 6, "/": 6, "%": 6}
_UNARY, _ATOM = 7, 8

HELPERS = """\
template <typename A, typename B>
static __device__ __forceinline__ auto gir_floordiv(A a, B b) -> decltype(a / b) {
  auto q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename A, typename B>
static __device__ __forceinline__ auto gir_mod(A a, B b) -> decltype(a % b) {
  auto r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename A, typename B>
static __device__ __forceinline__ auto gir_min(A a, B b) -> decltype(a + b) {  // a NaN operand gives NaN
  return (b < a || b != b) ? b : a;                   // (numpy.minimum / np.min, ONNX Min); not fminf
}
template <typename A, typename B>
static __device__ __forceinline__ auto gir_max(A a, B b) -> decltype(a + b) {  // a NaN operand gives NaN
  return (a < b || b != b) ? b : a;                   // (numpy.maximum / np.max, ONNX Max); not fmaxf
}
template <typename A, typename B, typename C>
static __device__ __forceinline__ auto gir_clamp(A a, B b, C c) -> decltype(a + b + c) {
  decltype(a + b + c) x = a, lo = b, hi = c;   // min(max(x, lo), hi); a NaN operand gives NaN (numpy.clip)
  if (x != x || lo != lo) return x != x ? x : lo;
  decltype(a + b + c) r = x < lo ? lo : x;
  return (hi < r || hi != hi) ? hi : r;
}
static __device__ __forceinline__ float gir_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
static __device__ __forceinline__ float gir_silu(float x) { return x / (1.0f + expf(-x)); }
static __device__ __forceinline__ float gir_gelu(float x) { return 0.5f * x * erfcf(-0.70710678118654752f * x); }
static __device__ __forceinline__ float gir_gelu_tanh(float x) {  // 0.5x(1 + tanh(u)) = x / (1 + exp(-2u))
  float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}
static __device__ __forceinline__ double gir_softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }
static __device__ __forceinline__ double gir_silu(double x) { return x / (1.0 + exp(-x)); }
static __device__ __forceinline__ double gir_gelu(double x) { return 0.5 * x * erfc(-0.70710678118654752 * x); }
static __device__ __forceinline__ double gir_gelu_tanh(double x) {
  double u = 0.79788456080286536 * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}
"""

# `chain OP dst <- src over g via st[k]` (a single-pass scan across blocks): block g of the chain (thread 0, or
# every thread for a chain per thread) publishes its aggregate in its 64-bit status word (flag 1), combines the
# words of blocks g-1, g-2, ... (`stride` words apart) until one holds an inclusive prefix (flag 2), publishes its
# own inclusive prefix (flag 2) and returns the exclusive one. A word is (flag << 32) | the value's bits, written
# by one atomic exchange and read by one volatile load, so a flag never arrives without its value. The words
# start at 0 (a kernel zeroes them first). Blocks wait only on blocks of lower index, which the hardware starts
# first (as CUB's single-pass scan assumes).
CHAIN_HELPERS = """\
union gir_chain_word { unsigned u; float f; int i; };
static __device__ __forceinline__ unsigned gir_chain_bits(float v) { gir_chain_word w; w.f = v; return w.u; }
static __device__ __forceinline__ unsigned gir_chain_bits(int v) { gir_chain_word w; w.i = v; return w.u; }
static __device__ __forceinline__ void gir_chain_get(unsigned u, float* v) { gir_chain_word w; w.u = u; *v = w.f; }
static __device__ __forceinline__ void gir_chain_get(unsigned u, int* v) { gir_chain_word w; w.u = u; *v = w.i; }
template <typename T, typename F>
static __device__ T gir_chain(long long* status, long long k, long long stride, T agg, T ident, F op) {
  unsigned long long* st = (unsigned long long*)status;
  if (k == 0) {
    atomicExch(st, (2ull << 32) | gir_chain_bits(agg));
    return ident;
  }
  atomicExch(st, (1ull << 32) | gir_chain_bits(agg));
  T excl = ident;
  for (long long j = 1; j <= k; ++j) {
    unsigned long long w;
    do {
      w = *(volatile unsigned long long*)(st - j * stride);
    } while ((w >> 32) == 0ull);
    T v;
    gir_chain_get((unsigned)w, &v);
    excl = op(v, excl);
    if ((w >> 32) == 2ull) break;
  }
  atomicExch(st, (2ull << 32) | gir_chain_bits(op(excl, agg)));
  return excl;
}
struct gir_chain_op_add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct gir_chain_op_mul { template <typename T> __device__ T operator()(T a, T b) const { return a * b; } };
struct gir_chain_op_max { template <typename T> __device__ T operator()(T a, T b) const { return gir_max(a, b); } };
struct gir_chain_op_min { template <typename T> __device__ T operator()(T a, T b) const { return gir_min(a, b); } };
static __device__ __forceinline__ float gir_chain_low(float) { return -__int_as_float(0x7f800000); }
static __device__ __forceinline__ int gir_chain_low(int) { return (int)0x80000000u; }
static __device__ __forceinline__ float gir_chain_high(float) { return __int_as_float(0x7f800000); }
static __device__ __forceinline__ int gir_chain_high(int) { return 0x7fffffff; }
// 64-bit values: three words per block, [flag, aggregate, inclusive prefix]; a value is written before its flag
// with a fence between, and read after the flag with a fence between.
union gir_chain_word64 { unsigned long long u; double f; long long i; };
static __device__ __forceinline__ unsigned long long gir_chain_bits64(double v) { gir_chain_word64 w; w.f = v; return w.u; }
static __device__ __forceinline__ unsigned long long gir_chain_bits64(long long v) { gir_chain_word64 w; w.i = v; return w.u; }
static __device__ __forceinline__ void gir_chain_get64(unsigned long long u, double* v) { gir_chain_word64 w; w.u = u; *v = w.f; }
static __device__ __forceinline__ void gir_chain_get64(unsigned long long u, long long* v) { gir_chain_word64 w; w.u = u; *v = w.i; }
template <typename T, typename F>
static __device__ T gir_chain64(long long* status, long long k, long long stride, T agg, T ident, F op) {
  volatile unsigned long long* st = (volatile unsigned long long*)status;
  T excl = ident;
  if (k > 0) {
    st[1] = gir_chain_bits64(agg);
    __threadfence();
    atomicExch((unsigned long long*)status, 1ull);
    for (long long j = 1; j <= k; ++j) {
      volatile unsigned long long* p = st - j * stride;
      unsigned long long f;
      do {
        f = p[0];
      } while (f == 0ull);
      __threadfence();
      T v;
      gir_chain_get64(f == 2ull ? p[2] : p[1], &v);
      excl = op(v, excl);
      if (f == 2ull) break;
    }
  }
  st[2] = gir_chain_bits64(k > 0 ? op(excl, agg) : agg);
  __threadfence();
  atomicExch((unsigned long long*)status, 2ull);
  return excl;
}
static __device__ __forceinline__ double gir_chain_low(double) { return -__longlong_as_double(0x7ff0000000000000LL); }
static __device__ __forceinline__ long long gir_chain_low(long long) { return (long long)0x8000000000000000ull; }
static __device__ __forceinline__ double gir_chain_high(double) { return __longlong_as_double(0x7ff0000000000000LL); }
static __device__ __forceinline__ long long gir_chain_high(long long) { return 0x7fffffffffffffffll; }
// one entry per op; the value's type picks the one-word (32-bit) or three-word (64-bit) look-back
template <typename F> static __device__ float gir_chain_run(long long* s, long long k, long long d, float a, float i, F op) {
  return gir_chain(s, k, d, a, i, op);
}
template <typename F> static __device__ int gir_chain_run(long long* s, long long k, long long d, int a, int i, F op) {
  return gir_chain(s, k, d, a, i, op);
}
template <typename F> static __device__ double gir_chain_run(long long* s, long long k, long long d, double a, double i, F op) {
  return gir_chain64(s, k, d, a, i, op);
}
template <typename F>
static __device__ long long gir_chain_run(long long* s, long long k, long long d, long long a, long long i, F op) {
  return gir_chain64(s, k, d, a, i, op);
}
template <typename T> static __device__ T gir_chain_sum(long long* s, long long k, T a, long long d) {
  return gir_chain_run(s, k, d, a, (T)0, gir_chain_op_add());
}
template <typename T> static __device__ T gir_chain_prod(long long* s, long long k, T a, long long d) {
  return gir_chain_run(s, k, d, a, (T)1, gir_chain_op_mul());
}
template <typename T> static __device__ T gir_chain_max(long long* s, long long k, T a, long long d) {
  return gir_chain_run(s, k, d, a, gir_chain_low(a), gir_chain_op_max());
}
template <typename T> static __device__ T gir_chain_min(long long* s, long long k, T a, long long d) {
  return gir_chain_run(s, k, d, a, gir_chain_high(a), gir_chain_op_min());
}
"""


class CStylePrinter:
    """Prints `codegen.ast` kernels as C++ source. Subclasses set `spell` (see docs/codegen.md)."""

    name = "cstyle"
    warp_size = 32
    spell: dict[str, str] = {}
    dtypes: dict[str, str] = {}
    # infinity and NaN by literal suffix ("f" float, "" double), from their bits: NVRTC (cupy) has neither
    # __builtin_huge_valf nor math.h's INFINITY; CUDA and HIP have both bit casts (the emulator header defines them)
    INF = {"f": "__int_as_float(0x7f800000)", "": "__longlong_as_double(0x7ff0000000000000LL)"}
    NAN = {"f": "__int_as_float(0x7fc00000)", "": "__longlong_as_double(0x7ff8000000000000LL)"}

    # ---------------------------------------------------------------- module
    def prelude(self, dtypes: set[str], chain: bool = False) -> str:
        lines = [self.spell["include"]]
        if "f16" in dtypes:
            lines.append(self.spell["include_f16"])
        if "bf16" in dtypes:
            lines.append(self.spell["include_bf16"])
        return "\n".join(l for l in lines if l) + "\n\n" + HELPERS + (CHAIN_HELPERS if chain else "")

    def kernel(self, k: C.KernelFunc) -> str:
        self.index_ctype = "long long" if k.index_type == "int64" else "int"
        params = ", ".join(self.param(p) for p in k.params)
        head = self.spell["kernel"].format(threads=k.threads, name=k.name, params=params)
        lines = [head + " {"]
        for d in k.shared:
            lines += self.stmt(d, 1)
        for s in k.body:
            lines += self.stmt(s, 1)
        return "\n".join(lines + ["}"]) + "\n"

    def param(self, p: C.Param) -> str:
        if p.kind == "size":
            return f"{self.ctype('index')} {p.name}"
        const = "const " if p.const else ""
        return f"{const}{self.ctype(p.ctype)}* __restrict__ {p.name}"

    def ctype(self, t: str) -> str:
        if t == "index":
            return self.index_ctype
        return {"float": "float", "double": "double", "int": "int", "i64": "long long", "bool": "bool"}.get(t) \
            or self.dtypes[t]

    def vtype(self, dtype: str, nbytes: int) -> str:
        if dtype == "f32":
            return {4: "float", 8: "float2", 16: "float4"}[nbytes]
        if dtype == "f64":
            return {8: "double", 16: "double2"}[nbytes]
        return {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}[nbytes]

    # ------------------------------------------------------------ statements
    def stmt(self, s: C.CStmt, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(s, C.Decl):
            space = self.spell["shared"] + " " if s.space == "shared" else ""
            if s.size is not None:
                return [f"{pad}{space}{self.ctype(s.ctype)} {s.name}[{s.size}] __attribute__((aligned(16)));"]
            init = f" = {self.expr(s.init)}" if s.init is not None else ""
            return [f"{pad}{self.ctype(s.ctype)} {s.name}{init};"]
        if isinstance(s, C.Assign):
            return [f"{pad}{self.expr(s.lhs)} = {self.expr(s.rhs)};"]
        if isinstance(s, C.For):
            t = self.index_ctype
            inc = f"++{s.var}" if s.step == 1 else f"{s.var} += {s.step}"
            lines = [f"{pad}#pragma unroll"] if s.unroll else []
            lines.append(f"{pad}for ({t} {s.var} = {self.expr(s.lo)}; {s.var} < {self.expr(s.hi)}; {inc}) {{")
            return lines + self.block(s.body, depth + 1) + [pad + "}"]
        if isinstance(s, C.If):
            if s.cond == C.Num(True, "b"):
                return self.block(s.then, depth)
            lines = [f"{pad}if ({self.expr(s.cond)}) {{", *self.block(s.then, depth + 1)]
            if s.orelse:
                lines += [pad + "} else {", *self.block(s.orelse, depth + 1)]
            return lines + [pad + "}"]
        if isinstance(s, C.Block):
            return [pad + "{", *self.block(s.body, depth + 1), pad + "}"]
        if isinstance(s, C.Barrier):
            return [pad + self.spell["barrier_" + s.level] + ";"]
        if isinstance(s, C.Comment):
            return [f"{pad}// {s.text}"]
        if isinstance(s, C.Eval):
            return [f"{pad}{self.expr(s.expr)};"]
        raise TypeError(f"not a statement: {s!r}")

    def block(self, body, depth: int) -> list[str]:
        return [line for s in body for line in self.stmt(s, depth)]

    # ----------------------------------------------------------- expressions
    def expr(self, e: C.CExpr, parent: int = 0, right: bool = False) -> str:
        text, prec = self._expr(e)
        if prec < parent or (right and prec == parent and prec < _UNARY):
            return f"({text})"
        return text

    def _expr(self, e: C.CExpr) -> tuple[str, int]:
        if isinstance(e, C.Id):
            return e.name, _ATOM
        if isinstance(e, C.Num):
            return self.literal(e)
        if isinstance(e, C.Bin):
            p = _PREC[e.op]
            return f"{self.expr(e.lhs, p)} {e.op} {self.expr(e.rhs, p, right=True)}", p
        if isinstance(e, C.Un):
            return f"{e.op}{self.expr(e.operand, _UNARY + 1)}", _UNARY
        if isinstance(e, C.Call):
            return f"{e.fn}({', '.join(self.expr(a) for a in e.args)})", _ATOM
        if isinstance(e, C.Intrinsic):
            return self.intrinsic(e), _ATOM
        if isinstance(e, C.Special):
            return self.spell[e.kind].format("xyz"[e.dim]), _ATOM
        if isinstance(e, C.Index):
            return f"{e.base}[{self.expr(e.index)}]", _ATOM
        if isinstance(e, C.VecRef):
            const = "const " if e.const else ""
            vt = self.vtype(e.dtype, e.nbytes)
            return f"*reinterpret_cast<{const}{vt}*>(&{e.base}[{self.expr(e.index)}])", _UNARY
        if isinstance(e, C.Cond):
            return f"({self.expr(e.cond, 1)} ? {self.expr(e.then, 1)} : {self.expr(e.orelse, 1)})", _ATOM
        if isinstance(e, C.Cast):
            return f"({self.ctype(e.ctype)})({self.expr(e.operand)})", _UNARY
        if isinstance(e, C.Verbatim):
            return e.text, _ATOM if _one_group(e.text) else 0
        if isinstance(e, C.AddrAligned):
            addr = f"reinterpret_cast<size_t>(&{e.base}[{self.expr(e.index)}])"
            return f"({addr} & {e.nbytes - 1}) == 0", _PREC["=="]
        raise TypeError(f"not an expression: {e!r}")

    def literal(self, e: C.Num) -> tuple[str, int]:
        if e.kind == "b":
            return ("true" if e.value else "false"), _ATOM
        if e.kind in ("f", "d"):   # float literals carry an f suffix, double ones none
            v, suffix = float(e.value), "f" if e.kind == "f" else ""
            if math.isnan(v):
                return self.NAN[suffix], _ATOM
            if math.isinf(v):
                return ("" if v > 0 else "-") + self.INF[suffix], _ATOM if v > 0 else _UNARY
            text = repr(v)
            if "e" not in text and "." not in text:
                text += ".0"
            return text + suffix, _UNARY if v < 0 else _ATOM
        v = int(e.value)
        text = str(v) + ("LL" if abs(v) > 2**31 - 1 else "")
        return text, _UNARY if v < 0 else _ATOM

    def intrinsic(self, e: C.Intrinsic) -> str:
        args = [self.expr(a) for a in e.args]
        if e.name == "shfl_xor":
            return self.spell["shfl_xor"].format(*args, mask=f"0x{e.args[3].value:08x}u")
        return self.spell[e.name].format(*args)

    def declared_dtypes(self, k: C.KernelFunc) -> set[str]:
        """The element types the kernel names: parameters, on-chip arrays, declarations, casts and conversions
        anywhere in its statements and expressions (`f32(f16(x))` inside an f32 kernel needs the f16 header)."""
        out = {p.ctype for p in k.params} | {d.ctype for d in k.shared}
        for node in _walk(k.body):
            if isinstance(node, (C.Decl, C.Cast)):
                out.add(node.ctype)
            elif isinstance(node, C.Intrinsic) and node.name in _CONVERSIONS:
                out.add(_CONVERSIONS[node.name])
        return out


_CONVERSIONS = {"h2f": "f16", "f2h": "f16", "bf2f": "bf16", "f2bf": "bf16"}


def _walk(node):
    """Every AST node under `node` (a node, or a list/tuple of them), depth first."""
    if isinstance(node, (list, tuple)):
        for item in node:
            yield from _walk(item)
    elif dataclasses.is_dataclass(node):
        yield node
        for f in dataclasses.fields(node):
            yield from _walk(getattr(node, f.name))


def _one_group(text: str) -> bool:
    """`text` is one token (a name or number) or one parenthesised group: no operator can split it."""
    if text.replace("_", "a").replace(".", "0").isalnum():
        return True
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(text) - 1:
            return False
    return True
