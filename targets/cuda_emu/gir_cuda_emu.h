// gir_cuda_emu.h — run generated CUDA C++ on the host CPU (see docs/cuda-emulation.md).
//
// Compile the emitted .cu unchanged as C++20:
//   g++ -std=c++20 -O1 -fno-strict-aliasing -fno-ipa-reference -shared -fPIC
//       -I targets/cuda_emu/include -include gir_cuda_emu.h -x c++ kernel.cu -o k.so
// and append one line per kernel:  GIR_EMU_LAUNCHER(name)  → extern "C" int gir_launch_name(...).
//
// Model: the blocks of a grid run one after another on the calling OS thread; the threads of a block are
// cooperative fibers (ucontext) that run until they reach __syncthreads / __syncwarp / a shuffle, where they
// yield to the block scheduler. A barrier or warp collective completes only once every thread it names has
// arrived; anything else (divergent barrier, shuffle from an exited or masked-out lane, deadlock) stops the
// launch with an error message. `__shared__` variables are function statics placed in the section
// `gir_shared`, which the launcher fills with 0xFF bytes (NaN / -1) before every block.
#pragma once

// Light includes only (compile time matters: every kernel is one g++ run).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <setjmp.h>
#include <sys/mman.h>
#include <type_traits>
#include <ucontext.h>
#include <utility>

// ------------------------------------------------------------------ CUDA keywords
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ __attribute__((section("gir_shared"))) static

// ------------------------------------------------------------------ vector types
struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct uint3 { unsigned x, y, z; };
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(16))) double2 { double x, y; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// ------------------------------------------------------------------ atomics
// Blocks run one after another (launch() below), so an exchange needs no lock; a chain's look-back
// (codegen/cstyle.py CHAIN_HELPERS) finds its predecessors' status words already written.
static inline unsigned long long atomicExch(unsigned long long* a, unsigned long long v) {
  unsigned long long old = *a;
  *a = v;
  return old;
}
#define __threadfence() ((void)0)

// ------------------------------------------------------------------ 16-bit floats
// Raw 16-bit storage like CUDA's classes; conversions round to nearest even.
struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) { _Float16 h = (_Float16)f; std::memcpy(&__x, &h, 2); }
  operator float() const { _Float16 h; std::memcpy(&h, &__x, 2); return (float)h; }
};
struct __attribute__((aligned(4))) __half2 { __half x, y; };
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline float __half2float(__half h) { return (float)h; }
static inline __half2 __floats2half2_rn(float a, float b) { return {__half(a), __half(b)}; }
static inline __half2 make_half2(__half a, __half b) { return {a, b}; }

struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { __x = (unsigned short)((u >> 16) | 0x40u); return; }  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    __x = (unsigned short)(u >> 16);
  }
  operator float() const { uint32_t u = (uint32_t)__x << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
static inline float __bfloat162float(__nv_bfloat16 h) { return (float)h; }
static_assert(sizeof(__half) == 2 && sizeof(__nv_bfloat16) == 2 && std::is_trivially_copyable_v<__half>);

// ------------------------------------------------------------------ math
using std::abs;
using std::llabs;
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
// __expf, __logf, __sinf, __cosf, __powf: glibc declares and exports them (same results as expf ...).
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
// bit casts (the printers spell infinity and NaN with them: NVRTC has no __builtin_huge_valf)
static inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, sizeof f); return f; }
static inline double __longlong_as_double(long long x) { double d; std::memcpy(&d, &x, sizeof d); return d; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }

// ------------------------------------------------------------------ the block scheduler
namespace gir_emu {

enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_OP, DONE };
enum WarpOp { OP_SYNCWARP, OP_SHFL };

struct Fiber {
  ucontext_t ctx;       // only to start the fiber (makecontext); switches use _setjmp/_longjmp (no syscall)
  jmp_buf jb;
  bool started = false;
  char* stack = nullptr;
  uint3 tid{};
  int linear = 0, lane = 0, warp = 0;
  State state = RUNNABLE;
  int line = 0;         // source line of the barrier / collective it waits at
  WarpOp op = OP_SYNCWARP;
  unsigned mask = 0;    // warp collective: participating lanes
  int src = 0;          // shuffle: source lane (own lane if out of range)
  int width = 32;
  alignas(16) unsigned char val[16];
  alignas(16) unsigned char res[16];
};

