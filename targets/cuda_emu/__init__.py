"""CPU emulation of generated CUDA: compile the emitted .cu with g++ against gir_cuda_emu.h and run it
(threads as fibers, blocks one after another). See docs/cuda-emulation.md and run.py."""
from gir.targets.cuda_emu.run import EmuResult, available, compile_source, run_func

__all__ = ["available", "run_func", "compile_source", "EmuResult"]
