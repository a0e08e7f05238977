"""Hand-written numpy references for the operator-layer programs in samples/.

Every reference is written from the mathematics of the operator (not from the GIR text) and computes in
float64.  ``REFERENCES[name] = (ref_fn, sizes_list)``: ``ref_fn(**inputs)`` returns a dict of result name to
array; each entry of ``sizes_list`` binds every size symbol of the program (include 1, non-powers of two and
tails).  ``INPUT_MAKERS[name][param] = fn(shape, sizes, rng)`` overrides the default random input of a parameter
whose values are constrained (class indices, labels).
"""

from __future__ import annotations

import math

import numpy as np

try:  # scipy is optional; math.erf is exact enough in float64
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover
    _erf = np.vectorize(math.erf, otypes=[np.float64])


def _f(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _softmax(z: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; rows of all -inf are not expected."""
    m = z.max(axis=-1, keepdims=True)
    e = np.exp(z - m)
    return e / e.sum(axis=-1, keepdims=True)


def _logsumexp(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=-1, keepdims=True)
    return (np.log(np.exp(z - m).sum(axis=-1, keepdims=True)) + m)[..., 0]


def _layernorm(h: np.ndarray, gamma, beta, eps: float) -> np.ndarray:
    mu = h.mean(axis=-1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
    return (h - mu) / np.sqrt(var + eps) * _f(gamma) + _f(beta)


# ---------------------------------------------------------------- references


def softmax(x):
    return {"y": _softmax(_f(x))}


def softmax_f16(x):
    return {"y": _softmax(_f(x))}


def log_softmax(x):
    x = _f(x)
    return {"y": x - _logsumexp(x)[:, None]}


def layernorm(x, gamma, beta):
    return {"y": _layernorm(_f(x), gamma, beta, 1e-5)}


def layernorm_768(x, gamma, beta):
    return {"y": _layernorm(_f(x), gamma, beta, 1e-5)}


def rmsnorm(x, w):
    x = _f(x)
    rms = np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6)
    return {"y": x / rms * _f(w)}


def rmsnorm_bf16(x, w):
    return rmsnorm(x, w)


def add_layernorm(x, res, gamma, beta):
    h = _f(x) + _f(res)
    return {"h": h, "y": _layernorm(h, gamma, beta, 1e-5)}


def bias_gelu_tanh(x, bias):
    t = _f(x) + _f(bias)
    c = math.sqrt(2.0 / math.pi)
    return {"y": 0.5 * t * (1.0 + np.tanh(c * (t + 0.044715 * t**3)))}


def bias_gelu_erf(x, bias):
    t = _f(x) + _f(bias)
    return {"y": 0.5 * t * (1.0 + _erf(t / math.sqrt(2.0)))}


def row_sum(x):
    return {"y": _f(x).sum(axis=1)}


def col_sum(x):
    return {"y": _f(x).sum(axis=0)}


def row_mean(x):
    m = _f(x).mean(axis=1)
    return {"y": m, "y2": m}


def row_max(x):
    x = _f(x)
    return {"y": x.max(axis=1), "ymin": x.min(axis=1), "yrange": x.max(axis=1) - x.min(axis=1)}


def reduce_mid(x):
    return {"y": _f(x).sum(axis=1)}


def transpose2d(x):
    return {"y": _f(x).T}


def permute0213(x):
    return {"y": np.transpose(_f(x), (0, 2, 1, 3))}


def reverse_rows(x):
    return {"y": _f(x)[:, ::-1]}


def scaled_causal_softmax(x, scale):
    z = _f(x) * float(scale)
    s = z.shape[-1]
    causal = np.tril(np.ones((s, s), dtype=bool))  # key index <= query index
    z = np.where(causal, z, -np.inf)
    return {"y": _softmax(z)}


def masked_softmax(x, mask):
    z = np.where(np.asarray(mask, dtype=bool), _f(x), -10000.0)
    return {"y": _softmax(z)}


def cross_entropy(x, target):
    x = _f(x)
    tgt = np.asarray(target).astype(np.int64)
    picked = x[np.arange(x.shape[0]), tgt]
    loss_row = _logsumexp(x) - picked
    return {"loss_row": loss_row, "loss": np.array(loss_row.mean())}


def soft_cross_entropy(x, t):
    x = _f(x)
    logp = x - _logsumexp(x)[:, None]
    loss_row = -(_f(t) * logp).sum(axis=1)
    return {"loss_row": loss_row, "loss": np.array(loss_row.mean())}


def group_norm(x, gamma, beta):
    x = _f(x)
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(2, 3), keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5) * _f(gamma)[None, :, :, None] + _f(beta)[None, :, :, None]
    return {"y": y}


def elementwise_chain(x, a, bias):
    x = _f(x)
    sig = 1.0 / (1.0 + np.exp(-(x * _f(a) + _f(bias))))
    u = sig * np.tanh(x) - np.abs(x)
    v = 0.5 * np.sqrt(x * x + 1.0) - np.clip(x, -1.0, 1.0)
    w = (np.abs(x) + 1.0) ** 1.5 - np.log1p(np.exp(-np.abs(x)))
    return {"y": u + v + w}


def swiglu(x, g):
    x = _f(x)
    return {"y": x / (1.0 + np.exp(-x)) * _f(g)}


def activations(x, bias):
    """Textbook formulas (not the evaluator's stable rewrites): erf GELU, tanh GELU, x * sigmoid(x), log(1 + e^t)."""
    x = _f(x)
    t = x + _f(bias)
    gelu = 0.5 * t * (1.0 + _erf(t / math.sqrt(2.0)))
    gelu_tanh = 0.5 * t * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * t**3)))
    silu = t / (1.0 + np.exp(-t))
    softplus = np.log(1.0 + np.exp(t))
    y = 0.5 * (gelu + gelu_tanh) * silu + np.clip(softplus, 0.1, 2.0)
    return {"y": y, "q": np.round(np.clip(x, -4.0, 4.0) * 8.0) / 8.0}