constexpr int WARP = 32;
constexpr size_t STACK_BYTES = 256 * 1024;

struct Launch {
  Fiber* fibers = nullptr;
  int nfibers = 0;
  jmp_buf sched_jb;
  Fiber* cur = nullptr;
  uint3 block_idx{};
  dim3 block_dim, grid_dim;
  char error[512] = {0};
  void (*body)(void*) = nullptr;
  void* body_arg = nullptr;
};

static Launch* L = nullptr;  // the launch in progress (one at a time per library; the driver serialises)

inline void yield() {
  if (!_setjmp(L->cur->jb)) _longjmp(L->sched_jb, 1);
}

// A fiber lives for the whole launch: it runs the kernel body once per block, then parks until the next block.
inline void fiber_entry() {
  for (;;) {
    L->body(L->body_arg);
    L->cur->state = DONE;
    yield();
  }
}

// Run fiber f until it yields or finishes.
__attribute__((noinline)) inline void resume(Fiber* f) {
  L->cur = f;
  if (!_setjmp(L->sched_jb)) {
    if (!f->started) {
      f->started = true;
      setcontext(&f->ctx);
    }
    _longjmp(f->jb, 1);
  }
}

inline void sync_block(int line) {
  Fiber* f = L->cur;
  f->state = AT_BLOCK_BARRIER;
  f->line = line;
  yield();
}

inline void warp_collective(Fiber* f, WarpOp op, unsigned mask, int line) {
  f->state = AT_WARP_OP;
  f->op = op;
  f->mask = mask;
  f->line = line;
  yield();
}

// PTX shfl.sync semantics: c = ((32 - width) << 8) | 0x1f; returns the lane read, or own lane if out of range.
inline int shfl_source(int lane, int mode, int b, int width) {
  int segmask = (WARP - width) & 31;
  int max_lane = (lane & segmask) | (31 & ~segmask);
  int min_lane = lane & segmask;
  int j;
  bool ok;
  switch (mode) {
    case 0: j = lane ^ b; ok = j <= max_lane; break;             // bfly (xor)
    case 1: j = lane + b; ok = j <= max_lane; break;             // down
    case 2: j = lane - b; ok = j >= min_lane; break;             // up
    default: j = min_lane | (b & ~segmask & 31); ok = j <= max_lane; break;  // idx
  }
  return ok ? j : lane;
}

template <typename T>
T shfl(unsigned mask, T v, int b, int width, int mode, int line) {
  static_assert(sizeof(T) <= 16 && std::is_trivially_copyable_v<T>, "shuffle of an unsupported type");
  Fiber* f = L->cur;
  if (width <= 0 || width > WARP || (width & (width - 1)))
    width = WARP;
  f->src = shfl_source(f->lane, mode, b, width);
  f->width = width;
  std::memcpy(f->val, &v, sizeof(T));
  warp_collective(f, OP_SHFL, mask, line);
  T r;
  std::memcpy(&r, L->cur->res, sizeof(T));
  return r;
}

inline void fail(const char* fmt, int a = 0, int b = 0, int c = 0, int d = 0) {
  char buf[400];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  if (!L->error[0])
    std::snprintf(L->error, sizeof L->error, "block (%u,%u,%u): %s", L->block_idx.x, L->block_idx.y,
                  L->block_idx.z, buf);
}

