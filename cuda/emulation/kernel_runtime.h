// The device side of the emulated CUDA build (-Dcuda=emulated): what a kernel
// file (.cu) needs when the host C++ compiler builds it instead of nvcc.
//
// Included through cuda/kernels/launch.cuh, only when ASTRAI_CUDA_EMULATED is
// defined. A launch becomes a closure queued on its stream (cudart_emulated.cpp
// runs it at the next synchronising call); each block runs on one OS thread
// with its CUDA threads as fibers that switch only at __syncthreads() and warp
// shuffles (block_runner.cpp). threadIdx and friends read the running fiber's
// indices; __shared__ variables are per OS thread, which is per block, since a
// thread runs one block at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace astrai::emu {

// One kernel launch, as the stream queue holds it.
struct KernelLaunch {
  std::string name;          // the kernel's expression, e.g. "swiglu_kernel<Elem>"
  const void* function;      // for cudaFuncSetAttribute's opt-in
  dim3 grid, block;
  size_t dynamic_smem = 0;
  std::function<void()> body;  // calls the kernel with its arguments (copied at launch, as CUDA does)
};

// Checks the configuration (as a GPU would at launch: cudaGetLastError() then
// reports it) and queues the launch on `stream`, or records it into the
// stream's graph while capturing. Defined in cudart_emulated.cpp.
void enqueue_launch(cudaStream_t stream, KernelLaunch launch);

template <typename... Params>
class Launcher {
 public:
  Launcher(void (*kernel)(Params...), const char* name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream)
      : kernel_(kernel), name_(name), grid_(grid), block_(block), smem_(smem), stream_(stream) {}

  template <typename... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "a kernel launch with the wrong number of arguments");
    // Each argument converted to its parameter type and copied now, as the
    // CUDA runtime copies kernel arguments at the launch.
    std::tuple<std::decay_t<Params>...> copied(std::forward<Args>(args)...);
    auto kernel = kernel_;
    enqueue_launch(stream_, KernelLaunch{name_, reinterpret_cast<const void*>(kernel), grid_, block_, smem_,
                                         [kernel, copied] { std::apply(kernel, copied); }});
  }

 private:
  void (*kernel_)(Params...);
  const char* name_;
  dim3 grid_, block_;
  size_t smem_;
  cudaStream_t stream_;
};

template <typename... Params>
Launcher<Params...> launch(void (*kernel)(Params...), const char* name, dim3 grid, dim3 block, size_t smem,
                           cudaStream_t stream) {
  return Launcher<Params...>(kernel, name, grid, block, smem, stream);
}

// Inside a kernel body (block_runner.cpp): the running CUDA thread's view.
uint3 thread_index();
uint3 block_index();
dim3 block_dimensions();
dim3 grid_dimensions();
// The block's dynamic shared memory (NaN-filled when the block starts).
void* dynamic_shared_memory();
// __syncthreads(): every live thread of the block must reach this same barrier.
void block_barrier(const char* file, int line);
// __shfl_down_sync for 32-bit values: a barrier of the warp's lanes named in
// `mask` (which must be every live lane), then an exchange.
float shuffle_down(const char* file, int line, unsigned mask, float value, unsigned delta, int width = 32);
int shuffle_down(const char* file, int line, unsigned mask, int value, unsigned delta, int width = 32);

}  // namespace astrai::emu

// CUDA's built-in variables and intrinsics, for kernel code compiled by the
// host compiler. Arithmetic intrinsics are the IEEE operations they name: the
// emulated kernels are compiled with -ffp-contract=off, so a*b+c is never
// fused unless the kernel says __fmaf_rn.
#define threadIdx (::astrai::emu::thread_index())
#define blockIdx (::astrai::emu::block_index())
#define blockDim (::astrai::emu::block_dimensions())
#define gridDim (::astrai::emu::grid_dimensions())
#define __syncthreads() ::astrai::emu::block_barrier(__FILE__, __LINE__)
#define __shfl_down_sync(mask, value, ...) \
  ::astrai::emu::shuffle_down(__FILE__, __LINE__, (mask), (value), __VA_ARGS__)
#undef __shared__
#define __shared__ static thread_local

#define __launch_bounds__(...)  // an occupancy hint for the GPU compiler

// CUDA's device-side min and max overloads (the host has std::min/std::max).
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return std::fmax(a, b); }

inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline int __float_as_int(float f) {
  int bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
