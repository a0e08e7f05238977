"""Launch geometry of a kernel as the checks see it, and the check of its size against the machine.

`launch_shape(kernel, sizes)` maps the parallel scopes of a kernel to hardware positions the way
`codegen/launch.py` does (which the analyses may not import): chains of directly nested `@thread` scopes are
threadIdx dimensions (innermost = x) and a block dimension is the largest extent mapped to it; `@warp` × `@lane`
is threadIdx.x = w * L + l with L the largest lane extent. A thread's linear index inside its block is then
`sum((v - lo) * stride)` over its scopes, which is what decides the hardware warp it belongs to.

`check_threads` compares the block with the target machine (`passes/machines/*.json`): threads per block and
lanes per warp on GPUs, cores per cluster on the MLU.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gir import ir
from gir.affine import eval_int, free_vars, to_affine
from gir.passes.analysis.diagnostics import CheckDiagnostic, make

THREAD, WARP, LANE = ir.ParLevel.thread, ir.ParLevel.warp, ir.ParLevel.lane


@dataclass
class Scope:
    """One inner parallel scope: its node, threadIdx dimension (0 for warps and lanes) and extent (None:
    symbolic at the given sizes)."""
    node: ir.Parallel
    dim: int
    ext: int | None


@dataclass
class LaunchShape:
    threads: list[Scope] = field(default_factory=list)
    warps: list[Scope] = field(default_factory=list)
    lanes: list[Scope] = field(default_factory=list)
    cores: list[tuple[Scope, bool]] = field(default_factory=list)  # (scope, inside a @cluster scope)

    def block(self) -> list[int | None]:
        """Threads per threadIdx dimension (x first); None where an extent is symbolic."""
        if self.lanes:
            return [_mul(_max(self.warps, default=1), _max(self.lanes)), 1, 1]
        dims = [[s.ext for s in self.threads if s.dim == d] for d in range(3)]
        return [_max_of(exts) for exts in dims]

    @property
    def lane_stride(self) -> int | None:
        return _max(self.lanes)

    def position(self, node: ir.Parallel) -> tuple[int, int] | None:
        """(launched extent, stride in the linear thread index) of an inner scope; None if symbolic."""
        block = self.block()
        for s in self.threads:
            if s.node is node:
                strides = block[:s.dim]
                if block[s.dim] is None or None in strides:
                    return None
                stride = 1
                for n in strides:
                    stride *= n
                return block[s.dim], stride
        for scopes, stride in ((self.lanes, 1), (self.warps, self.lane_stride)):
            for s in scopes:
                if s.node is node:
                    ext = _max(scopes)
                    return None if ext is None or stride is None else (ext, stride)
        return None

    def symbolic(self) -> list[Scope]:
        return [s for s in self.threads + self.warps + self.lanes if s.ext is None]


def launch_shape(kernel: ir.Kernel, sizes: dict[str, int]) -> LaunchShape:
    shape = LaunchShape()
    _walk(kernel.body, None, 0, False, shape, sizes)
    return shape


def _walk(body, parent: ir.Parallel | None, dim: int, in_cluster: bool, shape: LaunchShape, sizes) -> None:
    for s in body:
        if isinstance(s, ir.Parallel):
            level = s.level
            if level == THREAD:
                d = dim - 1 if parent is not None and parent.level == THREAD else scope_depth(s) - 1
                shape.threads.append(Scope(s, d, scope_extent(s, sizes)))
                _walk(s.body, s, d, in_cluster, shape, sizes)
                continue
            if level in (WARP, LANE):
                (shape.warps if level == WARP else shape.lanes).append(Scope(s, 0, scope_extent(s, sizes)))
            elif level == ir.ParLevel.core:
                shape.cores.append((Scope(s, 0, scope_extent(s, sizes)), in_cluster))
            _walk(s.body, s, 0, in_cluster or level == ir.ParLevel.cluster, shape, sizes)
        elif isinstance(s, ir.For):
            _walk(s.body, None, dim, in_cluster, shape, sizes)
        elif isinstance(s, ir.If):
            _walk(s.then, None, dim, in_cluster, shape, sizes)
            _walk(s.orelse, None, dim, in_cluster, shape, sizes)


def scope_depth(p: ir.Parallel) -> int:
    """How many scopes of p's level nest directly from p down (1 + the deepest chain inside): the outermost
    scope of a chain takes the highest threadIdx / blockIdx dimension (the code generator uses the same rule)."""
    inner = [s for s in p.body if isinstance(s, ir.Parallel) and s.level == p.level]
    return 1 + max((scope_depth(q) for q in inner), default=0)


def extent_expr(p: ir.Parallel) -> ir.Expr:
    """hi - lo of a parallel scope (hi alone when lo is 0)."""
    return p.hi if p.lo == ir.Const(0) else ir.BinOp("-", p.hi, p.lo)


def scope_extent(p: ir.Parallel, sizes: dict[str, int]) -> int | None:
    """The scope's extent as an integer at `sizes`; None where it stays symbolic."""
    ext = extent_expr(p)
    aff = to_affine(ext)
    if aff is not None and aff.is_const:
        return aff.const
    if free_vars(ext) <= set(sizes):
        return eval_int(ext, sizes)
    return None