def relu_mask(x):
    x = _f(x)
    m = x > 0.0
    return {"y": np.maximum(x, 0.0), "m": m, "cnt": m.sum(axis=1).astype(np.int64)}


def onehot(label, w):
    lab = np.asarray(label).astype(np.int64)
    w = _f(w)
    hit = lab[:, None] == np.arange(w.shape[0])[None, :]
    return {"y": np.where(hit, w[None, :], 0.0)}


def mse_loss(x, t):
    d = _f(x) - _f(t)
    return {"loss": np.array((d * d).mean())}


def l2_normalize(x):
    x = _f(x)
    norm = np.sqrt((x * x).sum(axis=1, keepdims=True))
    return {"y": x / np.maximum(norm, 1e-12)}


# ---------------------------------------------------------------- sizes

# -------------------------------------------------- generality: any axis, broadcasts, cross-team reductions
def _softmax_axis(z: np.ndarray, axis: int) -> np.ndarray:
    m = z.max(axis=axis, keepdims=True)
    e = np.exp(z - m)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_axis0(x):
    return {"y": _softmax_axis(_f(x), 0)}


def softmax_mid(x):
    return {"y": _softmax_axis(_f(x), 1)}


def softmax_col(x):
    return {"y": _softmax_axis(_f(x), 0)}


def layernorm_bwd(x, dy, gamma, mu, rstd):
    """Backward of y = (x - mu) * rstd * gamma + beta over the last axis (mu, rstd saved by the forward):
    dgamma = sum_rows dy * xhat, dbeta = sum_rows dy, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
    g = dy * gamma."""
    x, dy, gamma = _f(x), _f(dy), _f(gamma)
    mu, rstd = _f(mu)[:, None], _f(rstd)[:, None]
    xhat = (x - mu) * rstd
    g = dy * gamma[None, :]
    dx = rstd * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
    return {"dx": dx, "dgamma": (dy * xhat).sum(axis=0), "dbeta": dy.sum(axis=0)}


def rope(x, cs, sn):
    """Rotate every pair (x0, x1) by the angle whose cosine/sine are cs/sn[s, k]."""
    x = _f(x)
    c, s = _f(cs)[None, :, None, :], _f(sn)[None, :, None, :]
    x0, x1 = x[..., 0], x[..., 1]
    return {"y": np.stack([x0 * c - x1 * s, x1 * c + x0 * s], axis=-1)}


def broadcast_scale(x, w):
    return {"y": _f(x) * _f(w)[None, None, :, :]}


