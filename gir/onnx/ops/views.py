"""Layout operators as index maps: Identity, Transpose, Squeeze, Unsqueeze, Reshape, Flatten, Expand, Slice.

None of them defines a statement unless its output is a result of the function (then it is copied into
place). A reshape is an index map when it only inserts or removes axes of extent 1 or splits one axis into
several with static extents (`x[b, s, 64 * h + d]`). A reshape that merges axes is a reshape view at the
function's boundary (docs/gir.md "Views"): a parameter declared in the input's shape and viewed in the output's,
or a result declared in the output's shape and viewed in the input's; the partition cuts a chain after such a
reshape of a tensor it computes, so each side views the same bytes.
"""
from __future__ import annotations

import onnx
from gir import ir
from gir.onnx.build import LANGUAGE_REACH, FunctionBuilder, Index, Unsupported
from gir.onnx.expr import add, mul
from gir.onnx.model import Graph, attributes
from gir.onnx.ops import lowers

RESHAPE_REACH = "a view of an intermediate is not in the language " + LANGUAGE_REACH


@lowers("Identity")
def _identity(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    b.bind(node.output[0], b.input(node, 0))


@lowers("Dropout", data=(0,))
def _dropout(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    if len(node.output) > 1 and node.output[1]:
        raise Unsupported("Dropout's mask output is not imported", "attribute")
    training = b.const_input(node, 2, "training_mode")
    if training is not None and bool(training.reshape(-1)[0]):
        raise Unsupported("Dropout in training mode draws random numbers", "op")
    b.bind(node.output[0], b.input(node, 0))


@lowers("Transpose")
def _transpose(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    perm = list(attributes(node).get("perm", range(x.rank - 1, -1, -1)))
    shape = tuple(x.shape[p] for p in perm)

    def read(idx: Index) -> ir.Expr:
        src: list[ir.Expr] = [ir.Const(0)] * x.rank
        for k, p in enumerate(perm):
            src[p] = idx[k]
        return x.read(tuple(src))
    b.bind(node.output[0], b.view(x.dtype, shape, read))


@lowers("Squeeze", "Unsqueeze", "Reshape", "Flatten", data=(0,))
def _reshape(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    _, shape = b.out_type(node)
    _, src = b.tensor_type(node.input[0])
    groups = _match_axes(src, shape)
    if groups is None:
        _reshape_view(b, node, src, shape)
        return
    x = b.input(node, 0)
    split = any(len(outs) > 1 for _, outs in groups)

    def read(idx: Index) -> ir.Expr:
        src: list[ir.Expr] = [ir.Const(0)] * x.rank
        for d, outs in groups:
            offset: ir.Expr | None = None
            for k in outs:  # row-major: the last output axis is contiguous
                offset = idx[k] if offset is None else add(mul(offset, ir.Const(shape[k])), idx[k])
            src[d] = offset
        return x.read(tuple(src))
    b.bind(node.output[0], b.view(x.dtype, shape, read, ranged=not split))


def _reshape_view(b: FunctionBuilder, node: onnx.NodeProto, src: tuple, shape: tuple) -> None:
    """A reshape that merges axes, as a parameter or result view: the input, when it comes from outside, is a
    parameter viewed in the output shape; else the output must be a result, declared in its shape and viewed
    in the input's. (The partition ends a function after such a reshape of a tensor it computes.)"""
    if not same_count(src, shape):
        raise Unsupported(f"{node.op_type} {list(src)} → {list(shape)}: the element counts are not equal as "
                          "products of the sizes", "shape")
    viewed = b.viewed_input(node, 0, shape)
    if viewed is not None:
        b.bind(node.output[0], viewed)
        return
    if node.output[0] not in b.result_names:
        raise Unsupported(f"{node.op_type} {list(src)} → {list(shape)} merges axes of a tensor computed in the same "
                          f"function and is read there; {RESHAPE_REACH}", "language")
    b.define_viewed(node.output[0], b.input(node, 0), shape)


def same_count(a: tuple, c: tuple) -> bool:
    """Whether two static/symbolic shapes have the same number of elements, as products of sizes."""
    def count(shape: tuple) -> tuple[int, list]:
        n, names = 1, []
        for d in shape:
            if isinstance(d, int):
                n *= d
            else:
                names.append(d)
        return n, sorted(map(str, names))
    return count(a) == count(c)


def boundary_reshape(graph: Graph, node: onnx.NodeProto) -> bool:
    """A Reshape / Flatten that merges axes (a view at a function's boundary, not an index map)."""
    if node.op_type not in ("Reshape", "Flatten") or not node.input or not node.output:
        return False
    src, dst = graph.tensors.get(node.input[0]), graph.tensors.get(node.output[0])
    if src is None or dst is None or src.shape is None or dst.shape is None:
        return False
    return _match_axes(tuple(src.shape), tuple(dst.shape)) is None


def _match_axes(src: tuple, dst: tuple) -> list[tuple[int, list[int]]] | None:
    """[(source axis, its output axes)] for the axes of extent other than 1, if every source axis becomes one
    output axis or splits into several static ones; None when axes are merged."""
    s_axes = [d for d, n in enumerate(src) if n != 1]
    d_axes = [d for d, n in enumerate(dst) if n != 1]
    out: list[tuple[int, list[int]]] = []
    j = 0
    for d in s_axes:
        if j >= len(d_axes):
            return None
        n = src[d]
        if dst[d_axes[j]] == n:
            out.append((d, [d_axes[j]]))
            j += 1
            continue
        if not isinstance(n, int):
            return None
        parts, prod = [], 1
        while j < len(d_axes) and isinstance(dst[d_axes[j]], int) and prod * dst[d_axes[j]] <= n and \
                n % (prod * dst[d_axes[j]]) == 0:
            prod *= dst[d_axes[j]]
            parts.append(d_axes[j])
            j += 1
            if prod == n:
                break
        if prod != n:
            return None
        out.append((d, parts))
    return out if j == len(d_axes) else None


@lowers("Expand", data=(0,))
def _expand(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    _, shape = b.out_type(node)

    def read(idx: Index) -> ir.Expr:
        return x.read(tuple(idx[len(idx) - x.rank:]) if x.rank else ())
    b.bind(node.output[0], b.view(x.dtype, shape, read, ranged=False))


@lowers("Slice", data=(0,))
def _slice(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    x = b.input(node, 0)
    _, shape = b.out_type(node)
    if b.graph.opset < 10:
        attrs = attributes(node)
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes, steps = list(attrs.get("axes", range(len(starts)))), [1] * len(starts)
    else:
        starts = [int(v) for v in b.const_input(node, 1, "starts").reshape(-1)]
        ends = [int(v) for v in b.const_input(node, 2, "ends").reshape(-1)]
        given_axes, given_steps = b.const_input(node, 3, "axes"), b.const_input(node, 4, "steps")
        axes = list(range(len(starts))) if given_axes is None else [int(v) for v in given_axes.reshape(-1)]
        steps = [1] * len(starts) if given_steps is None else [int(v) for v in given_steps.reshape(-1)]
    maps: dict[int, tuple[int, int]] = {}
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis %= x.rank
        n = x.shape[axis]
        if not isinstance(n, int):
            raise Unsupported(f"Slice of the symbolic axis {n}", "shape")
        first, _, stride = slice(start, end, step).indices(n)
        maps[axis] = (first, stride)

    def read(idx: Index) -> ir.Expr:
        src = list(idx)
        for axis, (first, stride) in maps.items():
            if x.shape[axis] == 1:
                continue
            term = idx[axis] if stride == 1 else mul(ir.Const(stride), idx[axis])
            # a prefix keeps `+ 0`: a plain `x[i]` would give i the range of x's whole axis (GIR ranges an
            # index by every tensor it indexes directly), `x[i + 0]` leaves the range to the reader
            whole = first == 0 and stride == 1 and shape[axis] == x.shape[axis]
            src[axis] = term if whole or (first == 0 and stride != 1) else add(term, ir.Const(first))
        return x.read(tuple(src))
    trivial = all(first == 0 and stride == 1 and shape[a] == x.shape[a] for a, (first, stride) in maps.items())
    b.bind(node.output[0], b.view(x.dtype, shape, read, ranged=trivial))


@lowers("Concat", "Split", "Pad", "Tile", "Gather", "GatherElements", "ScatterND", "DepthToSpace",
        "SpaceToDepth", "Resize", "TopK", "ArgMax", "ArgMin")
def _not_expressible(b: FunctionBuilder, node: onnx.NodeProto) -> None:
    why = {"Concat": "a piecewise index map (select between inputs by index range)",
           "Split": "outputs defined by index ranges of one input",
           "Pad": "reads guarded by index ranges",
           "Gather": "data-dependent indexing", "GatherElements": "data-dependent indexing",
           "ScatterND": "data-dependent writes",
           "TopK": "sorting", "ArgMax": "index-returning reductions", "ArgMin": "index-returning reductions",
           }.get(node.op_type, "'//' and '%' in indices")
    raise Unsupported(f"{node.op_type} needs {why}, not in the language yet {LANGUAGE_REACH}", "language")
