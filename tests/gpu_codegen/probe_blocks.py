"""Measure what a block costs on a real GPU (device_check.sh runs this): a float4 copy of 256 MiB by blocks of 32
to 1024 threads moving 1 to 16 float4 per thread, and empty kernels of 2^16 to 2^20 blocks. The search's cost
model charges each block `block_s` (passes/machines/*.json); this prints the data that number comes from.
    python3 tests/gpu_codegen/probe_blocks.py"""
from __future__ import annotations

import statistics

import cupy as cp

SRC = r"""
extern "C" __global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, long long n, int per) {
  long long base = (long long)blockIdx.x * blockDim.x * per + threadIdx.x;
  for (int k = 0; k < per; ++k) {
    long long i = base + (long long)k * blockDim.x;
    if (i < n) y[i] = x[i];
  }
}
extern "C" __global__ void empty(int* flag) { if (flag[0] == 12345) flag[1] = 1; }
"""


def timed(fn, reps=30) -> float:
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    a, b, out = cp.cuda.Event(), cp.cuda.Event(), []
    for _ in range(reps):
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return statistics.median(out)


def main() -> None:
    mod = cp.RawModule(code=SRC)
    copy4, empty = mod.get_function("copy4"), mod.get_function("empty")
    n = (256 << 20) // 16
    x = cp.random.standard_normal(4 * n, dtype=cp.float32)   # passed as float4*
    y = cp.empty_like(x)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print(f"sms {sms}; copy of {2 * n * 16 / 1e6:.0f} MB (read + write)")
    print(f"{'threads':>7} {'per':>4} {'blocks':>9} {'us':>9} {'GB/s':>7} {'ns/block/SM':>11}")
    for threads in (32, 64, 128, 256, 1024):
        for per in (1, 4, 16):
            blocks = -(-n // (threads * per))
            t = timed(lambda: copy4((blocks,), (threads,), (x, y, cp.int64(n), cp.int32(per))))
            print(f"{threads:7d} {per:4d} {blocks:9d} {t * 1e6:9.1f} {2 * n * 16 / t / 1e9:7.0f} "
                  f"{t / (blocks / sms) * 1e9:11.1f}")
    flag = cp.zeros(2, dtype=cp.int32)
    for threads in (32, 256):
        for blocks in (1 << 16, 1 << 18, 1 << 20):
            t = timed(lambda: empty((blocks,), (threads,), (flag,)))
            print(f"empty {threads:4d} threads {blocks:8d} blocks {t * 1e6:9.1f} us  "
                  f"{t / (blocks / sms) * 1e9:6.1f} ns/block/SM")


if __name__ == "__main__":
    main()
