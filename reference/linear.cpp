#include "reference/linear.h"

#include <cblas.h>

#include <stdexcept>
#include <string>

namespace astrai {
namespace {

// OpenBLAS splits a large sgemv across threads, and the split changes how the
// last bits round, so results would depend on the machine's core count; on a
// busy machine the threads also wait on each other (a 288x288 product took
// 100 us instead of 4 us, docs/benchmarks.md). The reference therefore asks
// for one BLAS thread, once, before its first product.
void use_one_blas_thread() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

// y = x W^T for W: [out, in] row-major at `W`.
xt::xtensor<float, 2> linear_rows(const xt::xtensor<float, 2>& x, const float* W, size_t out, size_t in_w) {
  const size_t rows = x.shape(0), in = x.shape(1);
  if (in_w != in)
    throw std::invalid_argument("linear: input width " + std::to_string(in) + " does not match weight width " +
                                std::to_string(in_w));
  use_one_blas_thread();
  xt::xtensor<float, 2> y({rows, out});
  for (size_t r = 0; r < rows; ++r) {
    // y[r] = W x[r]   (W row-major [out, in])
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(out), int(in), 1.0f, W, int(in), x.data() + r * in, 1, 0.0f,
                y.data() + r * out, 1);
  }
  return y;
}

}  // namespace

xt::xtensor<float, 2> linear(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& W) {
  return linear_rows(x, W.data(), W.shape(0), W.shape(1));
}

xt::xtensor<float, 2> linear_slice(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 3>& W, size_t e) {
  if (e >= W.shape(0))
    throw std::invalid_argument("linear_slice: matrix " + std::to_string(e) + " of a stack of " + std::to_string(W.shape(0)));
  const size_t out = W.shape(1), in = W.shape(2);
  return linear_rows(x, W.data() + e * out * in, out, in);
}

}  // namespace astrai
