// The Mixture-of-Experts sum. Reference: moe_ffn() in reference/moe.cpp,
//   out[r] = sum_j weight[r, j] * expert_out[slot(r, j)]  (+ sigmoid(g[r]) * shared[r])
// with each product rounded, then added in choice order (j = 0 first), as
// the reference's `sum += weight * expert_ffn(...)` does: a row's result
// is a function of its own experts' outputs, never of the batch.
//
// Elementwise over (row, element), so the grid is (rows, blocks along the
// row); the k expert rows a row reads are scattered (slot order is by
// expert), each read whole by consecutive threads.
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/moe_sum.cuh"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

// The row's choices (slot and weight), loaded once by the block's first k
// threads into shared memory: then each thread's k loads of expert outputs
// are independent of one another (no load waits on the slot it needs).
// k <= kThreads (launch_moe_combine checks).
__global__ void __launch_bounds__(kThreads)
    moe_combine_kernel(const float* __restrict__ expert_out, const int* __restrict__ slot_of,
                       const float* __restrict__ weight, int k, int dim, const float* __restrict__ shared_out,
                       const float* __restrict__ shared_gate, float* __restrict__ out, bool accumulate) {
  __shared__ int slot[kThreads];
  __shared__ float w[kThreads];
  const int r = int(blockIdx.x), d = int(blockIdx.y) * kThreads + int(threadIdx.x);
  if (int(threadIdx.x) < k) {
    slot[threadIdx.x] = slot_of[r * k + int(threadIdx.x)];
    w[threadIdx.x] = weight[r * k + int(threadIdx.x)];
  }
  __syncthreads();
  if (d >= dim) return;  // after the barrier
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum = moe_add_choice(sum, w[j], expert_out[size_t(slot[j]) * size_t(dim) + size_t(d)]);
  if (shared_out) sum = moe_add_shared_expert(sum, shared_gate[r], shared_out[size_t(r) * size_t(dim) + size_t(d)]);
  float& at = out[size_t(r) * size_t(dim) + size_t(d)];
  at = accumulate ? __fadd_rn(at, sum) : sum;
}

}  // namespace

void launch_moe_combine(const float* expert_out, const int* slot_of, const float* weight, int rows, int k, int dim,
                        const float* shared_out, const float* shared_gate, float* out, cudaStream_t stream,
                        bool accumulate) {
  if (rows == 0 || dim == 0) return;
  if (k < 1 || k > kThreads)
    throw std::invalid_argument("launch_moe_combine: " + std::to_string(k) + " experts a row (1 to " +
                                std::to_string(kThreads) + ")");
  const dim3 grid(unsigned(rows), unsigned((dim + kThreads - 1) / kThreads));
  ASTRAI_LAUNCH(moe_combine_kernel, grid, kThreads, 0, stream)(expert_out, slot_of, weight, k, dim, shared_out,
                                                               shared_gate, out, accumulate);
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
