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
// Warp collectives: every live lane of the warp must reach the same one, and
// its mask must name every live lane (a narrower mask is a fault: the kernels
// here never diverge inside a warp-synchronous section, and a GPU's result
// for a lane outside the mask is undefined). A collective orders the memory
// accesses of the warp's lanes, as __syncwarp() does.
enum class WarpOp { Down, Up, Xor, Index, Ballot, Sync };
#define ASTRAI_EMU_SHUFFLE(T) \
  T warp_shuffle(const char* file, int line, WarpOp op, unsigned mask, T value, int operand, int width = 32);
ASTRAI_EMU_SHUFFLE(float)
ASTRAI_EMU_SHUFFLE(int)
ASTRAI_EMU_SHUFFLE(unsigned)
ASTRAI_EMU_SHUFFLE(double)
ASTRAI_EMU_SHUFFLE(long long)
ASTRAI_EMU_SHUFFLE(unsigned long long)
#undef ASTRAI_EMU_SHUFFLE
// __ballot_sync: bit i set when lane i's predicate is nonzero.
unsigned warp_ballot(const char* file, int line, unsigned mask, int predicate);
int warp_any(const char* file, int line, unsigned mask, int predicate);
int warp_all(const char* file, int line, unsigned mask, int predicate);
void warp_sync(const char* file, int line, unsigned mask = 0xffffffffu);
unsigned active_mask();

// A vector access (float4 or uint4: 16 bytes; uint2, float2: 8) at `p`
// that ASTRAI_VECTOR_PTR (cuda/kernels/vector_pointer.cuh) found off its
// alignment: a GPU faults on it ("misaligned address") where this CPU would
// load it anyway; so does this, naming the kernel, thread, file and line.
[[noreturn]] void misaligned_vector_access(const void* p, size_t alignment, const char* file, int line);

// cp.async (cuda/kernels/async_copy.cuh): a copy of `bytes` from global to
// shared memory that stays pending, its destination unchanged, until the
// thread waits for its group: async_wait(n) completes every committed group
// but the n most recent. Where the copy was issued is taken from the return
// address (for the memory trace). Defined in block_runner.cpp.
void async_copy(void* shared_destination, const void* global_source, size_t bytes);
void async_commit();
void async_wait(int pending_groups_allowed);

// Atomics: one read-modify-write each, never seen as plain accesses by the
// race detector (atomics.cpp; compiled without the access instrumentation).
float atomic_add(float* address, float value);
int atomic_add(int* address, int value);
unsigned atomic_add(unsigned* address, unsigned value);
unsigned long long atomic_add(unsigned long long* address, unsigned long long value);
int atomic_max(int* address, int value);
unsigned atomic_max(unsigned* address, unsigned value);
int atomic_min(int* address, int value);
unsigned atomic_min(unsigned* address, unsigned value);
int atomic_cas(int* address, int compare, int value);
unsigned atomic_cas(unsigned* address, unsigned compare, unsigned value);
unsigned long long atomic_cas(unsigned long long* address, unsigned long long compare, unsigned long long value);
int atomic_exch(int* address, int value);
unsigned atomic_exch(unsigned* address, unsigned value);
float atomic_exch(float* address, float value);

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
  ::astrai::emu::warp_shuffle(__FILE__, __LINE__, ::astrai::emu::WarpOp::Down, (mask), (value), __VA_ARGS__)
#define __shfl_up_sync(mask, value, ...) \
  ::astrai::emu::warp_shuffle(__FILE__, __LINE__, ::astrai::emu::WarpOp::Up, (mask), (value), __VA_ARGS__)
#define __shfl_xor_sync(mask, value, ...) \
  ::astrai::emu::warp_shuffle(__FILE__, __LINE__, ::astrai::emu::WarpOp::Xor, (mask), (value), __VA_ARGS__)
#define __shfl_sync(mask, value, ...) \
  ::astrai::emu::warp_shuffle(__FILE__, __LINE__, ::astrai::emu::WarpOp::Index, (mask), (value), __VA_ARGS__)
#define __syncwarp(...) ::astrai::emu::warp_sync(__FILE__, __LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __ballot_sync(mask, predicate) ::astrai::emu::warp_ballot(__FILE__, __LINE__, (mask), (predicate))
#define __any_sync(mask, predicate) ::astrai::emu::warp_any(__FILE__, __LINE__, (mask), (predicate))
#define __all_sync(mask, predicate) ::astrai::emu::warp_all(__FILE__, __LINE__, (mask), (predicate))
#define __activemask() ::astrai::emu::active_mask()
#define atomicAdd(address, value) ::astrai::emu::atomic_add((address), (value))
#define atomicMax(address, value) ::astrai::emu::atomic_max((address), (value))
#define atomicMin(address, value) ::astrai::emu::atomic_min((address), (value))
#define atomicCAS(address, compare, value) ::astrai::emu::atomic_cas((address), (compare), (value))
#define atomicExch(address, value) ::astrai::emu::atomic_exch((address), (value))
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
