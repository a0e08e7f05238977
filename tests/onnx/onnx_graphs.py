"""ONNX graphs the importer tests build with onnx.helper: the memory-bound parts of a BERT encoder layer and
of a LLaMA block, with the matmuls between them."""
from __future__ import annotations

import math
import zlib

import numpy as np

import onnx
from onnx import TensorProto as T
from onnx import helper as h

def const(name: str, value) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.asarray(value), name)


def weight(name: str, shape) -> onnx.TensorProto:
    """Seeded by its name: the same values whichever graphs were built before (a test alone reproduces)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return const(name, rng.standard_normal(shape).astype(np.float32))


def model(nodes, inputs, outputs, initializers, opset: int = 20) -> onnx.ModelProto:
    g = h.make_graph(nodes, "test", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(n, T.UNDEFINED, None) for n in outputs], initializers)
    m = h.make_model(g, opset_imports=[h.make_operatorsetid("", opset)])
    m.ir_version = 10
    return m


def bert_layer(heads: int = 4, head_dim: int = 8) -> onnx.ModelProto:
    """Attention scores → scale → mask → softmax → context → head transpose/merge; FFN bias + erf-GELU;
    residual + LayerNorm."""
    C = heads * head_dim
    nodes = [
        h.make_node("MatMul", ["q", "kt"], ["scores"]),
        h.make_node("Div", ["scores", "sqrt_d"], ["scaled"]),
        h.make_node("Add", ["scaled", "mask"], ["masked"]),
        h.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        h.make_node("MatMul", ["probs", "v"], ["ctx"]),
        h.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["ctx_t", "merged_shape"], ["ctx_m"]),
        h.make_node("MatMul", ["ctx_m", "w_ffn"], ["ffn"]),
        # bias + GELU in its erf form: 0.5 * x * (1 + erf(x / sqrt(2)))
        h.make_node("Add", ["ffn", "b_ffn"], ["pre"]),
        h.make_node("Div", ["pre", "sqrt2"], ["pre_s"]),
        h.make_node("Erf", ["pre_s"], ["erf"]),
        h.make_node("Add", ["erf", "one"], ["erf1"]),
        h.make_node("Mul", ["pre", "erf1"], ["g2"]),
        h.make_node("Mul", ["g2", "half"], ["gelu"]),
        h.make_node("MatMul", ["gelu", "w_out"], ["proj"]),
        h.make_node("Add", ["proj", "b_out"], ["proj_b"]),
        h.make_node("Add", ["proj_b", "residual"], ["res"]),
        h.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], epsilon=1e-12),
    ]
    inputs = [("q", T.FLOAT, ["batch", heads, "seq", head_dim]), ("kt", T.FLOAT, ["batch", heads, head_dim, "seq"]),
              ("v", T.FLOAT, ["batch", heads, "seq", head_dim]), ("mask", T.FLOAT, ["batch", 1, 1, "seq"]),
              ("residual", T.FLOAT, ["batch", "seq", C])]
    inits = [const("sqrt_d", np.float32(math.sqrt(head_dim))), const("merged_shape", np.array([0, 0, C], np.int64)),
             weight("w_ffn", (C, C)), weight("b_ffn", (C,)), const("sqrt2", np.float32(math.sqrt(2))),
             const("one", np.float32(1)), const("half", np.float32(0.5)), weight("w_out", (C, C)),
             weight("b_out", (C,)), weight("gamma", (C,)), weight("beta", (C,))]
    return model(nodes, inputs, ["y"], inits)


def llama_block(heads: int = 2, head_dim: int = 8, hidden: int = 16, ffn: int = 24) -> onnx.ModelProto:
    """RMSNorm (decomposed), q projection, RoPE (rotate-half with Slice/Concat), causal softmax with a mask
    input, SwiGLU."""
    half = head_dim // 2
    nodes = [
        # RMSNorm: x * 1 / sqrt(mean(x^2) + eps) * w
        h.make_node("Pow", ["x", "two"], ["x2"]),
        h.make_node("ReduceMean", ["x2", "last_axis"], ["ms"], keepdims=1),
        h.make_node("Add", ["ms", "eps"], ["ms_eps"]),
        h.make_node("Sqrt", ["ms_eps"], ["rms"]),
        h.make_node("Div", ["x", "rms"], ["xn"]),
        h.make_node("Mul", ["xn", "w_norm"], ["h"]),
        h.make_node("MatMul", ["h", "w_q"], ["q"]),
        h.make_node("Reshape", ["q", "heads_shape"], ["q4"]),          # [B, S, H, D]: splits the last axis
        # RoPE: q * cos + rotate_half(q) * sin
        h.make_node("Slice", ["q4", "zero", "half", "last_axis"], ["q_lo"]),
        h.make_node("Slice", ["q4", "half", "dim", "last_axis"], ["q_hi"]),
        h.make_node("Neg", ["q_hi"], ["q_hi_neg"]),
        h.make_node("Concat", ["q_hi_neg", "q_lo"], ["q_rot"], axis=-1),
        h.make_node("Mul", ["q4", "cos"], ["q_cos"]),
        h.make_node("Mul", ["q_rot", "sin"], ["q_sin"]),
        h.make_node("Add", ["q_cos", "q_sin"], ["q_rope"]),
        # attention probabilities with a causal mask input
        h.make_node("MatMul", ["qh", "kt"], ["scores"]),
        h.make_node("Mul", ["scores", "scale"], ["scaled"]),
        h.make_node("Add", ["scaled", "causal_mask"], ["masked"]),
        h.make_node("Softmax", ["masked"], ["probs"], axis=3),
        # SwiGLU: silu(gate) * up
        h.make_node("MatMul", ["h", "w_gate"], ["gate"]),
        h.make_node("MatMul", ["h", "w_up"], ["up"]),
        h.make_node("Sigmoid", ["gate"], ["sg"]),
        h.make_node("Mul", ["gate", "sg"], ["silu"]),
        h.make_node("Mul", ["silu", "up"], ["act"]),
        h.make_node("MatMul", ["act", "w_down"], ["down"]),
    ]
    inputs = [("x", T.FLOAT, ["batch", "seq", hidden]), ("cos", T.FLOAT, ["seq", 1, head_dim]),
              ("sin", T.FLOAT, ["seq", 1, head_dim]), ("qh", T.FLOAT, ["batch", heads, "seq", head_dim]),
              ("kt", T.FLOAT, ["batch", heads, head_dim, "seq"]),
              ("causal_mask", T.FLOAT, [1, 1, "seq", "seq"])]
    inits = [const("two", np.float32(2)), const("last_axis", np.array([-1], np.int64)),
             const("eps", np.float32(1e-6)), weight("w_norm", (hidden,)), weight("w_q", (hidden, heads * head_dim)),
             const("heads_shape", np.array([0, 0, heads, head_dim], np.int64)),
             const("zero", np.array([0], np.int64)), const("half", np.array([half], np.int64)),
             const("dim", np.array([head_dim], np.int64)),
             const("scale", np.float32(1 / math.sqrt(head_dim))), weight("w_gate", (hidden, ffn)),
             weight("w_up", (hidden, ffn)), weight("w_down", (ffn, hidden))]
    return model(nodes, inputs, ["q_rope", "probs", "down"], inits)
