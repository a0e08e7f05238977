"""The expression builder: ONNX tensors as index maps, GIR statements, one function at a time.

An ONNX tensor is a `Value`: its element type, its ONNX shape and `read`, which maps one index expression per
ONNX axis to the GIR expression of that element. A tensor that a statement defines reads as `t[...]`; a view
(Transpose, Squeeze, an affine Reshape, a broadcast) composes its index map with its source and defines
nothing; a scalar constant reads as a literal. Axes of extent 1 are never indexed by a variable: a read
ignores the index given for them (that is ONNX broadcasting), and intermediates do not store them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

import onnx
from gir import ir
from gir.onnx.model import Graph
from gir.onnx.names import Namer, index_vars, sanitize
from gir.scan import is_scan
from gir.views import make_view
from gir.walk import walk

Index = tuple[ir.Expr, ...]
Body = Callable[[Index], ir.Expr]

LANGUAGE_REACH = "(issue: language reach)"

_DTYPES = {onnx.TensorProto.FLOAT: ir.DType.f32, onnx.TensorProto.DOUBLE: ir.DType.f64,
           onnx.TensorProto.FLOAT16: ir.DType.f16,
           onnx.TensorProto.BFLOAT16: ir.DType.bf16, onnx.TensorProto.INT32: ir.DType.i32,
           onnx.TensorProto.INT64: ir.DType.i64, onnx.TensorProto.BOOL: ir.DType.bool}


class Unsupported(Exception):
    """A node that this importer leaves out. `kind`: compute-bound, op, dtype, shape, attribute, language.
    `node`: the index of the node to blame when it is not the node being lowered."""

    def __init__(self, reason: str, kind: str = "op", node: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.node = node


def gir_dtype(elem_type: int) -> ir.DType:
    if elem_type in _DTYPES:
        return _DTYPES[elem_type]
    name = onnx.TensorProto.DataType.Name(elem_type).lower() if elem_type else "unknown"
    raise Unsupported(f"element type {name} is not a GIR element type", "dtype")


@dataclass(frozen=True)
class Value:
    dtype: ir.DType
    shape: tuple[ir.Dim, ...]
    read: Callable[[Index], ir.Expr]
    scalar: float | int | bool | None = None  # a broadcast constant

    @property
    def rank(self) -> int:
        return len(self.shape)


def view_dims(shape: Sequence[ir.Dim]) -> tuple[ir.Expr, ...]:
    """The dimensions of a reshape view (`as [...]`) of an ONNX shape: integers and size names."""
    return tuple(ir.Var(d) if isinstance(d, str) else ir.Const(d) for d in shape)


def literal(value, dtype: ir.DType) -> ir.Const:
    if dtype == ir.DType.bool:
        return ir.Const(bool(value))
    if dtype.is_int:
        return ir.Const(int(value))
    return ir.Const(float(value))


def broadcast_shapes(*shapes: Sequence[ir.Dim]) -> tuple[ir.Dim, ...]:
    """ONNX (numpy) multidirectional broadcasting, decided statically."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[ir.Dim] = []
    for k in range(rank):
        dims = {s[k - rank + len(s)] for s in shapes if k - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise Unsupported(f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast "
                              "statically", "shape")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def project(idx: Index, value: Value) -> Index:
    """The index of `value` inside a broadcast iteration space whose index is `idx` (right-aligned)."""
    return tuple(idx[len(idx) - value.rank:]) if value.rank else ()


def read_broadcast(value: Value, idx: Index) -> ir.Expr:
    return value.read(project(idx, value))


class FunctionBuilder:
    """Builds one GIR function from a list of ONNX nodes. `results`: the ONNX tensors the function returns."""

    def __init__(self, graph: Graph, results: Sequence[str], sizes: dict[str, str]):
        self.graph = graph
        self.result_names = list(results)
        self.sizes = sizes                     # ONNX dim_param → GIR size name
        self.namer = Namer(set(sizes.values()))
        self.avoid = set(sizes.values())       # index variables must not shadow size names
        self.values: dict[str, Value] = {}
        self.params: list[ir.Param] = []
        self.results: dict[str, ir.Param] = {}
        self.body: list[ir.Assign] = []
        self.inputs: dict[str, str] = {}       # GIR parameter → ONNX tensor
        self.outputs: dict[str, str] = {}      # GIR result → ONNX tensor
        self.constant_inputs: dict[str, np.ndarray] = {}  # GIR parameter → initializer value
        self.node_index = -1                   # the node being lowered
        self._views: list[int] = []            # views read by the statement being built (to blame)
        self._stmt_vars: set[str] = set()      # index variables of its left-hand side

    # ---------------------------------------------------------------- types
    def tensor_type(self, name: str) -> tuple[ir.DType, tuple[ir.Dim, ...]]:
        info = self.graph.tensors.get(name)
        if info is None or info.shape is None:
            raise Unsupported(f"the shape of '{name}' is unknown after shape inference", "shape")
        dims: list[ir.Dim] = []
        for d in info.shape:
            if d is None:
                raise Unsupported(f"'{name}' has a dimension that is neither static nor named", "shape")
            if isinstance(d, str):
                if d not in self.sizes:
                    self.sizes[d] = self._size_name(d)
                dims.append(self.sizes[d])
            elif d < 1:
                raise Unsupported(f"'{name}' has an empty dimension (shape {list(info.shape)})", "shape")
            else:
                dims.append(d)
        return gir_dtype(info.elem_type), tuple(dims)

    def _size_name(self, dim_param: str) -> str:
        name = sanitize(dim_param, "S")
        while name in self.namer.taken:
            name += "_"
        self.namer.taken.add(name)
        self.avoid.add(name)
        return name

    def out_type(self, node: onnx.NodeProto, k: int = 0, like: Value | None = None
                 ) -> tuple[ir.DType, tuple[ir.Dim, ...]]:
        """The type of output k; `like`: the Value whose type it has when shape inference did not say."""
        info = self.graph.tensors.get(node.output[k])
        if like is not None and (info is None or info.shape is None):
            return like.dtype, like.shape
        return self.tensor_type(node.output[k])

    # --------------------------------------------------------------- inputs
    def input(self, node: onnx.NodeProto, k: int) -> Value:
        """The Value of the node's k-th input: already defined here, a constant, or a new parameter."""
        name = node.input[k]
        if name in self.values:
            return self.values[name]
        dtype, shape = self.tensor_type(name)
        const = self.graph.constants.get(name)
        if const is not None and const.size == 1:
            scalar = const.reshape(()).item()
            value = Value(dtype, shape, lambda idx, c=literal(scalar, dtype): c, scalar=scalar)
        else:
            pname = self.namer.fresh(name)
            self.params.append(ir.Param(pname, ir.TensorType(dtype, shape)))
            self.inputs[pname] = name
            if const is not None:
                self.constant_inputs[pname] = const
            value = self.stored(pname, dtype, shape, every_axis=True)
        self.values[name] = value
        return value

    def optional_input(self, node: onnx.NodeProto, k: int) -> Value | None:
        return self.input(node, k) if len(node.input) > k and node.input[k] else None

    def const_input(self, node: onnx.NodeProto, k: int, what: str) -> np.ndarray | None:
        """The value of an input that must be a constant (axes, shapes, bounds); None if it is absent."""
        if len(node.input) <= k or not node.input[k]:
            return None
        value = self.graph.constants.get(node.input[k])
        if value is None:
            raise Unsupported(f"{node.op_type}'s {what} must be a constant (an initializer or Constant)",
                              "attribute")
        return value

    def viewed_input(self, node: onnx.NodeProto, k: int, shape: tuple[ir.Dim, ...]) -> Value | None:
        """Node input k as a new parameter declared in its ONNX shape and viewed in `shape` (a reshape: the same
        row-major bytes, docs/gir.md "Views"); None when the tensor is already a Value of this function. The
        tensor cannot also be read in its own shape here (one parameter, one view): such a read blames this
        node, which is then left out."""
        name = node.input[k]
        if name in self.values:
            return None
        dtype, outer = self.tensor_type(name)
        pname = self.namer.fresh(name)
        inner, view = make_view(ir.TensorType(dtype, outer), view_dims(shape), None)
        self.params.append(ir.Param(pname, inner, view))
        self.inputs[pname] = name
        const = self.graph.constants.get(name)
        if const is not None:
            self.constant_inputs[pname] = const
        self.values[name] = self.unreadable(dtype, outer, f"'{name}' is read reshaped here, so it cannot also "
                                            "be read in its own shape (a parameter has one view)")
        return self.stored(pname, dtype, shape, every_axis=True)

    def unreadable(self, dtype: ir.DType, shape: tuple[ir.Dim, ...], why: str) -> Value:
        """A Value whose reading leaves out the node being lowered now (the one that made it)."""
        node = self.node_index

        def read(idx: Index) -> ir.Expr:
            raise Unsupported(why + " " + LANGUAGE_REACH, "language", node=node)
        return Value(dtype, shape, read)

    # --------------------------------------------------------------- values
    def stored(self, name: str, dtype: ir.DType, shape: tuple[ir.Dim, ...], every_axis: bool) -> Value:
        """A Value reading tensor `name`. `every_axis`: parameters and results keep their axes of extent 1
        (read at index 0); intermediates do not store them."""
        keep = [d for d, n in enumerate(shape) if every_axis or n != 1]

        def read(idx: Index) -> ir.Expr:
            return ir.Ref(name, tuple(ir.Const(0) if shape[d] == 1 else idx[d] for d in keep))
        return Value(dtype, shape, read)

    def view(self, dtype: ir.DType, shape: tuple[ir.Dim, ...], read: Callable[[Index], ir.Expr],
             ranged: bool = True) -> Value:
        """A Value defined by an index map. `ranged=False`: the map does not give every axis a range (a split
        reshape, a slice, an expand), so only a statement that gets its ranges elsewhere can read it."""
        node = self.node_index

        def tracked(idx: Index) -> ir.Expr:
            if not ranged:
                self._views.append(node)
            # axes of extent 1 read at 0 whatever index a broadcasting reader gives
            return read(tuple(ir.Const(0) if n == 1 else i for n, i in zip(shape, idx)))
        return Value(dtype, shape, tracked)

    def bind(self, name: str, value: Value) -> Value:
        """Give ONNX tensor `name` the Value `value` (a view); a result is copied into place."""
        if name in self.result_names:
            return self.define(name, value.dtype, value.shape, value.read)
        self.values[name] = value
        return value

    def define(self, name: str, dtype: ir.DType, shape: tuple[ir.Dim, ...], body: Body,
               hint: str | None = None) -> Value:
        """A statement computing ONNX tensor `name` (or a temporary when `name` is None) element-wise."""
        if name is not None and name in self.result_names:
            gname = self.namer.fresh(name)
            self.results[name] = ir.Param(gname, ir.TensorType(dtype, shape))
            self.outputs[gname] = name
            keep = list(range(len(shape)))
        else:
            gname = self.namer.fresh(hint or name or "t")
            keep = [d for d, n in enumerate(shape) if n != 1]
        names = index_vars(len(keep), self.avoid)
        var_of = dict(zip(keep, names))
        idx = tuple(ir.Var(var_of[d]) if d in var_of and shape[d] != 1 else ir.Const(0) for d in range(len(shape)))
        self._views = []
        self._stmt_vars = set(names)
        expr = body(idx)
        is_result = name is not None and name in self.result_names
        if not is_result:
            self._check_ranges([var_of[d] for d in keep], expr)
            if name is not None and dtype in (ir.DType.f16, ir.DType.bf16) and not is_scan(expr):
                # (a scan is the whole right-hand side; it rounds once per element into its type itself)
                expr = ir.Call(dtype.value, (expr,))  # ONNX stores a 16-bit tensor; GIR would keep f32
        self.body.append(ir.Assign(ir.Ref(gname, tuple(ir.Var(var_of[d]) for d in keep)), expr))
        value = self.stored(gname, dtype, shape, every_axis=is_result)
        if name is not None:
            self.values[name] = value
        return value

    def define_viewed(self, name: str, value: Value, outer: tuple[ir.Dim, ...]) -> None:
        """Result `name`, declared in its ONNX shape `outer` and viewed in `value`'s shape (a reshape of a tensor
        of this function): one statement copying `value` in the view's indices; the bytes are those of `outer`."""
        gname = self.namer.fresh(name)
        inner, view = make_view(ir.TensorType(value.dtype, outer), view_dims(value.shape), None)
        self.results[name] = ir.Param(gname, inner, view)
        self.outputs[gname] = name
        names = index_vars(value.rank, self.avoid)
        idx = tuple(ir.Const(0) if n == 1 else ir.Var(v) for n, v in zip(value.shape, names))
        self._views = []
        self._stmt_vars = set(names)
        self.body.append(ir.Assign(ir.Ref(gname, tuple(ir.Var(v) for v in names)), value.read(idx)))
        self.values[name] = self.unreadable(value.dtype, outer, f"'{name}' is a reshaped result of this function; "
                                            "reading it here in its own shape")

    def reduce(self, name: str | None, op: str, dtype: ir.DType, in_shape: tuple[ir.Dim, ...],
               axes: Sequence[int], body: Body, keepdims: bool = True, hint: str | None = None,
               post: Callable[[ir.Expr, Index], ir.Expr] | None = None) -> Value:
        """`post(op(body(x)))` over `axes` of an iteration space of shape `in_shape`, as ONNX tensor `name`
        (keepdims: reduced axes stay with extent 1) or a temporary. Axes of extent 1 need no reduction.
        `post(reduced, idx)` also gets the index of the iteration space (reduced axes at their variables)."""
        axes = sorted({a % len(in_shape) for a in axes}) if in_shape else []
        out_shape = tuple(1 if d in axes else n for d, n in enumerate(in_shape)) if keepdims else \
            tuple(n for d, n in enumerate(in_shape) if d not in axes)
        out_axes = [d for d in range(len(in_shape)) if keepdims or d not in axes]  # in-space axis of each out
        reduced = [d for d in axes if in_shape[d] != 1]
        post = post or (lambda e, idx: e)

        def full_body(out_idx: Index) -> ir.Expr:
            taken = self._stmt_vars | self.avoid  # the left-hand side's variables
            red_vars = dict(zip(reduced, index_vars(len(reduced), taken)))
            full: list[ir.Expr] = [ir.Const(0)] * len(in_shape)
            for pos, d in enumerate(out_axes):
                if d not in axes:
                    full[d] = out_idx[pos]
            for d, v in red_vars.items():
                full[d] = ir.Var(v)
            inner = body(tuple(full))
            return post(ir.Reduce(op, inner) if reduced else inner, tuple(full))
        return self.define(name, dtype, out_shape, full_body, hint=hint)

    def _check_ranges(self, lhs_vars: list[str], expr: ir.Expr) -> None:
        """Every index variable of an intermediate needs a range: some tensor indexed by it directly."""
        direct = {i.name for e in walk(expr) if isinstance(e, ir.Ref) for i in e.index if isinstance(i, ir.Var)}
        used = {e.name for e in walk(expr) if isinstance(e, ir.Var)}
        missing = [v for v in lhs_vars if v not in direct] + sorted(used - direct - set(lhs_vars) - self.avoid)
        if not missing:
            return
        if self._views:
            raise Unsupported("its index map (a split reshape, a slice or an expand) can only be read where "
                              "another operand or a result gives the axes their range; an intermediate view "
                              "like this is not in the language yet " + LANGUAGE_REACH, "language",
                              node=self._views[0])
        raise Unsupported("all its inputs are constants; fold constants before importing", "op")

    # --------------------------------------------------------------- result
    def function(self, name: str) -> ir.Func:
        results = tuple(self.results[n] for n in self.result_names if n in self.results)
        return ir.Func(name, tuple(self.params), results, tuple(self.body))

