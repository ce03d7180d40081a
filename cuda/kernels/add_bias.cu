// A bias added to float rows, in place, the bias row chosen per row:
//   y[row(r), j] += bias[brow(r), j]    for r < rows, j < width
// with row(r) = y_rows ? y_rows[r] : r and brow(r) = bias_rows ? bias_rows[r] : 0.
// Reference: the `+ b` after the product of gpt-oss's biased projections,
// one float addition each: scores += router_bias in route() (reference/
// moe.cpp), and expert_linear()'s per-expert gate, up and down biases, where
// r is a choice, row(r) its slot (MoePlan::slot_of) and brow(r) its expert.
//
// Elementwise, so the grid is (rows, blocks along the row), one element a
// thread: it runs on a few rows of router scores or expert outputs per step,
// a small fraction of the expert matrices' bytes.
#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    add_bias_kernel(float* __restrict__ y, int ldy, const int* __restrict__ y_rows, int width,
                    const T* __restrict__ bias, const int* __restrict__ bias_rows) {
  const int r = int(blockIdx.x), j = int(blockIdx.y) * kThreads + int(threadIdx.x);
  if (j >= width) return;
  const size_t yr = size_t(y_rows ? y_rows[r] : r), br = size_t(bias_rows ? bias_rows[r] : 0);
  float* p = y + yr * size_t(ldy) + size_t(j);
  *p = __fadd_rn(*p, to_float(bias[br * size_t(width) + size_t(j)]));
}

}  // namespace

void launch_add_bias(float* y, int ldy, const int* y_rows, int rows, int width, const void* bias,
                     const int* bias_rows, DType dtype, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  const dim3 grid(unsigned(rows), unsigned((width + kThreads - 1) / kThreads));
  ASTRAI_DISPATCH_DTYPE(dtype, ASTRAI_LAUNCH(add_bias_kernel<Elem>, grid, kThreads, 0, stream)(
                                   y, ldy, y_rows, width, static_cast<const Elem*>(bias), bias_rows));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
