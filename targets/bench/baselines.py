"""Framework versions of the benchmark operators (torch eager / torch.compile / cupy), for baselines on a GPU.

Each function takes the case's inputs (device arrays in the case's dtype, in parameter order) and returns the
outputs; they are the same math as targets/bench/programs.py.
"""
from __future__ import annotations


def torch_op(op: str):
    import torch
    import torch.nn.functional as F

    def rmsnorm(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)

    table = {
        "softmax": lambda x: torch.softmax(x, -1),
        "log_softmax": lambda x: torch.log_softmax(x, -1),
        "layernorm": lambda x, g, b: F.layer_norm(x, (x.shape[-1],), g, b, 1e-5),
        "rmsnorm": rmsnorm,
        "sum_dim1": lambda x: x.sum(1), "sum_last": lambda x: x.sum(-1),
        "mean_dim1": lambda x: x.mean(1), "mean_last": lambda x: x.mean(-1),
        "max_dim1": lambda x: x.amax(1), "max_last": lambda x: x.amax(-1),
        "transpose": lambda x: x.t().contiguous(),
        "permute0213": lambda x: x.permute(0, 2, 1, 3).contiguous(),
        "bias_gelu": lambda x, b: F.gelu(x + b, approximate="tanh"),
        "chain5": lambda x: torch.sigmoid(torch.exp(x.abs() * -0.5) * 2.0 + 1.0),
    }
    return table.get(op)


def cupy_op(op: str):
    import cupy as cp

    def softmax(x):
        e = cp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    table = {
        "softmax": softmax,
        "sum_dim1": lambda x: x.sum(1), "sum_last": lambda x: x.sum(-1),
        "mean_dim1": lambda x: x.mean(1), "mean_last": lambda x: x.mean(-1),
        "max_dim1": lambda x: x.max(1), "max_last": lambda x: x.max(-1),
        "transpose": lambda x: cp.ascontiguousarray(x.T),
        "permute0213": lambda x: cp.ascontiguousarray(x.transpose(0, 2, 1, 3)),
    }
    return table.get(op)
