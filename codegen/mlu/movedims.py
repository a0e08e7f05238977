"""The sliced dims of an MLU move whose two regions have different shapes (a *reshaping move*,
docs/explicit-layer.md): both sides one contiguous run of the same count, or one side a contiguous 1-D run laid
out as the other side's rows (row-major, dense). Dims are `[length, element stride, extent, start]`, outermost
first, as `_KernelEmitter._dims` gives them."""
from __future__ import annotations

from gir.errors import GirError
from gir.codegen import ast as C


def reshaped_dims(ddims: list, sdims: list, masked: bool, loc) -> tuple[list, list]:
    """(destination dims, source dims) with the same lengths on both sides, or a located GirError."""
    dn, sn = run_length(ddims), run_length(sdims)
    if not masked and dn is not None and dn == sn:
        return ([[dn, 1, dn, C.Num(0)]] if ddims else []), ([[dn, 1, dn, C.Num(0)]] if sdims else [])
    if not masked and dn is not None and len(ddims) == 1 and dn == _count(sdims):
        return _packed(sdims), sdims
    if not masked and sn is not None and len(sdims) == 1 and sn == _count(ddims):
        return ddims, _packed(ddims)
    raise GirError("region shapes of a move differ after dropping unit dims (a move may reshape only between "
                   "contiguous regions of the same size, or between a 1-D run and the rows of a region of the same "
                   "size)", loc)


def masked_run(gdims: list, rdims: list, loc) -> int:
    """A masked reshaping move between a contiguous off-chip region (dims `gdims`) and a 1-D on-chip run (`rdims`)
    of the same count: the elements per step of the region's outermost sliced dimension, which the mask clips (the
    run is clipped to the same prefix); a located GirError for any other pair."""
    n = run_length(gdims)
    if n is None or len(rdims) > 1 or run_length(rdims) != n or not gdims:
        raise GirError("a masked move may reshape only between a contiguous off-chip region and a 1-D on-chip run "
                       "of the same count", loc)
    return n // gdims[0][0]


def run_length(dims: list) -> int | None:
    """The element count of a region whose sliced dims form one contiguous run (None otherwise)."""
    n, stride = 1, 1
    for length, st, _, _ in reversed(dims):
        if st != stride:
            return None
        n *= length
        stride = n
    return n


def _count(dims: list) -> int:
    n = 1
    for d in dims:
        n *= d[0]
    return n


def _packed(dims: list) -> list:
    """The dims of a contiguous 1-D run holding a region of these dims' lengths, row-major and dense."""
    out, stride = [], 1
    for length, _, _, _ in reversed(dims):
        out.insert(0, [length, stride, length, C.Num(0)])
        stride *= length
    return out
