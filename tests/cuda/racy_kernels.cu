// Kernels with planted races, for test_race_detector.cpp; see racy_kernels.h.
#include "tests/cuda/racy_kernels.h"

#include "cuda/kernels/async_copy.cuh"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/vector_pointer.cuh"

namespace astrai::test::racy {
namespace {

__global__ void shared_neighbour_kernel(float* out, bool barrier) {
  __shared__ float cell[64];
  cell[threadIdx.x] = float(threadIdx.x);
  if (barrier) __syncthreads();
  out[threadIdx.x] = cell[(threadIdx.x + 1) % 64];
}
constexpr int kSharedWrite = __LINE__ - 4, kSharedRead = __LINE__ - 2;

__global__ void global_neighbour_kernel(float* x, const float* input, int blocks, bool race) {
  if (threadIdx.x != 0) return;
  const int b = int(blockIdx.x);
  x[b] = float(b);
  const float next = race ? x[(b + 1) % blocks] : input[(b + 1) % blocks];
  x[blocks + b] = next;
}
constexpr int kGlobalWrite = __LINE__ - 4, kGlobalRead = __LINE__ - 3;

__global__ void global_ranges_kernel(uint8_t* bytes, const int* ranges, uint8_t* sink) {
  const int* r = ranges + 4 * blockIdx.x;  // this block's [read begin, read end, write begin, write end)
  const int t = int(threadIdx.x);
  uint8_t v = 0;
  if (r[0] + t < r[1]) v = bytes[r[0] + t];
  if (r[2] + t < r[3]) bytes[r[2] + t] = uint8_t(blockIdx.x);
  sink[blockIdx.x * blockDim.x + threadIdx.x] = v;  // each thread its own byte: keeps the read, races with nothing
}

__global__ void atomic_counter_kernel(int* counter) { atomicAdd(counter, 1); }

__global__ void warp_exchange_kernel(float* out, bool syncwarp) {
  __shared__ float lane_value[32];
  lane_value[threadIdx.x] = float(threadIdx.x) * 2.0f;
  if (syncwarp) __syncwarp();
  out[threadIdx.x] = lane_value[31 - threadIdx.x];
}
constexpr int kWarpWrite = __LINE__ - 4, kWarpRead = __LINE__ - 2;

__global__ void async_tile_kernel(const float* global, float* out, bool wait) {
  ASTRAI_DYNAMIC_SHARED(float, tile);
  cp_async_16(&tile[4 * threadIdx.x], &global[4 * threadIdx.x]);
  cp_async_commit();
  if (wait) cp_async_wait<0>();
  __syncthreads();
  out[threadIdx.x] = tile[(4 * threadIdx.x + 7) % 64];
}
constexpr int kAsyncIssue = __LINE__ - 6, kAsyncRead = __LINE__ - 2;

__global__ void vector_load_kernel(const float* x, float* out) {
  const float4 v = *ASTRAI_VECTOR_PTR(const float4, x + 4 * threadIdx.x);
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}
constexpr int kVectorLoad = __LINE__ - 3;

}  // namespace

const int shared_write_line = kSharedWrite, shared_read_line = kSharedRead;
const int global_write_line = kGlobalWrite, global_read_line = kGlobalRead;
const int warp_write_line = kWarpWrite, warp_read_line = kWarpRead;
const int async_issue_line = kAsyncIssue, async_read_line = kAsyncRead;
const int vector_load_line = kVectorLoad;

void shared_neighbour(float* out, bool barrier) {
  ASTRAI_LAUNCH(shared_neighbour_kernel, 1, 64, 0, nullptr)(out, barrier);
}
void global_neighbour(float* x, const float* input, int blocks, bool race) {
  ASTRAI_LAUNCH(global_neighbour_kernel, blocks, 32, 0, nullptr)(x, input, blocks, race);
}
void global_ranges(uint8_t* bytes, const int* ranges, int blocks, int threads, uint8_t* sink) {
  ASTRAI_LAUNCH(global_ranges_kernel, blocks, threads, 0, nullptr)(bytes, ranges, sink);
}
void atomic_counter(int* counter, int blocks) { ASTRAI_LAUNCH(atomic_counter_kernel, blocks, 64, 0, nullptr)(counter); }
void warp_exchange(float* out, bool syncwarp) { ASTRAI_LAUNCH(warp_exchange_kernel, 1, 32, 0, nullptr)(out, syncwarp); }
void vector_load(const float* x, float* out, int threads) {
  ASTRAI_LAUNCH(vector_load_kernel, 1, threads, 0, nullptr)(x, out);
}
void async_tile(const float* global, float* out, bool wait) {
  ASTRAI_LAUNCH(async_tile_kernel, 1, 16, 64 * sizeof(float), nullptr)(global, out, wait);
}

}  // namespace astrai::test::racy