def _max(scopes: list[Scope], default: int | None = None) -> int | None:
    return _max_of([s.ext for s in scopes]) if scopes else default


def _max_of(exts: list[int | None]) -> int | None:
    if not exts:
        return 1
    return None if None in exts else max(exts)


def _mul(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b


# ------------------------------------------------------------------ the check
def gpu_machine_of(target: str):
    """The GPU machine whose limits a check target stands for: hip → MI300X, anything else → H100."""
    from gir.passes.machines import machine_for
    return machine_for("hip" if target == "hip" else "cuda")


def check_threads(ki, ctx) -> list[CheckDiagnostic]:
    """Threads per block and lanes per warp within the GPU machine's limits; cores per cluster on the MLU."""
    shape = launch_shape(ki.kernel, ctx.sizes)
    if ki.family == "mlu":
        return _check_cores(shape)
    m = gpu_machine_of(ctx.target)
    source = f"passes/machines/{_machine_file(m)}.json"
    out = []
    lane_ext = shape.lane_stride
    if shape.lanes and lane_ext is not None and lane_ext > m.warp:
        widest = max(shape.lanes, key=lambda s: s.ext)
        out.append(make("threads", f"@lane extent {lane_ext} exceeds the warp size {m.warp} of {m.name} "
                        f"(target '{ctx.target}')", widest.node,
                        notes=[f"the warp size is 'warp' in {source}", "use more @warp scopes instead"]))
    block = shape.block()
    if None not in block:
        total = block[0] * block[1] * block[2]
        if total > m.max_threads_per_block:
            out.append(make("threads", f"block of {total} threads ({' x '.join(map(str, block))}) exceeds the "
                            f"{m.max_threads_per_block} threads per block of {m.name} (target '{ctx.target}')",
                            _widest(shape),
                            notes=[f"the limit is 'max_threads_per_block' in {source}",
                                   "give each thread more elements (a loop) or split the work over more blocks"]))
    else:
        names = sorted({n for s in shape.symbolic() for n in free_vars(s.node.hi) | free_vars(s.node.lo)})
        out.append(make("threads", f"the block size depends on {', '.join(repr(n) for n in names)}: it cannot "
                        f"be checked against the {m.max_threads_per_block} threads per block of {m.name}",
                        shape.symbolic()[0].node, severity="error" if ctx.strict else "warning",
                        notes=["give --sizes (code generation needs them for thread extents too)"]))
    return out


def _check_cores(shape: LaunchShape) -> list[CheckDiagnostic]:
    from gir.passes.machines import MLU370
    out = []
    for s, in_cluster in shape.cores:
        if in_cluster and s.ext is not None and s.ext > MLU370.cores_per_cluster:
            out.append(make("threads", f"@core extent {s.ext} inside a @cluster scope exceeds the "
                            f"{MLU370.cores_per_cluster} cores per cluster of {MLU370.name}", s.node,
                            notes=["the limit is 'cores_per_cluster' in passes/machines/mlu370.json"]))
    return out


def _widest(shape: LaunchShape) -> ir.Parallel:
    scopes = [s for s in shape.threads + shape.warps + shape.lanes if s.ext is not None]
    return max(scopes, key=lambda s: s.ext).node


def _machine_file(m) -> str:
    from gir.passes.machines import GPU_MACHINES
    return next((k for k, v in GPU_MACHINES.items() if v == m), m.name.lower())