def channel_stats(x):
    x = _f(x)
    mean = x.mean(axis=(0, 2, 3))
    return {"mean": mean, "var": ((x - mean[None, :, None, None]) ** 2).mean(axis=(0, 2, 3))}


def group_norm_affine(x, gamma, beta):
    return group_norm(x, gamma, beta)


def group_norm_view(x, gamma, beta):
    """Group norm of x: [N, C, H, W] in 4 groups (ONNX GroupNormalization), per-channel scale and bias."""
    n, c = x.shape[:2]
    y = group_norm(_f(x).reshape(n, 4, c // 4, -1), _f(gamma).reshape(4, c // 4), _f(beta).reshape(4, c // 4))["y"]
    return {"y": y.reshape(x.shape)}


ROWS = [{"M": 7, "N": 1000}, {"M": 1, "N": 1025}, {"M": 3, "N": 1}, {"M": 33, "N": 17}, {"M": 1, "N": 1}]
NORM = [{"M": 5, "N": 1024}, {"M": 1, "N": 1}, {"M": 13, "N": 769}, {"M": 2, "N": 3}]
ELEMENTWISE = [{"M": 8, "N": 1000}, {"M": 1, "N": 1}, {"M": 3, "N": 4097}, {"M": 31, "N": 7}]
REDUCE = [{"M": 7, "N": 1000}, {"M": 1, "N": 1}, {"M": 129, "N": 33}, {"M": 1, "N": 4099}, {"M": 5, "N": 1}]

def argreduce(x):
    """numpy's first-index rule on ties; any/all over each row."""
    x = _f(x)
    return {"top": np.argmax(x, axis=1), "low": np.argmin(x, axis=1), "any_pos": (x > 0).any(axis=1),
            "all_pos": (x > 0).all(axis=1)}


def rope_flat(x, cs, sn):
    """Interleaved pairs (x[2k], x[2k+1]) of a flat row rotated by angle k: y = R(k) (x[2k], x[2k+1])."""
    x, c, s = _f(x), np.repeat(_f(cs), 2, axis=1), np.repeat(_f(sn), 2, axis=1)
    even, odd = x[:, 0::2], x[:, 1::2]
    partner = np.stack([-odd, even], axis=2).reshape(x.shape)  # (-x[2k+1], x[2k]) at (2k, 2k+1)
    return {"y": x * c + partner * s}



def cumsum(x, w):
    """Running sum of x * w along rows; running max from the bottom row up; suffix products."""
    x, w = _f(x), _f(w)
    c = np.cumsum(x * w, axis=1)
    r = np.flip(np.maximum.accumulate(np.flip(x, 0), axis=0), 0)
    p = np.flip(np.cumprod(np.flip(1.0 + 0.01 * x, 1), axis=1), 1)
    return {"c": c, "r": r, "p": p}

def logsumexp_f64(x):
    """log(sum(exp(x))) per row, shifted by the row maximum, in float64."""
    x = np.asarray(x, np.float64)
    m = x.max(axis=1)
    y = np.log(np.exp(x - m[:, None]).sum(axis=1)) + m
    return {"y": y, "y32": y.astype(np.float32)}


REFERENCES = {
    "rope_flat": (rope_flat, [{"S": 7, "D": 66, "K": 33}, {"S": 1, "D": 2, "K": 1}, {"S": 5, "D": 130, "K": 65}]),
    "softmax": (softmax, ROWS),
    "softmax_f16": (softmax_f16, ROWS),
    "log_softmax": (log_softmax, ROWS),
    "layernorm": (layernorm, NORM),
    "layernorm_768": (layernorm_768, [{"M": 3}, {"M": 1}, {"M": 17}]),
    "rmsnorm": (rmsnorm, NORM),
    "rmsnorm_bf16": (rmsnorm_bf16, NORM),
    "add_layernorm": (add_layernorm, [{"M": 4, "N": 768}, {"M": 1, "N": 1}, {"M": 9, "N": 1025}]),
    "bias_gelu_tanh": (bias_gelu_tanh, ELEMENTWISE),
    "bias_gelu_erf": (bias_gelu_erf, ELEMENTWISE),
    "row_sum": (row_sum, REDUCE),
    "col_sum": (col_sum, [{"M": 1000, "N": 7}, {"M": 1, "N": 1}, {"M": 33, "N": 129}, {"M": 257, "N": 1}]),
    "row_mean": (row_mean, REDUCE),
    "row_max": (row_max, REDUCE),
    "reduce_mid": (reduce_mid, [{"B": 2, "S": 100, "D": 64}, {"B": 1, "S": 1, "D": 1}, {"B": 3, "S": 7, "D": 129}]),
    "transpose2d": (transpose2d, [{"M": 7, "N": 13}, {"M": 1, "N": 1}, {"M": 64, "N": 33}, {"M": 1, "N": 100}]),
    "permute0213": (
        permute0213,
        [{"B": 2, "S": 7, "H": 3, "D": 16}, {"B": 1, "S": 1, "H": 1, "D": 1}, {"B": 3, "S": 33, "H": 4, "D": 5}],
    ),
    "reverse_rows": (reverse_rows, [{"M": 3, "N": 10}, {"M": 1, "N": 1}, {"M": 5, "N": 1025}]),
    "scaled_causal_softmax": (
        scaled_causal_softmax,
        [{"B": 2, "H": 3, "S": 17}, {"B": 1, "H": 1, "S": 1}, {"B": 1, "H": 2, "S": 64}],
    ),
    "masked_softmax": (masked_softmax, [{"M": 7, "N": 100}, {"M": 1, "N": 1}, {"M": 5, "N": 1025}, {"M": 16, "N": 2}]),
    "cross_entropy": (cross_entropy, [{"M": 16, "N": 1000}, {"M": 1, "N": 1}, {"M": 7, "N": 2}, {"M": 3, "N": 1025}]),
    "soft_cross_entropy": (soft_cross_entropy, [{"M": 16, "N": 1000}, {"M": 1, "N": 1}, {"M": 7, "N": 3}]),
    "group_norm": (
        group_norm,
        [
            {"N": 2, "G": 4, "CG": 3, "HW": 49},
            {"N": 1, "G": 1, "CG": 1, "HW": 1},
            {"N": 1, "G": 32, "CG": 2, "HW": 64},
            {"N": 3, "G": 2, "CG": 5, "HW": 7},
        ],
    ),
    "elementwise_chain": (elementwise_chain, ELEMENTWISE),
    "swiglu": (swiglu, ELEMENTWISE),
    "activations": (activations, [{"M": 7, "N": 33}, {"M": 1, "N": 1}, {"M": 33, "N": 7}, {"M": 3, "N": 1000}]),
    "relu_mask": (relu_mask, [{"M": 7, "N": 100}, {"M": 1, "N": 1}, {"M": 3, "N": 1025}]),
    "onehot": (onehot, [{"M": 7, "C": 10}, {"M": 1, "C": 1}, {"M": 100, "C": 33}]),
    "mse_loss": (mse_loss, [{"M": 7, "N": 1000}, {"M": 1, "N": 1}, {"M": 33, "N": 31}]),
    "l2_normalize": (l2_normalize, ROWS),
    "softmax_axis0": (softmax_axis0, [{"N": 7, "B": 3, "C": 33}, {"N": 1, "B": 1, "C": 1},
                                      {"N": 97, "B": 2, "C": 7}, {"N": 33, "B": 1, "C": 97}]),
    "softmax_mid": (softmax_mid, [{"B": 3, "N": 7, "C": 33}, {"B": 1, "N": 1, "C": 1},
                                  {"B": 2, "N": 97, "C": 7}, {"B": 1, "N": 33, "C": 97}]),
    "softmax_col": (softmax_col, [{"N": 7, "C": 33}, {"N": 1, "C": 1}, {"N": 97, "C": 7}, {"N": 33, "C": 97}]),
    "layernorm_bwd": (layernorm_bwd, [{"M": 7, "N": 33}, {"M": 1, "N": 1}, {"M": 97, "N": 7},
                                      {"M": 33, "N": 97}]),
    "rope": (rope, [{"B": 1, "S": 7, "H": 3, "K": 33}, {"B": 1, "S": 1, "H": 1, "K": 1},
                    {"B": 2, "S": 33, "H": 1, "K": 7}, {"B": 1, "S": 97, "H": 2, "K": 97}]),
    "broadcast_scale": (broadcast_scale, [{"A": 7, "B": 3, "C": 33, "D": 7}, {"A": 1, "B": 1, "C": 1, "D": 1},
                                          {"A": 2, "B": 97, "C": 1, "D": 33}, {"A": 1, "B": 1, "C": 7, "D": 97}]),
    "channel_stats": (channel_stats, [{"N": 2, "C": 7, "H": 3, "W": 33}, {"N": 1, "C": 1, "H": 1, "W": 1},
                                      {"N": 1, "C": 97, "H": 7, "W": 7}, {"N": 3, "C": 33, "H": 1, "W": 97}]),
    "group_norm_affine": (group_norm_affine, [{"N": 2, "G": 3, "CG": 7, "HW": 33}, {"N": 1, "G": 1, "CG": 1, "HW": 1},
                                              {"N": 1, "G": 7, "CG": 1, "HW": 97}, {"N": 2, "G": 1, "CG": 33, "HW": 7}]),
    "group_norm_view": (group_norm_view, [{"N": 2, "C": 12, "H": 3, "W": 5}, {"N": 1, "C": 4, "H": 1, "W": 1},
                                          {"N": 1, "C": 28, "H": 13, "W": 1}, {"N": 3, "C": 8, "H": 2, "W": 31}]),
    "cumsum": (cumsum, [{"M": 1, "N": 1}, {"M": 7, "N": 33}, {"M": 37, "N": 1031}, {"M": 97, "N": 5}]),
    "logsumexp_f64": (logsumexp_f64, [{"M": 1, "N": 1}, {"M": 7, "N": 33}, {"M": 37, "N": 129}, {"M": 3, "N": 1000}]),
    "argreduce": (argreduce, [{"M": 1, "N": 1}, {"M": 7, "N": 33}, {"M": 37, "N": 129}, {"M": 3, "N": 1000}]),
}


def _small_integers(shape, sizes, rng):
    """Values in -2..2: many ties (argmax takes the first) and rows both with and without a positive entry."""
    return rng.integers(-2, 3, size=shape).astype(np.float32)


def _class_indices(shape, sizes, rng):
    return rng.integers(0, sizes["N"], size=shape).astype(np.int32)


def _labels(shape, sizes, rng):
    return rng.integers(0, sizes["C"], size=shape).astype(np.int32)


def _probabilities(shape, sizes, rng):
    """Soft targets: positive rows summing to one (so the losses are positive, without cancellation)."""
    p = rng.random(shape) + 0.05
    return (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)


def _positive(shape, sizes, rng):
    """Reciprocal standard deviations: positive, as a forward pass saves them."""
    return (rng.random(shape) + 0.5).astype(np.float32)


INPUT_MAKERS = {
    "argreduce": {"x": _small_integers},
    "layernorm_bwd": {"rstd": _positive},
    "soft_cross_entropy": {"t": _probabilities},
    "cross_entropy": {"target": _class_indices},
    "onehot": {"label": _labels},
}


# Size relations a sample's indices or views require (gir check states them as size requirements): harnesses that
# bind every size to one value apply them (only to the names they bind: a harness may bind a view's derived sizes).
SIZE_RELATIONS = {"rope_flat": ("D", lambda s: 2 * s["K"]), "group_norm_view": ("C", lambda s: 4 * s["C"])}


def with_relations(name, sizes):
    """`sizes` adjusted to the sample's size relations (unchanged for samples without any)."""
    out = dict(sizes)
    if name in SIZE_RELATIONS:
        target, value = SIZE_RELATIONS[name]
        if target in out:
            out[target] = value(out)
    return out


def sample_inputs(name: str, func, sizes: dict, rng) -> dict[str, np.ndarray]:
    """Random inputs of a sample's function in its kernels' shapes (a view's sizes completed): INPUT_MAKERS where
    given, else normal floats without zeros, booleans, small positive integers."""
    makers = INPUT_MAKERS.get(name, {})
    out = {}
    for p in func.params:
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in p.type.shape)
        dt = np.dtype(p.type.dtype.numpy)
        if p.name in makers:
            v = makers[p.name](shape, sizes, rng)
        elif p.type.dtype.is_float:
            v = rng.standard_normal(shape)
            v[v == 0.0] = 0.5
        elif dt == np.bool_:
            v = rng.random(shape) < 0.5
        else:
            v = rng.integers(1, 10, size=shape)
        out[p.name] = np.asarray(v).astype(dt)
    return out
