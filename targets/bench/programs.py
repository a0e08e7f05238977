"""Operator-layer programs of the benchmark suites, templated by element type `{dt}`."""
from __future__ import annotations

PROGRAMS: dict[str, str] = {
    "softmax": """
func softmax(x: {dt}[M, N]) -> (y: {dt}[M, N]) {
  mx[i] = max(x[i, j])
  e[i, j] = exp(x[i, j] - mx[i])
  s[i] = sum(e[i, j])
  y[i, j] = e[i, j] / s[i]
}""",
    "log_softmax": """
func log_softmax(x: {dt}[M, N]) -> (y: {dt}[M, N]) {
  mx[i] = max(x[i, j])
  lse[i] = log(sum(exp(x[i, j] - mx[i]))) + mx[i]
  y[i, j] = x[i, j] - lse[i]
}""",
    "layernorm": """
func layernorm(x: {dt}[M, N], gamma: {dt}[N], beta: {dt}[N]) -> (y: {dt}[M, N]) {
  mu[i] = mean(x[i, j])
  d[i, j] = x[i, j] - mu[i]
  var[i] = mean(d[i, j] * d[i, j])
  y[i, j] = d[i, j] * rsqrt(var[i] + 1e-05) * gamma[j] + beta[j]
}""",
    "rmsnorm": """
func rmsnorm(x: {dt}[M, N], w: {dt}[N]) -> (y: {dt}[M, N]) {
  ms[i] = mean(x[i, j] * x[i, j])
  y[i, j] = x[i, j] * rsqrt(ms[i] + 1e-06) * w[j]
}""",
    "sum_dim1": """
func sum_dim1(x: {dt}[A, B, C]) -> (y: {dt}[A, C]) {
  y[a, c] = sum(x[a, b, c])
}""",
    "sum_last": """
func sum_last(x: {dt}[A, B, C]) -> (y: {dt}[A, B]) {
  y[a, b] = sum(x[a, b, c])
}""",
    "mean_dim1": """
func mean_dim1(x: {dt}[A, B, C]) -> (y: {dt}[A, C]) {
  y[a, c] = mean(x[a, b, c])
}""",
    "mean_last": """
func mean_last(x: {dt}[A, B, C]) -> (y: {dt}[A, B]) {
  y[a, b] = mean(x[a, b, c])
}""",
    "max_dim1": """
func max_dim1(x: {dt}[A, B, C]) -> (y: {dt}[A, C]) {
  y[a, c] = max(x[a, b, c])
}""",
    "max_last": """
func max_last(x: {dt}[A, B, C]) -> (y: {dt}[A, B]) {
  y[a, b] = max(x[a, b, c])
}""",
    "transpose": """
func transpose(x: {dt}[M, N]) -> (y: {dt}[N, M]) {
  y[j, i] = x[i, j]
}""",
    "permute0213": """
func permute0213(x: {dt}[B, S, H, D]) -> (y: {dt}[B, H, S, D]) {
  y[b, h, s, d] = x[b, s, h, d]
}""",
    "bias_gelu": """
func bias_gelu(x: {dt}[M, N], bias: {dt}[N]) -> (y: {dt}[M, N]) {
  t[i, j] = x[i, j] + bias[j]
  y[i, j] = 0.5 * t[i, j] * (1.0 + tanh(0.7978845608 * (t[i, j] + 0.044715 * t[i, j] * t[i, j] * t[i, j])))
}""",
    "chain5": """
func chain5(x: {dt}[M, N]) -> (y: {dt}[M, N]) {
  y[i, j] = sigmoid(exp(abs(x[i, j]) * -0.5) * 2.0 + 1.0)
}""",
    "cumsum_last": """
func cumsum_last(x: {dt}[M, N]) -> (y: {dt}[M, N]) {
  y[i, j] = cumsum(x[i, j], j)
}""",
    "cumsum_first": """
func cumsum_first(x: {dt}[M, N]) -> (y: {dt}[M, N]) {
  y[i, j] = cumsum(x[i, j], i)
}""",
    "cumsum_1d": """
func cumsum_1d(x: {dt}[N]) -> (y: {dt}[N]) {
  y[i] = cumsum(x[i], i)
}""",
    "cummax_rev_cols": """
func cummax_rev_cols(x: {dt}[M, N]) -> (y: {dt}[M, N]) {
  y[i, j] = cummax(x[i, j], i, reverse=1)
}""",
}


def program_text(op: str, dtype: str) -> str:
    """GIR source of benchmark operator `op` in element type `dtype` (f32, f16, bf16)."""
    return PROGRAMS[op].replace("{dt}", dtype).lstrip("\n")