// Complete every warp collective whose named lanes have all arrived. Returns true if one completed.
inline bool complete_warp_ops() {
  bool any = false;
  int n = L->nfibers;
  for (int w0 = 0; w0 < n; w0 += WARP) {
    int nl = n - w0 < WARP ? n - w0 : WARP;
    unsigned exist = nl == 32 ? 0xffffffffu : ((1u << nl) - 1u);
    Fiber* first = nullptr;
    for (int l = 0; l < nl; ++l)
      if (L->fibers[w0 + l].state == AT_WARP_OP) { first = &L->fibers[w0 + l]; break; }
    if (!first) continue;
    unsigned m = first->mask & exist;  // lanes past the end of the block do not exist: they never take part
    if (!(m >> first->lane & 1u)) { fail("lane %d calls a warp collective at line %d with a mask 0x%x that excludes itself", first->lane, first->line, (int)m); return false; }
    bool ready = true;
    for (int l = 0; l < nl; ++l) {
      if (!(m >> l & 1u)) continue;
      Fiber& g = L->fibers[w0 + l];
      if (g.state == DONE) { fail("warp collective at line %d waits for lane %d, which has exited", first->line, l); return false; }
      if (g.state != AT_WARP_OP) { ready = false; break; }
      if ((g.mask & exist) != m || g.op != first->op) { fail("lanes %d and %d reach different warp collectives (lines %d, %d)", first->lane, l, first->line, g.line); return false; }
    }
    if (!ready) continue;
    for (int l = 0; l < nl; ++l) {
      if (!(m >> l & 1u)) continue;
      Fiber& g = L->fibers[w0 + l];
      if (g.op == OP_SHFL) {
        if (g.src >= nl) { fail("lane %d shuffles from lane %d at line %d, which does not exist (%d threads in the warp)", l, g.src, g.line, nl); return false; }
        if (!(m >> g.src & 1u)) { fail("lane %d shuffles from lane %d at line %d, which is not in the mask 0x%x", l, g.src, g.line, (int)m); return false; }
        std::memcpy(g.res, L->fibers[w0 + g.src].val, sizeof g.res);
      }
    }
    for (int l = 0; l < nl; ++l)
      if (m >> l & 1u) L->fibers[w0 + l].state = RUNNABLE;
    any = true;
  }
  return any;
}

inline bool complete_block_barrier() {
  int at = 0, done = 0, line = -1;
  for (Fiber* f = L->fibers; f != L->fibers + L->nfibers; ++f) {
    if (f->state == AT_BLOCK_BARRIER) {
      if (line >= 0 && f->line != line) { fail("threads wait at different __syncthreads (lines %d and %d)", line, f->line); return false; }
      line = f->line;
      ++at;
    } else if (f->state == DONE) {
      ++done;
    }
  }
  if (at == 0) return false;
  if (at + done == L->nfibers && done > 0) { fail("__syncthreads at line %d is not reached by %d exited threads", line, done); return false; }
  if (at != L->nfibers) return false;
  for (Fiber* f = L->fibers; f != L->fibers + L->nfibers; ++f) f->state = RUNNABLE;
  return true;
}

// order: 0 thread order, 1 reverse, 2+ a fresh random permutation every round (seeded by `order`).
inline void run_block(int order, uint64_t& rng, int* perm) {
  int n = L->nfibers;
  for (int i = 0; i < n; ++i) perm[i] = order == 1 ? n - 1 - i : i;
  for (int i = 0; i < n; ++i) L->fibers[i].state = RUNNABLE;
  for (;;) {
    if (order >= 2)
      for (int i = n - 1; i > 0; --i) {  // Fisher-Yates with xorshift64
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        int j = (int)(rng % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j]; perm[j] = t;
      }
    for (int k = 0; k < n; ++k) {
      int i = perm[k];
      Fiber& f = L->fibers[i];
      if (f.state != RUNNABLE) continue;
      resume(&f);
    }
    L->cur = nullptr;
    bool all_done = true;
    for (Fiber* f = L->fibers; f != L->fibers + L->nfibers; ++f) all_done = all_done && f->state == DONE;
    if (all_done || L->error[0]) return;
    bool progress = complete_warp_ops();
    if (L->error[0]) return;
    progress = complete_block_barrier() || progress;
    if (L->error[0]) return;
    if (!progress) {
      for (Fiber* f = L->fibers; f != L->fibers + L->nfibers; ++f)
        if (f->state != DONE) {
          fail(f->state == AT_BLOCK_BARRIER ? "deadlock: thread %d waits at __syncthreads (line %d) and nothing can complete"
                                           : "deadlock: thread %d waits at a warp collective (line %d) and nothing can complete",
               f->linear, f->line);
          return;
        }
    }
  }
}

extern "C" char __start_gir_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_gir_shared[] __attribute__((weak, visibility("hidden")));

