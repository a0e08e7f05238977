"""The CUDA target: run generated kernels on an NVIDIA GPU through cupy (see runner.py)."""
from gir.targets.cuda.runner import RunResult, available, run_func

__all__ = ["run_func", "available", "RunResult"]
