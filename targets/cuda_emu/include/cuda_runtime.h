// Empty stand-in for <cuda_runtime.h>: gir_cuda_emu.h (force-included) defines what generated kernels use.
#pragma once
