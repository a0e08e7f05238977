"""The number a bench result is judged by on each target: a ratio to that target's bound (1 = at the bound,
larger = slower or more traffic). The PNGs plot it and the progress lines print it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ratio:
    axis_label: str   # y-axis label of the plots
    bound: str        # what y = 1 means


RATIOS = {
    "sim": Ratio("bytes moved / compulsory bytes", "compulsory bytes"),
    "mlu-sim": Ratio("simulated time / DMA roofline", "DMA roofline"),
    "cuda": Ratio("time / device-copy time of the compulsory bytes", "device copy"),
}


def ratio_of(row: dict, target: str) -> float | None:
    """The row's ratio to the target's bound; None when the case did not produce one (an error)."""
    if target == "sim":
        return row.get("traffic_ratio")
    if target == "mlu-sim":
        return row.get("vs_roofline")
    time_s, nbytes, copy_gbps = row.get("time_s"), row.get("compulsory_bytes"), row.get("copy_gbps")
    if not (time_s and nbytes and copy_gbps):
        return None
    return time_s / (nbytes / (copy_gbps * 1e9))
