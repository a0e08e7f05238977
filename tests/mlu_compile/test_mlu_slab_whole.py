"""Slab kernels (passes/schedule_mlu/tiles_slab.py) load an f32 input with one value per slab row (a group's
per-channel gamma / beta) once per unit, in one DMA, instead of one small DMA per sub-tile: each DMA pays the
GDRAM latency (group_norm_view at 4M elements: 1.456x -> 1.33x the DMA roofline)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from gir import ir
from gir.evaluate import evaluate
from gir.parser import parse_file
from gir.passes.schedule_mlu import schedule_mlu
from gir.printer import print_module
from gir.targets.mlu import MLU370
from gir.targets.mlu.run import run_func
from gir.verdict import compare

BIG = {"N": 16, "C": 256, "H": 32, "W": 32, "C_div_4": 64, "H_mul_W": 1024}


def test_gamma_and_beta_load_once_per_unit():
    f = parse_file("samples/group_norm_view.gir").funcs[0]
    text = print_module(ir.Module((schedule_mlu(f, BIG),)))
    assert "for k0_" in text                                   # the slab schedule (sub-tiles of the group)
    loads = re.findall(r"load (\w+)\[.*<- (gamma|beta)\[(.*)\]", text)
    assert len(loads) == 2 and all(":" in rows and "k0_" not in rows for *_, rows in loads)
    comp = 2 * 16 * 256 * 1024 * 4 + 2 * 256 * 4
    r = run_func(f, None, BIG, values=False)
    assert r.stats["seconds"] / (comp / MLU370.gdram_bandwidth) < 1.36


@pytest.mark.parametrize("sizes", [{"N": 2, "C": 256, "H": 16, "W": 64, "C_div_4": 64, "H_mul_W": 1024},
                                   {"N": 3, "C": 200, "H": 13, "W": 67, "C_div_4": 50, "H_mul_W": 871}])
def test_values_of_slab_group_norms(sizes):
    f = parse_file("samples/group_norm_view.gir").funcs[0]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((sizes["N"], sizes["C"], sizes["H"], sizes["W"])).astype(np.float32)
    g = rng.standard_normal(sizes["C"]).astype(np.float32)
    b = rng.standard_normal(sizes["C"]).astype(np.float32)
    got = run_func(f, {"x": x, "gamma": g, "beta": b}, sizes).outputs["y"]
    want = evaluate(f, {"x": x, "gamma": g, "beta": b}, sizes, compute_dtype=np.float64)["y"]
    assert compare(np.asarray(got).reshape(x.shape), np.asarray(want).reshape(x.shape), ir.DType.f32).passed