inline int launch(void (*body)(void*), void* arg, const long long* grid, const int* block, int order,
                  char* err, int errlen) {
  Launch launch;
  L = &launch;
  launch.body = body;
  launch.body_arg = arg;
  launch.block_dim = {(unsigned)block[0], (unsigned)block[1], (unsigned)block[2]};
  launch.grid_dim = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
  long long nthreads = (long long)block[0] * block[1] * block[2];
  if (nthreads <= 0 || nthreads > 1024) {
    std::snprintf(launch.error, sizeof launch.error, "block of %lld threads (CUDA allows 1..1024)", nthreads);
  } else {
    size_t total = STACK_BYTES * nthreads;
    char* stacks = (char*)mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) {
      std::snprintf(launch.error, sizeof launch.error, "cannot map %zu bytes of fiber stacks", total);
    } else {
      launch.fibers = new Fiber[nthreads];
      launch.nfibers = (int)nthreads;
      int* perm = new int[nthreads];
      for (long long i = 0; i < nthreads; ++i) {
        Fiber& f = launch.fibers[i];
        f.stack = stacks + STACK_BYTES * i;
        f.linear = (int)i;
        f.tid = {(unsigned)(i % block[0]), (unsigned)(i / block[0] % block[1]), (unsigned)(i / ((long long)block[0] * block[1]))};
        f.lane = (int)(i % WARP);
        f.warp = (int)(i / WARP);
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = STACK_BYTES;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_entry, 0);
      }
      uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)order;
      for (long long bz = 0; bz < grid[2] && !launch.error[0]; ++bz)
        for (long long by = 0; by < grid[1] && !launch.error[0]; ++by)
          for (long long bx = 0; bx < grid[0] && !launch.error[0]; ++bx) {
            launch.block_idx = {(unsigned)bx, (unsigned)by, (unsigned)bz};
            if (__start_gir_shared && __stop_gir_shared > __start_gir_shared)
              std::memset(__start_gir_shared, 0xff, (size_t)(__stop_gir_shared - __start_gir_shared));
            run_block(order, rng, perm);
          }
      delete[] perm;
      delete[] launch.fibers;
      munmap(stacks, total);
    }
  }
  int rc = launch.error[0] ? 1 : 0;
  if (rc && err && errlen > 0) std::snprintf(err, (size_t)errlen, "%s", launch.error);
  L = nullptr;
  return rc;
}

template <typename... A>
struct Call {
  void (*fn)(A...);
  void** args;
  template <size_t... I>
  void go(std::index_sequence<I...>) { fn(*static_cast<std::remove_cv_t<A>*>(args[I])...); }
  static void run(void* self) { static_cast<Call*>(self)->go(std::index_sequence_for<A...>{}); }
};

// args[i] points at the value of the i-th kernel parameter (a device pointer or an integer).
template <typename... A>
int launch_kernel(void (*fn)(A...), void** args, const long long* grid, const int* block, int order, char* err,
                  int errlen) {
  Call<A...> call{fn, args};
  return launch(&Call<A...>::run, &call, grid, block, order, err, errlen);
}

}  // namespace gir_emu

#define threadIdx (gir_emu::L->cur->tid)
#define blockIdx (gir_emu::L->block_idx)
#define blockDim (gir_emu::L->block_dim)
#define gridDim (gir_emu::L->grid_dim)
#define warpSize 32

#define __syncthreads() gir_emu::sync_block(__LINE__)
#define __syncwarp(...) gir_emu::warp_collective(gir_emu::L->cur, gir_emu::OP_SYNCWARP, gir_emu_mask_(__VA_ARGS__), __LINE__)
static inline unsigned gir_emu_mask_(unsigned m = 0xffffffffu) { return m; }

#define __shfl_xor_sync(m, v, o, ...) gir_emu::shfl((m), (v), (o), gir_emu_width_(__VA_ARGS__), 0, __LINE__)
#define __shfl_down_sync(m, v, o, ...) gir_emu::shfl((m), (v), (o), gir_emu_width_(__VA_ARGS__), 1, __LINE__)
#define __shfl_up_sync(m, v, o, ...) gir_emu::shfl((m), (v), (o), gir_emu_width_(__VA_ARGS__), 2, __LINE__)
#define __shfl_sync(m, v, o, ...) gir_emu::shfl((m), (v), (o), gir_emu_width_(__VA_ARGS__), 3, __LINE__)
static inline int gir_emu_width_(int w = 32) { return w; }

// One exported launcher per kernel: GIR_EMU_LAUNCHER(softmax_0) defines
//   extern "C" int gir_launch_softmax_0(void** args, const long long* grid, const int* block, int order,
//                                       char* err, int errlen)   // 0 on success, else err holds the reason
#define GIR_EMU_LAUNCHER(name)                                                                              \
  extern "C" __attribute__((visibility("default"))) int gir_launch_##name(                                  \
      void** args, const long long* grid, const int* block, int order, char* err, int errlen) {             \
    return gir_emu::launch_kernel(name, args, grid, block, order, err, errlen);                             \
  }
