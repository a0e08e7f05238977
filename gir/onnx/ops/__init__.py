"""The lowering table: ONNX op_type → the function that lowers one node into a FunctionBuilder.

A lowering reads its inputs with `b.input(node, k)`, its attributes with `attributes(node)`, and defines its
outputs with `b.define` / `b.reduce` / `b.bind`; it raises `Unsupported` for the cases it leaves out.
Modules register with `@lowers(...)`; `data` names the input positions that carry tensors (the others must
be constants or only need their shape, so they are no edges of the dataflow graph).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import onnx
from gir.onnx.build import FunctionBuilder

Lowering = Callable[[FunctionBuilder, onnx.NodeProto], None]


@dataclass(frozen=True)
class OpLowering:
    fn: Lowering
    data: tuple[int, ...] | None  # input positions that carry data; None: all


TABLE: dict[str, OpLowering] = {}

# compute-bound operators: left to a library (matmul, convolution, recurrent cells, attention)
COMPUTE_BOUND = frozenset({
    "MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Conv", "ConvTranspose", "ConvInteger", "QLinearConv",
    "DeformConv", "Einsum", "Attention", "LSTM", "GRU", "RNN"})


def lowers(*op_types: str, data: tuple[int, ...] | None = None) -> Callable[[Lowering], Lowering]:
    def register(fn: Lowering) -> Lowering:
        for op in op_types:
            if op in TABLE:
                raise ValueError(f"two lowerings for ONNX op {op}")
            TABLE[op] = OpLowering(fn, data)
        return fn
    return register


def data_inputs(node: onnx.NodeProto) -> list[str]:
    """The tensors a node reads as data (its dataflow edges)."""
    entry = TABLE.get(node.op_type)
    positions = range(len(node.input)) if entry is None or entry.data is None else entry.data
    return [node.input[p] for p in positions if p < len(node.input) and node.input[p]]


def _register_all() -> None:
    import importlib

    for module in ("elementwise", "normalize", "reduce", "scan", "views"):  # each registers its lowerings
        importlib.import_module(f"gir.onnx.ops.{module}")


_register_all()
