"""Simulated MLU370-like accelerator: a BANG-C-like kernel language, its parser, and a simulator that executes the
program text with numpy values and a cycle model (see LANGUAGE.md).

    program = parse_program(text, filename="k.mlu")
    result = simulate(program, "kernel", {"x": x, "y": y, "n": n}, task_dim=32)
    result.outputs["y"], result.cycles, result.seconds
    timing = simulate(program, "kernel", {"x": ShapeOnly((M, N), np.float32), ...}, task_dim=32, values=False)
"""
from .errors import MluError, Span
from .machine import MLU370, MluMachine
from .parser import parse_program
from .result import CoreStats, SimResult
from .shapeonly import ShapeOnly
from .sim import launch_shape, simulate

__all__ = ["parse_program", "simulate", "launch_shape", "MluMachine", "MLU370", "MluError", "Span", "SimResult",
           "CoreStats", "ShapeOnly"]
