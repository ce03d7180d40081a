// Gemma's final logit soft cap, in place. Reference: logits_of_wanted_rows()
// in reference/forward.cpp, logit = cap * tanh(logit / cap) in float.
//
// Elementwise over the wanted rows' logits (a decode step: one row of
// Gemma 3's 262,144 logits, 1 MiB): a grid-stride loop of coalesced float
// loads and stores, one pass over what the classifier just wrote.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) logit_softcap_kernel(float* __restrict__ logits, size_t n, float cap) {
  const size_t stride = size_t(gridDim.x) * kThreads;
  for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    logits[i] = __fmul_rn(cap, tanhf(__fdiv_rn(logits[i], cap)));
}

}  // namespace

void launch_logit_softcap(float* logits, size_t n, float cap, cudaStream_t stream) {
  if (n == 0) return;
  const size_t blocks = (n + kThreads - 1) / kThreads;
  ASTRAI_LAUNCH(logit_softcap_kernel, unsigned(blocks < 4096 ? blocks : 4096), kThreads, 0, stream)(logits, n, cap);
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
